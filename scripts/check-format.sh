#!/usr/bin/env bash
# Fail if any C source differs from .clang-format's output.
set -euo pipefail
cd "$(dirname "$0")/.."
bad=0
while IFS= read -r f; do
  if ! clang-format --style=file "$f" | cmp -s - "$f"; then
    echo "format: $f differs from clang-format (run scripts/format.sh)"; bad=1
  fi
done < <(git ls-files '*.c' '*.h')
exit $bad
