#!/usr/bin/env bash
# Shows that scripts/check-tags.sh catches what it is for: on a scratch copy
# of the docs, the sources and the checker it must pass, then fail, naming
# file and line, on each of these made one at a time: a tag defined twice, a
# code comment citing a tag no doc defines, a defined tag that nothing
# cites, an exemption without a reason, and an exemption for a cited tag.
#
# usage: scripts/check-tags-selftest.sh [ROOT]
set -euo pipefail
root=${1:-"$(cd "$(dirname "$0")/.." && pwd)"}
work=$(mktemp -d "${TMPDIR:-/tmp}/rheap-tags.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
failed=0

mkdir "$work/base"
(cd "$root" && find . -path './.*' -prune -o -type d -exec test -e '{}/build.ninja' \; -prune \
	-o \( -name '*.[ch]' -o -name '*.sh' -o -name '*.py' -o -name '*.txt' \
	-o -name meson.build -o -path './docs/*.md' \) -print0 |
	xargs -0 cp --parents -t "$work/base")
fresh() {
	rm -rf "$work/tree"
	cp -R "$work/base" "$work/tree"
}

# expect NAME PATTERN: the checker fails and prints PATTERN.
expect() {
	if out=$("$work/tree/scripts/check-tags.sh" "$work/tree" 2>&1); then
		echo "not ok: $1: the checker passed"
		failed=1
	elif ! grep -q -- "$2" <<<"$out"; then
		echo "not ok: $1: no line matching '$2' in:"
		echo "$out"
		failed=1
	else
		echo "ok: $1: $(grep -- "$2" <<<"$out" | head -1)"
	fi
}

fresh
if out=$("$work/tree/scripts/check-tags.sh" "$work/tree" 2>&1); then
	echo "ok: the copy passes: $out"
else
	echo "not ok: the unchanged copy fails:"
	echo "$out"
	exit 1
fi

fresh
printf '\n**swap.P1 (again).** A second rule under an old name.\n' >>"$work/tree/docs/zz.md"
expect "defined twice" "docs/zz.md:[0-9]*: swap.P1 defined again"

fresh
printf '/* Keeps heap.Z9. */\n' >>"$work/tree/runtime/heap.c"
expect "cites an undefined tag" "runtime/heap.c:[0-9]*: cites heap.Z9, which no doc defines"

fresh
printf '\n**heap.Z9 (new).** A rule nobody keeps.\n' >>"$work/tree/docs/runtime.md"
expect "defined, cited nowhere" "docs/runtime.md:[0-9]*: heap.Z9 is cited by no code"

fresh
printf '\n**heap.Z9 (new).** A rule nobody keeps.\n' >>"$work/tree/docs/runtime.md"
printf 'heap.Z9\n' >>"$work/tree/scripts/tags-exempt.txt"
expect "exempt without a reason" "tags-exempt.txt:[0-9]*: heap.Z9 needs a reason"

fresh
printf 'swap.P1 kept by the design\n' >>"$work/tree/scripts/tags-exempt.txt"
expect "exempt but cited" "tags-exempt.txt:[0-9]*: swap.P1 is cited, so not exempt"

exit $failed
