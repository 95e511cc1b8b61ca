#!/usr/bin/env bash
# Reformat every C source in place: tracked ones and new ones not yet
# added (not the ignored build directories), so a file formatted before
# its first `git add` is not missed by the CI's check.
set -euo pipefail
cd "$(dirname "$0")/.."
git ls-files --cached --others --exclude-standard '*.c' '*.h' | xargs -r clang-format -i --style=file
