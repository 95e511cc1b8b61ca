(display "ok") (newline)
(display "unterminated
