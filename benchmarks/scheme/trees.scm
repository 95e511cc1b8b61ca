; Binary trees (GC-heavy): a long-lived tree, then many short-lived trees of
; growing depth, each checked. Prints the checksums.
(define (make d) (if (= d 0) (cons '() '()) (cons (make (- d 1)) (make (- d 1)))))
(define (check t) (if (null? (car t)) 1 (+ 1 (check (car t)) (check (cdr t)))))
(define max-depth 16)
(define long-lived (make max-depth))
(define (iterations d) (let loop ((i 0) (n 1)) (if (= i (- (+ max-depth 4) d)) n (loop (+ i 1) (* n 2)))))
(do ((d 4 (+ d 2))) ((> d max-depth))
  (let ((n (quotient (iterations d) 16)))
    (let loop ((i 0) (sum 0))
      (if (< i n) (loop (+ i 1) (+ sum (check (make d))))
          (begin (display n) (display " trees of depth ") (display d)
                 (display " check ") (display sum) (newline))))))
(display "long lived tree check ") (display (check long-lived)) (newline)
