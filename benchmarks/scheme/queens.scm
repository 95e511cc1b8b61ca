; N-queens with lists: all solutions by building candidate lists (many
; short-lived pairs and closures).
(define (range a b) (if (>= a b) '() (cons a (range (+ a 1) b))))
(define (safe? q placed)
  (let loop ((rest placed) (dist 1))
    (cond ((null? rest) #t)
          ((let ((p (car rest))) (or (= p q) (= (abs (- p q)) dist))) #f)
          (else (loop (cdr rest) (+ dist 1))))))
(define (queens n)
  (let place ((k 0) (sols (list '())))
    (if (= k n) sols
        (place (+ k 1)
               (apply append
                      (map (lambda (placed)
                             (let loop ((cands (range 0 n)) (acc '()))
                               (cond ((null? cands) acc)
                                     ((safe? (car cands) placed) (loop (cdr cands) (cons (cons (car cands) placed) acc)))
                                     (else (loop (cdr cands) acc)))))
                           sols))))))
(do ((n 4 (+ n 1))) ((> n 10))
  (display n) (display " queens: ") (display (length (queens n))) (display " solutions") (newline))
