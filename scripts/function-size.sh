#!/usr/bin/env bash
# The tree's function-size rule: no function of the product's code is longer than 80 lines
# (CONTRIBUTING.md, "Rules that keep the tree readable"). make test runs it (function_size_check,
# label style); --list names the functions over the limit without failing.
#
#   scripts/function-size.sh [--list]
#
# Functions are found by Universal Ctags (each one's first and last line) in the C++ files git
# tracks (every *.h and *.cc outside a git checkout), test code left out (tests/, bench/,
# *_test.cc, testing/ fakes): a test's table of cases may be long. Fails listing each function
# over the limit, when ctags is missing or fails, or when it finds no function: it cannot pass
# without looking. --list prints them and exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."
LIMIT=80
command -v ctags >/dev/null ||
  { echo "function-size: ctags not found (scripts/install-deps.sh installs universal-ctags)" >&2; exit 1; }
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  listing="$(git ls-files '*.h' '*.cc')"
else
  listing="$(find . -mindepth 1 \( -name 'build*' -o -name '.*' \) -prune -o -type f \
    \( -name '*.h' -o -name '*.cc' \) -print | sed 's|^\./||' | sort)"
fi
product="$(grep -Ev '^(tests|bench|third_party)/|_test\.cc$|/testing/' <<<"$listing" || true)"
[ -n "$product" ] || { echo "function-size: no C++ file found in $PWD: nothing was checked" >&2; exit 1; }
tags="$(ctags -L - --languages=C++ --map-C++=+.h --kinds-C++=f --fields=+ne \
  --output-format=json -o - <<<"$product")" || { echo "function-size: ctags failed" >&2; exit 1; }
# "LINES PATH:LINE NAME" for every function with an end.
sizes="$(jq -r 'select(._type == "tag" and .end != null) |
  "\(.end - .line + 1) \(.path):\(.line) \(.name)"' <<<"$tags")"
total="$(grep -c . <<<"$sizes" || true)"
[ "$total" -gt 0 ] || { echo "function-size: ctags found no function: nothing was checked" >&2; exit 1; }
long="$(awk -v limit="$LIMIT" '$1 > limit { print $2 ": " $3 " is " $1 " lines" }' <<<"$sizes" |
  sort -t: -k1,1 -k2,2n)"
if [ -z "$long" ]; then
  echo "function-size: $total functions, none over $LIMIT lines"
  exit 0
fi
echo "$long"
[ "${1:-}" = "--list" ] && exit 0
echo "function-size: $(grep -c . <<<"$long") of $total functions are over $LIMIT lines: split them" >&2
exit 1
