; Allocates far more than the 8 MiB heap (about 400 MiB in total) while a
; live structure of a few MiB is kept and mutated; its contents are checked
; at the end, so a lost root or a missed barrier shows up as a wrong sum.
(define (make-tree d) (if (= d 0) (list 'leaf d) (cons (make-tree (- d 1)) (make-tree (- d 1)))))
(define (tree-size t) (if (eq? (car t) 'leaf) 1 (+ (tree-size (car t)) (tree-size (cdr t)))))
(define live (make-vector 64 #f))
(do ((i 0 (+ i 1))) ((= i 64)) (vector-set! live i (make-tree 8)))
(define old-list (let loop ((i 0) (acc '())) (if (= i 5000) acc (loop (+ i 1) (cons i acc)))))
(define (churn rounds)
  (do ((r 0 (+ r 1))) ((= r rounds))
    (make-tree 10)
    ; old objects get young referents: the write barrier records them
    (vector-set! live (modulo r 64) (make-tree 8))
    (set-car! old-list (list r (number->string r)))))
(churn 600)
(define total (let loop ((i 0) (s 0)) (if (= i 64) s (loop (+ i 1) (+ s (tree-size (vector-ref live i)))))))
(display total) (newline)
(display (car old-list)) (newline)
(display (length old-list)) (newline)
(display (apply + (cdr old-list))) (newline)
