# shellcheck shell=bash
# Sourced by the e2e tests: one line per check, "ok: ..." or "FAIL: ..." (to stderr), and
# FAILED=1 once anything failed; the caller exits non-zero at the end when FAILED is 1.
FAILED=0
ok() { echo "  ok: $*"; }
fail() {
  echo "  FAIL: $*" >&2
  FAILED=1
}
expect_eq() {  # expect_eq WANT GOT WHAT
  if [ "$1" = "$2" ]; then ok "$3"; else fail "$3: want '$1', got '$2'"; fi
}
# skip_test WHY: ends a script test as skipped (scripts/run-test.py: exit 77 and the line
# "SKIP: WHY"). Under CI that fails it unless tests/allowed_skips.txt lists it with WHY.
skip_test() {
  echo "SKIP: $*"
  exit 77
}
