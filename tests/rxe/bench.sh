#!/bin/bash
# Compare the verbs provider with perftest (the reference) in one rxe guest:
# ib_read_lat / ib_write_bw against rh-rxe-perf (the same measurements
# through the rheap transport API) on the same device, same guest, same
# run; --full adds the complete `rh-bench-transport verbs` table. Prints both and the ratio (verbs cost
# relative to perftest: 1.0 = as fast, target <= 1.2) and writes JSON.
#
# usage: tests/rxe/bench.sh --build DIR [--json FILE] [--full] [run.sh options]
# Timings under TCG emulation are only comparable within one run.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BUILD=
JSON=
FULL=
TMO=295
PASS=()
while [ $# -gt 0 ]; do
	case $1 in
	--build) BUILD=$2; shift 2 ;;
	--json) JSON=$2; shift 2 ;;
	--full) FULL=1; TMO=900; shift ;; # also the whole rh-bench-transport table (slow)
	*) PASS+=("$1"); shift ;;
	esac
done
[ -n "$BUILD" ] || { echo "usage: $0 --build DIR [--json FILE] [run.sh options]" >&2; exit 2; }
JSON=${JSON:-$BUILD/rxe-bench.json}
[ -x "$BUILD/tests/rxe/rh-rxe-perf" ] ||
	{ echo "bench.sh: build rh-rxe-perf in $BUILD first (ninja -C $BUILD rxe-bench)" >&2; exit 2; }

OUT=$(mktemp)
trap 'rm -f "$OUT"' EXIT
# Each metric: perftest, then the provider, then perftest again, so that
# noise on a shared host shows up as disagreement between the two
# perftest runs. 16 operations in flight for bandwidth (-t 16).
CMDS=()
for m in "read_lat 64 3000" "read_lat 4096 3000" "write_bw 4096 3000 16" \
	"write_bw 65536 600 16"; do
	set -- $m
	pt="perf-ref.sh ib_$1 $2 -n $3"
	[ "$1" = write_bw ] && pt="$pt -t $4"
	CMDS+=("$pt" "rh-rxe-perf \$RH_RXE_ADDR $m" "$pt")
done
[ -n "$FULL" ] && CMDS+=('rh-bench-transport verbs --host $RH_RXE_ADDR')
"$HERE/run.sh" --build "$BUILD" --bin "$HERE/perf-ref.sh" --timeout "$TMO" \
	--cmd-timeout 150 "${PASS[@]}" -- "${CMDS[@]}" | tee "$OUT"
rc=${PIPESTATUS[0]}
[ "$rc" = 0 ] || { echo "bench.sh: the guest run failed" >&2; exit "$rc"; }

# perftest: "@@REF ib_read_lat 64 AVG TYPICAL" / "@@REF ib_write_bw 4096 MBPS";
# provider: "@@RH read_lat 64 AVG MEDIAN" / "@@RH write_bw 4096 MBPS".
# Two perftest runs per metric: their mean. Medians resist a noisy host.
awk -v json="$JSON" '
/^@@REF / {
	k = substr($2, 4) " " $3; nref[k]++; ref[k] += $4; refs[k] = refs[k] " " $4
	if (NF >= 5) { k = k " med"; nref[k]++; ref[k] += $5; refs[k] = refs[k] " " $5 }
}
/^@@RH / { rh[$2 " " $3] = $4; if (NF >= 5) rh[$2 " " $3 " med"] = $5 }
END {
	printf "\n%-34s %24s %12s %7s\n", "metric", "perftest (each run)", "rheap verbs", "ratio"
	printf "{\n  \"note\": \"ratio = verbs cost / perftest cost (1.0 = equal; target <= 1.2)\",\n  \"results\": [" > json
	n = split("read_lat:64:med read_lat:64: read_lat:4096:med read_lat:4096: write_bw:4096: write_bw:65536:", m, " ")
	for (i = 1; i <= n; i++) {
		split(m[i], f, ":"); k = f[1] " " f[2] (f[3] ? " med" : "")
		r = nref[k] ? ref[k] / nref[k] : 0; v = rh[k]
		lat = f[1] == "read_lat"
		ratio = (r > 0 && v > 0) ? (lat ? v / r : r / v) : 0
		name = sprintf("%s %s B %s", lat ? "READ latency" : "WRITE bandwidth", f[2],
			       lat ? (f[3] ? "median (us)" : "mean (us)") : "(MB/s)")
		printf "%-34s %8.2f (%13s) %12.2f %7.2f\n", name, r, substr(refs[k], 2), v, ratio
		printf "%s\n    {\"metric\": \"%s\", \"perftest\": %.2f, \"verbs\": %.2f, \"ratio\": %.3f}", (i > 1 ? "," : ""), name, r, v, ratio > json
	}
	printf "\n  ]\n}\n" > json
}' "$OUT"
echo "(JSON: $JSON)"
