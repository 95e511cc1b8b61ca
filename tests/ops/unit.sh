#!/bin/sh
# The systemd unit rheap-tracerd@.service (tools/, installed under the
# prefix) passes `systemd-analyze verify` with no message: known keys,
# valid values, an ExecStart that names the installed rheap-tracerd.
# Verify wants that binary to exist, so a copy of the unit names the build
# tree's instead; that the unit names BINDIR/rheap-tracerd is checked first.
#
# usage: unit.sh UNIT BINDIR TRACERD
# Skips (77) without systemd-analyze (Debian's systemd package).
set -u
unit=$1 bindir=$2 tracerd=$3
command -v systemd-analyze >/dev/null 2>&1 || { echo "unit: no systemd-analyze"; exit 77; }
tmp=$(mktemp -d /tmp/rheap-unit-XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM HUP PIPE

grep -q "^ExecStart=$bindir/rheap-tracerd " "$unit" || {
	echo "FAILED: $unit: ExecStart does not run $bindir/rheap-tracerd"
	exit 1
}
sed "s#^ExecStart=$bindir/rheap-tracerd #ExecStart=$tracerd #" "$unit" >"$tmp/rheap-tracerd@.service"
# A template is verified as its instance 'i'. --man=no: the page it names
# (Documentation=) is installed with the unit, not here.
if systemd-analyze verify --man=no "$tmp/rheap-tracerd@.service" >"$tmp/out" 2>&1 && [ ! -s "$tmp/out" ]; then
	echo "unit: rheap-tracerd@.service verified; 1 passed, 0 failed"
	exit 0
fi
cat "$tmp/out"
echo "unit: systemd-analyze verify $(basename "$unit"): 0 passed, 1 failed"
exit 1
