#!/usr/bin/env bash
# make format: clang-format (the tree's .clang-format, Google-based) over every C++ file of the
# tree. With --check it changes nothing and fails listing the files that differ; make test
# runs that check (CTest `format_check`).
#
# The files are those git tracks, or, outside a git checkout (a release tarball), every *.h and
# *.cc but the build folders'. The check fails when clang-format is missing, when it fails
# (a broken .clang-format), or when there is no file to check: it cannot pass without looking.
#
#   scripts/format.sh [--check]
set -euo pipefail
cd "$(dirname "$0")/.."
CLANG_FORMAT="${CLANG_FORMAT:-clang-format}"
command -v "$CLANG_FORMAT" >/dev/null ||
  { echo "format: $CLANG_FORMAT not found (scripts/install-deps.sh installs it)" >&2; exit 1; }
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  listing="$(git ls-files '*.h' '*.cc')"
else
  listing="$(find . -mindepth 1 \( -name 'build*' -o -name '.*' \) -prune -o -type f \
    \( -name '*.h' -o -name '*.cc' \) -print | sed 's|^\./||' | sort)"
fi
mapfile -t files <<<"$listing"
if [ -z "$listing" ] || [ "${#files[@]}" -eq 0 ]; then
  echo "format: no C++ file found in $PWD: nothing was checked" >&2
  exit 1
fi
if [ "${1:-}" != "--check" ]; then
  "$CLANG_FORMAT" -i "${files[@]}"
  exit 0
fi
# One clang-format process for all files (one per file costs a minute here); it names each
# file that differs in its "file:line:col: error:" lines, and exits non-zero for those and for
# its own failures, which name no file.
rc=0
report="$("$CLANG_FORMAT" --dry-run --Werror "${files[@]}" 2>&1)" || rc=$?
mapfile -t bad < <(sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error:.*/\1/p' <<<"$report" | sort -u)
if [ "${#bad[@]}" -gt 0 ]; then
  echo "format: ${#bad[@]} file(s) differ from clang-format's output (make format fixes them):" >&2
  printf '  %s\n' "${bad[@]}" >&2
  exit 1
fi
if [ "$rc" -ne 0 ]; then
  echo "format: $CLANG_FORMAT failed (exit $rc) without naming a file that differs:" >&2
  echo "$report" >&2
  exit 1
fi
echo "format: ${#files[@]} files as clang-format writes them"
