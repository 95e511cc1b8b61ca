(define (down n) (if (= n 0) 0 (+ 1 (down (- n 1)))))
(display (down 100)) (newline)
(down 100000)
