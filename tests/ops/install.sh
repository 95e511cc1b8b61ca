#!/bin/sh
# An installed prefix runs without LD_LIBRARY_PATH (operations.I1; issue
# 25, item 4). Installs this build tree with
# `meson install --destdir` into a temporary directory and, with
# LD_LIBRARY_PATH unset, runs the installed rheapctl, rheap-tracerd and
# rhscheme (alone and under the installed `rheapctl run`), builds examples/minimal.c the way docs/embedding.md says (cc
# with `pkg-config --cflags --libs rheap`, PKG_CONFIG_PATH at the installed
# .pc) and runs it; each must load librheap from the installed libdir, not
# from the build tree or another install. Also checks that the man pages
# and the systemd unit were installed.
#
# usage: install.sh BUILD_ROOT SOURCE_ROOT PREFIX BINDIR LIBDIR MANDIR UNITDIR VERSION [CFLAGS]
#   BINDIR, LIBDIR, MANDIR, UNITDIR as meson's options say (relative to
#   PREFIX or absolute); CFLAGS: extra flags for the embedder (a sanitized
#   build's -fsanitize=..., so that its runtime loads first).
set -u
build=$1 src=$2 prefix=$3 bindir=$4 libdir=$5 mandir=$6 unitdir=$7 version=$8
cflags=${9:-}
unset LD_LIBRARY_PATH LD_PRELOAD

passed=0 failed=0
ok() { passed=$((passed + 1)); echo "ok: $*"; }
bad() { failed=$((failed + 1)); echo "FAILED: $*"; }
under() { case $1 in /*) echo "$1" ;; *) echo "$prefix/$1" ;; esac; }

tmp=$(mktemp -d /tmp/rheap-install-XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM HUP PIPE
dest=$tmp/dest
root=$dest$prefix
bin=$dest$(under "$bindir")
lib=$dest$(under "$libdir")
man=$dest$(under "$mandir")
unit=$dest$(under "$unitdir")

if ! meson install -C "$build" --no-rebuild --destdir "$dest" >"$tmp/install.log" 2>&1; then
	cat "$tmp/install.log"
	echo "FAILED: meson install --destdir"
	exit 1
fi

# Where an installed binary finds librheap: the installed libdir only.
loads_installed() {
	l=$(ldd "$1" 2>&1 | grep 'librheap\.so')
	f=$(echo "$l" | sed -n 's/.*=> \(.*librheap[^ ]*\) .*/\1/p')
	case $l in
	*"not found"*) bad "$2: librheap not found: $l" ;;
	*) if [ -n "$f" ] && [ "$(realpath "$f")" = "$(realpath "$lib/$(basename "$f")")" ]; then
		ok "$2 loads $lib/$(basename "$f")"
	else
		bad "$2 loads another librheap: $l"
	fi ;;
	esac
}

# The programs, each saying the project's version.
for p in rheapctl rheap-tracerd rhscheme; do
	if [ ! -x "$bin/$p" ]; then
		bad "$p is not installed in $bin"
		continue
	fi
	out=$("$bin/$p" --version 2>&1)
	case $out in
	*"$version"*) ok "$p --version: $out" ;;
	*) bad "$p --version said: $out" ;;
	esac
done
[ -x "$bin/rheapctl" ] && loads_installed "$bin/rheapctl" rheapctl
[ -x "$bin/rhscheme" ] && loads_installed "$bin/rhscheme" rhscheme

# rhscheme on a program of its own: a list built and summed on the heap.
printf '%s\n' "(define (iota n) (let loop ((i n) (l '()))" \
	"  (if (= i 0) l (loop (- i 1) (cons i l)))))" \
	"(display (apply + (iota 1000))) (newline)" >"$tmp/sum.scm"
if [ -x "$bin/rhscheme" ]; then
	out=$("$bin/rhscheme" "$tmp/sum.scm" 2>&1)
	[ "$out" = 500500 ] && ok "rhscheme sum.scm: $out" || bad "rhscheme sum.scm said: $out"
fi
# The same on a disaggregated heap, all from the install: rheapctl must
# find the rheap-tracerd beside it (no RHEAP_TRACERD, none on PATH).
if [ -x "$bin/rheapctl" ] && [ -x "$bin/rhscheme" ]; then
	out=$(env -u RHEAP_TRACERD PATH=/usr/bin:/bin "$bin/rheapctl" run --state-dir "$tmp/state" \
		-- "$bin/rhscheme" "$tmp/sum.scm" 2>"$tmp/run.err")
	if [ "$out" = 500500 ]; then
		ok "rheapctl run -- rhscheme sum.scm on the installed tracers: $out"
	else
		bad "rheapctl run -- rhscheme sum.scm said: $out $(cat "$tmp/run.err")"
	fi
fi

# An embedder built as docs/embedding.md says, against the installed .pc.
pc=$lib/pkgconfig
if [ ! -f "$pc/rheap.pc" ]; then
	bad "no rheap.pc in $pc"
else
	flags=$(PKG_CONFIG_PATH=$pc pkg-config --cflags --libs rheap 2>&1)
	case $flags in
	*"$dest"*) ok "pkg-config --cflags --libs rheap: $flags" ;;
	*) bad "pkg-config names no path in the installed prefix: $flags" ;;
	esac
	# shellcheck disable=SC2086 # the flags are words
	if cc $cflags -o "$tmp/minimal" "$src/examples/minimal.c" $flags >"$tmp/cc.log" 2>&1; then
		loads_installed "$tmp/minimal" "examples/minimal.c built with pkg-config"
		if out=$("$tmp/minimal" 2>&1); then
			ok "the embedder ran: $(echo "$out" | tail -n 1)"
		else
			bad "the embedder failed: $out"
		fi
	else
		cat "$tmp/cc.log"
		bad "cc examples/minimal.c \$(pkg-config --cflags --libs rheap) failed"
	fi
fi

# The man pages and the systemd unit.
for m in man1/rheapctl.1 man8/rheap-tracerd.8 man1/rhscheme.1; do
	[ -f "$man/$m" ] && ok "$m installed" || bad "$man/$m is not installed"
done
if [ -f "$unit/rheap-tracerd@.service" ]; then
	if grep -q "^ExecStart=$(under "$bindir")/rheap-tracerd " "$unit/rheap-tracerd@.service"; then
		ok "rheap-tracerd@.service installed, ExecStart in $(under "$bindir")"
	else
		bad "rheap-tracerd@.service: ExecStart does not name $(under "$bindir")/rheap-tracerd"
	fi
else
	bad "$unit/rheap-tracerd@.service is not installed"
fi

echo "install: $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
