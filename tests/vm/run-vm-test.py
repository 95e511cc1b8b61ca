#!/usr/bin/env python3
"""Run one rhscheme test program and compare it with its expected output.

  run-vm-test.py RHSCHEME TESTDIR NAME [--verify] [--rheapctl RHEAPCTL]

TESTDIR/NAME.scm is run (with an 8 MiB heap unless NAME.args says otherwise) as a script (or, if TESTDIR/NAME.stdin exists, fed
to the REPL on stdin). Its stdout must equal NAME.out; its exit status must
equal NAME.status (default 0); every line of NAME.err, if present, must
occur in its stderr, except lines starting with '!', whose rest must not.
NAME.args holds extra command-line flags.

With --rheapctl, the program runs on a disaggregated heap: a config with
two shm memory servers on 127.0.0.1 (free ports picked by the kernel), a 64 MiB heap and
a 25 % cache is written to a temporary directory with its secret, and the
program is started by `rheapctl run --config CFG -- ...`.
"""
import os
import socket
import subprocess
import sys
import tempfile

TIMEOUT_S = 120


def read(path, default=None):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except FileNotFoundError:
        return default


def free_port():
    # The kernel picks a port nobody uses now; PID-derived ports collide
    # across concurrent runs.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cluster_config(tmp):
    secret = os.path.join(tmp, "secret")
    fd = os.open(secret, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, os.urandom(24).hex().encode() + b"\n")
    os.close(fd)
    cfg = os.path.join(tmp, "heap.json")
    with open(cfg, "w", encoding="utf-8") as f:
        f.write('{"heap": {"size": "64MiB"}, "cache": {"fraction": 0.25},\n'
                ' "transport": {"provider": "shm", "timeout_ms": 5000},\n'
                ' "secret_file": "secret", "gc": {"verify": true},\n'
                ' "servers": [{"host": "127.0.0.1", "port": %d},'
                ' {"host": "127.0.0.1", "port": %d}]}\n' % (free_port(), free_port()))
    return cfg


def main():
    args = sys.argv[1:]
    verify = "--verify" in args
    rheapctl = None
    if "--rheapctl" in args:
        i = args.index("--rheapctl")
        rheapctl = args[i + 1]
        del args[i:i + 2]
    args = [a for a in args if a != "--verify"]
    if len(args) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    rhscheme, testdir, name = args
    stem = os.path.join(testdir, name)
    expected_out = read(stem + ".out")
    if expected_out is None:
        print(f"FAIL {name}: no {stem}.out", file=sys.stderr)
        return 1
    expected_status = int(read(stem + ".status", "0").strip())
    expected_err = [l for l in read(stem + ".err", "").splitlines() if l.strip()]
    stdin_text = read(stem + ".stdin")
    # A small heap by default, so that every program collects; NAME.args
    # comes later on the command line and may override it.
    cmd = [rhscheme, "--heap-mib", "8"] + read(stem + ".args", "").split()
    if verify:
        cmd.append("--verify")
    if stdin_text is None:
        cmd.append(stem + ".scm")

    with tempfile.TemporaryDirectory(prefix="rhscheme-test-") as tmp:
        if rheapctl:
            cmd = [rheapctl, "run", "--config", cluster_config(tmp),
                   "--state-dir", os.path.join(tmp, "state"), "--"] + cmd
        try:
            p = subprocess.run(cmd, input=stdin_text or "", capture_output=True,
                               text=True, timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            print(f"FAIL {name}: timed out after {TIMEOUT_S} s: {' '.join(cmd)}")
            return 1

    problems = []
    if p.stdout != expected_out:
        problems.append("stdout differs:\n--- expected\n%s--- got\n%s" % (expected_out, p.stdout))
    if p.returncode != expected_status:
        problems.append(f"exit status {p.returncode}, expected {expected_status}")
    for line in expected_err:
        text = line.strip()
        if text.startswith("!"):
            if text[1:].strip() in p.stderr:
                problems.append(f"stderr holds {text[1:].strip()!r}")
        elif text not in p.stderr:
            problems.append(f"stderr lacks {text!r}")
    if problems:
        print(f"FAIL {name}: {' '.join(cmd)}")
        for pr in problems:
            print("  " + pr)
        print("--- stderr\n" + p.stderr[-4000:])
        return 1
    print(f"ok {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
