; The issue's acceptance loop: ten million iterations of a named-let tail
; call, in a 4 MiB heap and with at most 50 nested evaluations
; (bigloop.args), so it passes only in constant C stack and constant heap.
(let loop ((i 0)) (if (< i 10000000) (loop (+ i 1))))
(display (let loop ((i 0)) (if (< i 10000000) (loop (+ i 1)) i)))
(newline)
