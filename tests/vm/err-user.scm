(define (check-positive n) (if (< n 0) (error "negative value:" n 'in-check) n))
(display (check-positive 5)) (newline)
(check-positive -3)
