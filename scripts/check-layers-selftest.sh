#!/usr/bin/env bash
# Shows that scripts/check-layers.sh catches what it is for: on a scratch
# copy of the tree it must pass, then fail, naming the file, the line and
# the arrow, on each of these added one at a time: a forbidden #include, a
# forbidden library in a meson.build, a forbidden meson path, a directory
# that belongs to no unit, and (given a C compiler) a forbidden call in a
# build directory's objects.
#
# usage: scripts/check-layers-selftest.sh [ROOT]
set -euo pipefail
root=${1:-"$(cd "$(dirname "$0")/.." && pwd)"}
work=$(mktemp -d "${TMPDIR:-/tmp}/rheap-layers.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
failed=0
build_args=()

# The sources, the meson.build files and the checker, as the checker sees
# them (no hidden or build directories), copied once; fresh() restores it.
mkdir "$work/base"
(cd "$root" && find . -path './.*' -prune -o -type d -exec test -e '{}/build.ninja' \; -prune \
	-o \( -name '*.[ch]' -o -name meson.build -o -path ./scripts/layers.txt \
	-o -path ./scripts/check-layers.sh \) -print0 |
	xargs -0 cp --parents -t "$work/base")
fresh() {
	rm -rf "$work/tree"
	cp -R "$work/base" "$work/tree"
}

# expect NAME PATTERN: the checker fails and prints PATTERN.
expect() {
	if out=$("$work/tree/scripts/check-layers.sh" "${build_args[@]}" "$work/tree" 2>&1); then
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
if out=$("$work/tree/scripts/check-layers.sh" "$work/tree" 2>&1); then
	echo "ok: the copy passes: $out"
else
	echo "not ok: the unchanged copy fails:"
	echo "$out"
	exit 1
fi

# The tracer must not see the runtime.
sed -i '1i #include "runtime/internal.h"' "$work/tree/memserver/host.c"
expect "include" 'memserver/host.c:1: memserver -> runtime is not declared'

fresh
# Nor link it.
echo 'x = [rheap_internal_dep]' >>"$work/tree/memserver/meson.build"
n=$(wc -l <"$work/tree/memserver/meson.build")
expect "meson library" "memserver/meson.build:$n: memserver -> runtime is not declared.*rheap_internal_dep"

fresh
# gc/ is shared with the tracers: no sources of the runtime either.
echo "y = files('../runtime/heap.c')" >>"$work/tree/gc/meson.build"
n=$(wc -l <"$work/tree/gc/meson.build")
expect "meson path" "gc/meson.build:$n: gc -> runtime is not declared"

fresh
# A transport that knew about the collector.
sed -i '1i #include "../gc/object.h"' "$work/tree/transport/tcp/tcp.c"
expect "relative include" 'transport/tcp/tcp.c:1: transport -> gc is not declared'

fresh
mkdir "$work/tree/newlayer"
echo 'int x;' >"$work/tree/newlayer/a.c"
expect "undeclared directory" 'newlayer/a.c: belongs to no unit'

fresh
# A call with no include behind it: gc/ calling the transport through a
# declaration of its own, in a build directory of two objects.
if command -v cc >/dev/null; then
	mkdir -p "$work/build/gc/librh_gc.a.p" "$work/build/transport/librh_transport.a.p"
	echo 'void rh_tp_read(void); void f(void) { rh_tp_read(); }' >"$work/call.c"
	echo 'void rh_tp_read(void) {}' >"$work/def.c"
	cc -c "$work/call.c" -o "$work/build/gc/librh_gc.a.p/mark.c.o"
	cc -c "$work/def.c" -o "$work/build/transport/librh_transport.a.p/transport.c.o"
	build_args=(--build "$work/build")
	expect "call" 'gc/librh_gc.a.p/mark.c.o: gc -> transport is not declared.*calls rh_tp_read'
	build_args=()
else
	echo "skip: call: no cc"
fi

exit $failed
