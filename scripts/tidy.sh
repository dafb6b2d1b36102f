#!/usr/bin/env bash
# make tidy: clang-tidy with the tree's .clang-tidy over every C++ source git knows (headers
# through the sources that include them). Needs a compilation database of single files, so it
# configures its own folder (clang, no unity build, no precompiled headers; nothing is built).
# Exit status non-zero when anything is reported.
#
#   scripts/tidy.sh [TIDY_DIR] [FILE...]     (default: build-tidy, every source)
set -euo pipefail
TIDY_DIR="${1:-build-tidy}"
shift || true
JOBS="${JOBS:-$(nproc)}"
CC=clang CXX=clang++ bash scripts/configure.sh "$TIDY_DIR" -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_UNITY_BUILD=OFF -DCMAKE_DISABLE_PRECOMPILE_HEADERS=ON -DNODEGATE_WERROR=OFF
# Generated sources (the fuzz replay table) exist only after their configure step: made above.
if [ "$#" -gt 0 ]; then
  files=("$@")
else
  mapfile -t files < <(git ls-files '*.cc' | grep -v '^tests/fuzz/.*_fuzz\.cc$')
fi
# run-clang-tidy runs one clang-tidy per file on JOBS cores; its exit status is not reliable
# across versions, so the findings are counted from its output.
report="$(mktemp)"
trap 'rm -f "$report"' EXIT
# Colour codes stripped: run-clang-tidy colours its output when it thinks a person reads it,
# and "error:" inside escape sequences would not be counted.
run-clang-tidy -quiet -j "$JOBS" -p "$TIDY_DIR" "${files[@]/#/$PWD/}" 2>&1 |
  sed 's/\x1b\[[0-9;]*m//g' >"$report" || true
grep -v -E '^(clang-tidy-?[0-9]* |[0-9]+ warnings? (and [0-9]+ errors? )?generated|Suppressed [0-9]+ warnings|Use -header-filter|Running clang-tidy|Enabled checks|    )' \
  "$report" || true
findings=$(grep -c -E ': (warning|error): ' "$report" || true)
if [ "$findings" -gt 0 ]; then
  echo "tidy: $findings finding(s)" >&2
  exit 1
fi
echo "tidy: ${#files[@]} files, nothing reported"
