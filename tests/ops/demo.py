#!/usr/bin/env python3
"""README.md's first command ends with scripts/demo.sh (issue 25, item 11):
run it on this build and check that its summary has every line and that
the numbers make sense: both runs paused, the disaggregated one faulted
pages in and its tracers held memory, p99 <= max, and the two results are
the same.

usage: demo.py DEMO_SH BUILD_ROOT
"""
import re
import subprocess
import sys

demo, build = sys.argv[1], sys.argv[2]
passed = failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAILED: " + what)


def nums(text):
    return [float(x) for x in re.findall(r"\d+(?:\.\d+)?", text)]


p = subprocess.run([demo, "--build-dir", build], capture_output=True, text=True, timeout=110)
print(p.stdout, end="")
if p.returncode != 0:
    print(p.stderr, end="")
check(p.returncode == 0, "demo.sh exited with %d" % p.returncode)

rows = {}
for line in p.stdout.splitlines():
    m = re.match(r"  (\S.{21}) (.{22}) (.*)$", line)
    if m:
        rows[m.group(1).strip()] = (m.group(2).strip(), m.group(3).strip())
for name in ("time", "GC pauses", "pause p99 / max", "page faults", "held by the tracers",
             "result"):
    check(name in rows, "no '%s' line in the summary" % name)

if all(k in rows for k in ("time", "GC pauses", "pause p99 / max", "page faults",
                           "held by the tracers", "result")):
    loc, rem = rows["time"]
    t_l, t_r = nums(loc)[0], nums(rem)[0]
    check(0 < t_l < 60 and 0 < t_r < 60, "times %s s and %s s" % (t_l, t_r))
    loc, rem = rows["GC pauses"]
    n_l, (n_r, n_cssc) = nums(loc)[0], nums(rem)[:2]
    check(n_l >= 1 and n_r >= 1, "pauses: %d local, %d disaggregated" % (n_l, n_r))
    check(n_cssc <= n_r, "%d CSSCs of %d pauses" % (n_cssc, n_r))
    for side in rows["pause p99 / max"]:
        p99, mx = nums(side)[:2]
        check(0 < p99 <= mx < 30000, "pause p99 %s ms, max %s ms" % (p99, mx))
    check(rows["page faults"][0] == "-", "a local heap has no page faults")
    faults, ahead, fetched = nums(rows["page faults"][1])[:3]
    check(faults > 0 and fetched > 0, "faults %d, %s MiB fetched: a 25 %% cache of a heap "
          "a third live must fetch pages" % (faults, fetched))
    held, evicted, traced = nums(rows["held by the tracers"][1])[:3]
    check(0 < held <= 48 and evicted > 0 and traced > 0,
          "tracers held %s MiB of a 48 MiB heap, %s MiB evicted, %s MiB traced"
          % (held, evicted, traced))
    check(rows["result"][1].endswith("the same"), "results differ: %s" % (rows["result"],))
check("rheapctl run --config cluster.json -- rh-suite-pagerank" in p.stdout,
      "the summary does not show the rheapctl command")

print("demo: %d passed, %d failed" % (passed, failed))
sys.exit(1 if failed or not passed else 0)
