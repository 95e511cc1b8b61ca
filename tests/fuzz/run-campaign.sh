#!/bin/sh
# One bounded libFuzzer run for meson's 'fuzz' suite (see README.md).
#
# usage: run-campaign.sh FUZZER SEEDS REGRESSIONS ARTIFACTS SECONDS [LIBFUZZER ARGS...]
#
# First every file under REGRESSIONS runs once (inputs that crashed before
# must stay fixed), then the fuzzer runs for SECONDS on a scratch copy of
# SEEDS: libFuzzer adds the inputs it finds to its corpus directory, and the
# source tree must stay as committed. Crash inputs go to ARTIFACTS.
set -eu
fuzzer=$1 seeds=$2 regress=$3 artifacts=$4 secs=$5
shift 5

work=$(mktemp -d "${TMPDIR:-/tmp}/rheap-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
mkdir -p "$artifacts" "$work/corpus"
cp -R "$seeds/." "$work/corpus/"

# UBSan only reports by default; a finding must fail the run.
export UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}halt_on_error=1:print_stacktrace=1"

report() {
	echo "FUZZ FAILURE: $1; new crash inputs are kept in $artifacts:" >&2
	for f in "$artifacts"/*; do
		[ -f "$f" ] && { echo "--- $f" >&2; od -A d -c "$f" | head -40 >&2; }
	done
	exit 1
}

if [ -d "$regress" ] && [ -n "$(find "$regress" -type f ! -name '.*' | head -1)" ]; then
	echo "== regressions in $regress"
	find "$regress" -type f ! -name '.*' -exec "$fuzzer" -artifact_prefix="$artifacts/" {} + ||
		report "a regression input fails again (the last \"Running:\" line above)"
fi

echo "== campaign: $secs s from $(ls "$work/corpus" | wc -l) seeds"
"$fuzzer" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
	-artifact_prefix="$artifacts/" "$@" "$work/corpus" || report "the campaign found a crash"
echo "== corpus grew from $(ls "$seeds" | wc -l) to $(ls "$work/corpus" | wc -l) inputs"
