#!/usr/bin/env bash
# rheap working, in one command: a real program (the benchmark suite's
# PageRank over an object graph) run twice on the same heap size, once all
# local and once on a disaggregated heap (`rheapctl run`: two tracers on
# this host over shared memory, a quarter of the heap cached on the CPU
# server), then a short summary of what the collector and the pager did.
# README.md's first command runs it after scripts/setup.sh.
#
# usage: scripts/demo.sh [--build-dir DIR] [--size VERTICES] [--heap-mib N]
#                        [--cache FRACTION] [--keep DIR]
# Exit status 0 when both runs finished with the same checksum; 1 otherwise
# (the runs' logs are printed); 2 for bad usage or a build without the
# benchmarks. Test: tests/ops/demo.py (suite ops).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build size=40000 heap=48 cache=0.25 keep=""
usage() {
	sed -n '9,10p' "$0" | sed 's/^# //'
	exit "$1"
}
while [ $# -gt 0 ]; do
	case $1 in
	--build-dir) build=$2 ;;
	--size) size=$2 ;;
	--heap-mib) heap=$2 ;;
	--cache) cache=$2 ;;
	--keep) keep=$2 ;;
	-h | --help) usage 0 ;;
	*) usage 2 ;;
	esac
	[ $# -ge 2 ] || usage 2
	shift 2
done
ctl=$build/tools/rheapctl
prog=$build/benchmarks/suite/rh-suite-pagerank
for f in "$ctl" "$prog"; do
	if [ ! -x "$f" ]; then
		echo "demo: $f is not built (scripts/setup.sh builds it; the benchmarks need -Dbenchmarks=true)" >&2
		exit 2
	fi
done

# Everything in one private directory: rheapctl refuses a state dir others
# could enter (docs/security.md), and the secret must be 0600.
if [ -n "$keep" ]; then
	mkdir -p "$keep" && chmod 700 "$keep" && dir=$(cd "$keep" && pwd)
else
	dir=$(mktemp -d /tmp/rheap-demo-XXXXXX)
	trap 'rm -rf "$dir"' EXIT
	trap 'exit 130' INT TERM HUP PIPE
fi
(umask 077 && head -c 32 /dev/urandom | base64 >"$dir/secret")
printf '{"heap": {"size": "%sMiB"}}\n' "$heap" >"$dir/local.json"
# Two tracers on this host over shared memory; their ports only name the
# shm sockets, so two demos at once pick different ones.
p0=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$dir/cluster.json" <<EOF
{"heap": {"size": "${heap}MiB"}, "cache": {"fraction": $cache},
 "transport": {"provider": "shm", "timeout_ms": 5000}, "secret_file": "$dir/secret",
 "servers": [{"host": "127.0.0.1", "port": $p0}, {"host": "127.0.0.1", "port": $((p0 + 1))}]}
EOF

now() { date +%s%N; }
echo "rheap demo: PageRank over $size vertices on a $heap MiB heap, twice (the commands are in the summary)"
if ! "$prog" --size "$size" --config "$dir/local.json" --json "$dir/local.out" \
	>"$dir/local.log" 2>&1; then
	cat "$dir/local.log" >&2
	echo "demo: the local run failed (its log is above)" >&2
	exit 1
fi
t1=$(now)  # the disaggregated run's wall time includes the tracers' start and stop
if ! "$ctl" run --config "$dir/cluster.json" --state-dir "$dir" -- \
	"$prog" --size "$size" --json "$dir/remote.out" --status-dir "$dir" \
	>"$dir/remote.log" 2>&1; then
	cat "$dir/remote.log" >&2
	echo "demo: the disaggregated run failed (its log is above)" >&2
	exit 1
fi
t2=$(now)

python3 - "$dir" "$((t2 - t1))" "$cache" "$size" <<'PY'
import json, sys

d, wall_r, cache, size = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
l = json.load(open(d + "/local.out"))
r = json.load(open(d + "/remote.out"))
MiB = 1 << 20


def row(name, a, b):
    print("  %-22s %-22s %s" % (name, a, b))


print("  %-22s %-22s %s" % ("", "all local", "disaggregated: 2 tracers, %d %% of the heap cached" % round(cache * 100)))
row("time", "%.2f s" % (l["e2e_ns"] / 1e9),
    "%.2f s: %.1fx local (%.1f s with the tracers' start)" % (r["e2e_ns"] / 1e9, r["e2e_ns"] / max(l["e2e_ns"], 1), wall_r / 1e9))
lp, rp = l["pauses"], r["pauses"]
row("GC pauses", "%d" % lp["count"], "%d, %d of them with the tracers evacuating (CSSC)" % (rp["count"], r["csscs"]))
row("pause p99 / max", "%.1f / %.1f ms" % (lp["p99_ns"] / 1e6, lp["max_ns"] / 1e6), "%.1f / %.1f ms" % (rp["p99_ns"] / 1e6, rp["max_ns"] / 1e6))
row("page faults", "-", "%d (and %d pages read ahead), %.1f MiB fetched" % (r["faults"], r["readahead_pages"], r["bytes_fetched"] / MiB))
t = r["tracers"]
row("held by the tracers", "-", "%.1f MiB at most; %.1f MiB evicted to them, %.1f MiB traced there" % (t["max_bytes_held"] / MiB, r["bytes_evicted"] / MiB, t["bytes_traced"] / MiB))
same = l["checksum"] == r["checksum"] and l["ok"] and r["ok"]
row("result", "vertex %d ranks first" % l["checksum"], "vertex %d: %s" % (r["checksum"], "the same" if same else "DIFFERENT"))
print("  local:         rh-suite-pagerank --size %s --config local.json" % size)
print("  disaggregated: rheapctl run --config cluster.json -- rh-suite-pagerank --size %s" % size)
sys.exit(0 if same else 1)
PY
