#!/bin/sh
# Which source directories a built binary was linked from, read from its
# debug information (one compile unit per object file). Fails, naming the
# file, when any unit comes from one of the forbidden directories.
#
# usage: links.sh SOURCE_ROOT BINARY DIR...
#
# It checks the binary itself, not the meson.build files
# (scripts/check-layers.sh does those): a library that pulls in another's
# objects some other way still shows here. Skips (77) without readelf or
# without debug information (a release build).
set -eu
root=$1 bin=$2
shift 2
command -v readelf >/dev/null 2>&1 || { echo "links: no readelf"; exit 77; }
[ -f "$bin" ] || { echo "links: $bin: no such file"; exit 1; }

units=$(readelf --debug-dump=info "$bin" 2>/dev/null | awk '
	/DW_TAG_compile_unit/ { name = ""; incu = 1; next }
	incu && /DW_AT_name/ { name = $NF }
	incu && /DW_AT_comp_dir/ { print $NF "/" name; incu = 0 }
	/DW_TAG_/ && !/DW_TAG_compile_unit/ { incu = 0 }' |
	while IFS= read -r f; do realpath -m --relative-to="$root" "$f"; done | sort -u)
[ -n "$units" ] || { echo "links: $bin has no debug information"; exit 77; }

bad=0
for d in "$@"; do
	for u in $units; do
		case $u in
		"$d"/*) echo "links: $bin contains $u, from $d/"; bad=1 ;;
		esac
	done
done
[ $bad -eq 0 ] && echo "links: $(echo "$units" | wc -l) units, none from: $*"
exit $bad
