(define l (list 1 2))
(car (cdr (cdr l)))
