; Large vectors (some bigger than half a region: humongous), filled and read back.
; Its live set is about 5 MiB: a 16 MiB heap (vectors.args) leaves room for
; the regions that conservative scanning pins.
(define n 300000)
(define v (make-vector n 0))
(do ((i 0 (+ i 1))) ((= i n)) (vector-set! v i (* i 3)))
(define (vsum v) (let loop ((i 0) (s 0)) (if (= i (vector-length v)) s (loop (+ i 1) (+ s (vector-ref v i))))))
(display (vsum v)) (newline)
; a vector of fresh objects, rebuilt while garbage is made: the vector's
; slots must follow the objects the collector moves
(define w (make-vector 20000 #f))
(do ((round 0 (+ round 1))) ((= round 5))
  (do ((i 0 (+ i 1))) ((= i 20000))
    (vector-set! w i (list i (number->string i) (* 1.5 i)))))
(define (check i) (let ((e (vector-ref w i))) (and (= (car e) i) (string=? (cadr e) (number->string i)) (= (caddr e) (* 1.5 i)))))
(display (let loop ((i 0)) (cond ((= i 20000) 'all-ok) ((check i) (loop (+ i 1))) (else (list 'bad i))))) (newline)
(define small (vector 1 "two" 'three 4.0 #\5 (vector 6)))
(write small) (newline)
(write (vector->list (vector 1 2 3))) (write (list->vector '(a b))) (newline)
(display (vector-length (make-vector 0))) (newline)
(define vv (make-vector 3 'x)) (vector-fill! vv 'y) (write vv) (newline)
(display (equal? (vector 1 (list 2 3)) (vector 1 (list 2 3)))) (newline)
