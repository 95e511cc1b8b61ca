(display "before") (newline)
(define (f x) (+ x undefined-variable))
(f 1)
(display "never printed") (newline)
