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
