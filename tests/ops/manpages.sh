#!/bin/sh
# The man pages (issue 25, item 10) render without a warning, and each
# names every option and command its program's --help lists, so that a
# flag added to a program without its page fails here.
#
# usage: manpages.sh PAGE PROGRAM [PAGE PROGRAM]...
# Skips (77) without groff (Debian's groff-base, which man-db needs too).
set -u
command -v groff >/dev/null 2>&1 || { echo "manpages: no groff (apt-get install groff-base)"; exit 77; }
tmp=$(mktemp -d /tmp/rheap-man-XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM HUP PIPE

passed=0 failed=0
ok() { passed=$((passed + 1)); echo "ok: $*"; }
bad() { failed=$((failed + 1)); echo "FAILED: $*"; }

while [ $# -ge 2 ]; do
	page=$1 prog=$2
	shift 2
	name=$(basename "$page")
	# -ww: every warning; -z: format, print nothing. Any word on stderr is
	# a warning (a bad macro, a line that cannot be broken, ...).
	if groff -ww -z -man -Tutf8 "$page" >"$tmp/warn" 2>&1 && [ ! -s "$tmp/warn" ]; then
		ok "$name renders without warnings"
	else
		bad "$name: groff -ww: $(cat "$tmp/warn")"
	fi
	# The page's text as a reader sees it: hyphens plain, no font changes.
	sed 's/\\-/-/g; s/\\f[BIRP]//g' "$page" >"$tmp/text"
	if ! "$prog" --help >"$tmp/help" 2>&1; then
		bad "$prog --help failed: $(cat "$tmp/help")"
		continue
	fi
	# Options: --long and -x words of the usage text. Commands: the words
	# indented two spaces under a 'commands:' heading.
	opts=$(grep -oE '(^|[][ ,|(])(--[a-z][a-z0-9-]*|-[A-Za-z0-9])([]= ,|)]|$)' "$tmp/help" |
		grep -oE -- '--?[A-Za-z0-9][a-z0-9-]*' | sort -u)
	cmds=$(awk '/^commands:/ { c = 1; next } /^[^ ]/ { c = 0 }
		c && /^  [a-z]+ / { print $1 }' "$tmp/help")
	n=0
	for o in $opts $cmds; do
		n=$((n + 1))
		if grep -qE -- "(^|[^A-Za-z0-9-])$o([^A-Za-z0-9-]|\$)" "$tmp/text"; then
			:
		else
			bad "$name does not mention '$o', which '$(basename "$prog") --help' lists"
		fi
	done
	# A help text this script can no longer read must not pass as "nothing
	# to check": every program has at least --help-like options.
	if [ "$n" -ge 3 ]; then
		ok "$name names the $n options and commands of $(basename "$prog") --help: $(echo $opts $cmds)"
	else
		bad "read only $n options from $(basename "$prog") --help"
	fi
done

echo "manpages: $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
