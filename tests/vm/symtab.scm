; The symbol table lives in the heap: interning must survive collections
; and table growth (thousands of symbols), and give eq? symbols back.
(define (sym i) (string->symbol (string-append "s" (number->string i))))
(define syms (let loop ((i 0) (acc '())) (if (= i 20000) acc (loop (+ i 1) (cons (sym i) acc)))))
(gc #t)
(define (all-eq? l i) (cond ((null? l) #t) ((eq? (car l) (sym i)) (all-eq? (cdr l) (- i 1))) (else (list 'mismatch i))))
(display (all-eq? syms 19999)) (newline)
(display (eq? 'hello (string->symbol "hello"))) (newline)
(display (eq? 'Hello 'hello)) (newline)
(display (symbol->string (car syms))) (newline)
; an association table keyed by symbols, in Scheme
(define table '())
(define (put! k v) (let ((e (assq k table))) (if e (set-cdr! e v) (set! table (cons (cons k v) table)))))
(define (get k) (let ((e (assq k table))) (if e (cdr e) 'missing)))
(do ((i 0 (+ i 1))) ((= i 500)) (put! (sym (modulo i 50)) i))
(display (list (length table) (get 's7) (get 's49) (get 'nope))) (newline)
(display (list (symbol? 'a) (symbol? "a") (symbol? (sym 3)))) (newline)
