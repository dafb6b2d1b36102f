# shellcheck shell=bash
# Sourced by the test drivers (scripts/test.sh, scripts/test-arm64.sh): a run of named stages
# that all run even when an earlier one failed, each timed, the failures collected for the end.

failed_stages=()

# stage NAME COMMAND...: runs COMMAND, prints its outcome and time; returns its status.
stage() {
  local name=$1
  shift
  echo "== $name"
  local t0=$SECONDS
  if "$@"; then
    echo "== $name: passed ($((SECONDS - t0)) s)"
  else
    echo "== $name: FAILED ($((SECONDS - t0)) s)"
    failed_stages+=("$name")
    return 1
  fi
}

# stages_verdict WHAT: prints every failed stage (or that all passed) and returns non-zero if
# any failed.
stages_verdict() {
  local what=$1
  if [ ${#failed_stages[@]} -gt 0 ]; then
    printf '%s: FAILED: %s\n' "$what" "${failed_stages[@]}"
    return 1
  fi
  echo "$what: every stage passed"
}
