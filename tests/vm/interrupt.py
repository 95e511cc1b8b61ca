#!/usr/bin/env python3
"""Ctrl-C in rhscheme's REPL returns to the prompt and keeps the session.

  interrupt.py RHSCHEME

An endless loop is interrupted (SIGINT): the REPL reports "interrupted"
and a definition made before it still answers; a half-typed expression
is dropped the same way. Fails if the process dies, the loop is not
stopped within 10 s, or the state is lost.
"""
import os
import select
import signal
import subprocess
import sys
import time


def read_until(p, want, seconds):
    """stdout bytes up to and including `want`, or None after `seconds`."""
    got = b""
    end = time.monotonic() + seconds
    while want not in got:
        left = end - time.monotonic()
        if left <= 0 or not select.select([p.stdout], [], [], left)[0]:
            return None
        chunk = os.read(p.stdout.fileno(), 4096)
        if not chunk:
            return None
        got += chunk
    return got


def main():
    p = subprocess.Popen([sys.argv[1], "--heap-mib", "8"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0)
    problems = []
    try:
        # "ready" is flushed once its line is done, so the loop's line,
        # already in the pipe, is read and running by the signal.
        p.stdin.write(b"(define n 41)\n(define (spin) (spin))\n(display \"ready\")\n"
                      b"(spin)\n")
        if read_until(p, b"ready", 20) is None:
            problems.append("the REPL did not start")
        time.sleep(0.5)
        p.send_signal(signal.SIGINT)
        p.stdin.write(b"(+ n 1)\n")
        if read_until(p, b"42\n", 10) is None:
            problems.append("no 42 after the loop was interrupted")
        p.stdin.write(b"(display\n")
        time.sleep(0.5)
        p.send_signal(signal.SIGINT)
        time.sleep(0.5)
        p.stdin.write(b"(+ n 2)\n")
        if read_until(p, b"43\n", 10) is None:
            problems.append("no 43 after a half-typed line was interrupted")
        p.stdin.close()
        p.wait(timeout=10)
    except (subprocess.TimeoutExpired, BrokenPipeError) as e:
        problems.append("the REPL did not go on: %s" % e)
        p.kill()
        p.wait()
    err = p.stderr.read().decode(errors="replace")
    if p.returncode != 0:
        problems.append("exit status %d" % p.returncode)
    if "error: interrupted" not in err:
        problems.append("stderr lacks 'error: interrupted'")
    if problems:
        print("FAIL: " + "; ".join(problems))
        print("--- stderr\n" + err[-2000:])
        return 1
    print("ok: the loop and the half-typed line were interrupted, the session kept")
    return 0


if __name__ == "__main__":
    sys.exit(main())
