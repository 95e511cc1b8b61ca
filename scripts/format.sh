#!/usr/bin/env bash
# Reformat every tracked C source in place.
set -euo pipefail
cd "$(dirname "$0")/.."
git ls-files '*.c' '*.h' | xargs -r clang-format -i --style=file
