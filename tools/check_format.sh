#!/usr/bin/env bash
# Fails when lines changed since a base commit do not follow .clang-format (only the changed
# lines are checked: older code is reformatted when it is next touched).
#   tools/check_format.sh [BASE]   BASE defaults to the commit in .ci/format-base
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:-$(cat .ci/format-base)}
if ! git cat-file -e "$base^{commit}" 2>/dev/null; then
  echo "check_format: base commit $base is not in this clone (a shallow clone?): nothing to compare" >&2
  exit 1
fi
command -v git-clang-format >/dev/null || { echo "check_format: git-clang-format not found (Debian: clang-format)" >&2; exit 1; }
out=$(git clang-format --diff --extensions c,cc,cpp,h,hpp,cu,cuh "$base" -- core ops memory models io examples tools tests || true)
if printf '%s\n' "$out" | grep -q '^@@'; then
  printf '%s\n' "$out"
  echo "check_format: the lines above, changed since ${base:0:10}, do not follow .clang-format;" \
       "run: git clang-format $base" >&2
  exit 1
fi
echo "check_format: changed lines since ${base:0:10} follow .clang-format"
