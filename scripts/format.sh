#!/usr/bin/env bash
# make format: clang-format (the tree's .clang-format, Google-based) over every C++ file git
# tracks. With --check it changes nothing and fails listing the files that differ; make test
# runs that check (CTest `format_check`).
#
#   scripts/format.sh [--check]
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.h' '*.cc')
if [ "${1:-}" != "--check" ]; then
  clang-format -i "${files[@]}"
  exit 0
fi
# One clang-format process for all files (one per file costs a minute here); it names each
# file that differs in its "file:line:col: error:" lines.
mapfile -t bad < <(clang-format --dry-run --Werror "${files[@]}" 2>&1 |
  sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error:.*/\1/p' | sort -u)
if [ "${#bad[@]}" -gt 0 ]; then
  echo "format: ${#bad[@]} file(s) differ from clang-format's output (make format fixes them):" >&2
  printf '  %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "format: ${#files[@]} files as clang-format writes them"
