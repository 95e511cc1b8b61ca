; Deep non-tail recursion on the C stack (within the default depth limit).
(define (build n) (if (= n 0) '() (cons n (build (- n 1)))))
(define l (build 20000))
(define (len l) (if (null? l) 0 (+ 1 (len (cdr l)))))
(display (len l)) (newline)
(display (length (map (lambda (x) (* x x)) l))) (newline)
(display (apply + l)) (newline)
(display (length (append l l))) (newline)
