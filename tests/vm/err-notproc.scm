(define x 5)
(x 1 2)
