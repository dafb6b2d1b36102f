# shellcheck shell=bash
# Sourced by the test drivers (scripts/test.sh, scripts/test-arm64.sh, .ci/run): a run of named
# stages that all run even when an earlier one failed, each timed and counted, the failures
# collected for the end. A ctest stage's tests and cases are counted as passed, failed and
# skipped (scripts/count-tests.py, from what scripts/run-test.py recorded for each test);
# stages_verdict prints every skip with its reason, one line per stage and the total.
#
# NG_STAGE_LOG: the file the stages are recorded in. A driver run by another (make test by
# .ci/run) inherits it, so the outer driver's verdict covers both; else each driver makes one.

STAGES_SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
failed_stages=()
if [ -z "${NG_STAGE_LOG:-}" ]; then
  NG_STAGE_LOG="$(mktemp /tmp/ng-stages.XXXXXX)"
  export NG_STAGE_LOG
  stages_log_owned=1
fi

# stage NAME COMMAND...: runs COMMAND, a step that runs no tests of its own (a build, a root's
# bootstrap), prints its outcome and time; returns its status.
stage() {
  local name=$1 t0=$SECONDS rc=0
  shift
  echo "== $name"
  "$@" || rc=$?
  _stage_done "$name" $rc $((SECONDS - t0))
  python3 "$STAGES_SRC/scripts/count-tests.py" step --log "$NG_STAGE_LOG" --name "$name" \
    --status $rc --seconds $((SECONDS - t0))
  return $rc
}

# ctest_stage NAME BUILD_DIR [CTEST ARGS...]: ctest in BUILD_DIR as a stage, with
# --no-tests=error (a selection that matches nothing fails) and --output-on-failure; its tests
# and cases counted, its skips printed with their reasons. Fails when ctest does, and when a
# test ran without scripts/run-test.py.
ctest_stage() {
  local name=$1
  shift
  counted_stage "$name" _ctest_counted "$@"
}
_ctest_counted() {
  local dir=$1
  shift
  ctest --test-dir "$dir" --no-tests=error --output-on-failure --output-junit "$NG_JUNIT" "$@"
}

# counted_stage NAME COMMAND...: a stage whose COMMAND runs ctest itself (tests/arm64/
# unit_tier.sh), counted as ctest_stage's: COMMAND finds in its environment NG_RESULTS_DIR (for
# scripts/run-test.py's records) and NG_JUNIT, the path ctest must write its report to
# (--output-junit).
counted_stage() {
  local name=$1 t0=$SECONDS rc=0 results
  shift
  results="$(mktemp -d /tmp/ng-stage.XXXXXX)"
  echo "== $name"
  NG_RESULTS_DIR="$results" NG_JUNIT="$results/junit.xml" "$@" || rc=$?
  python3 "$STAGES_SRC/scripts/count-tests.py" stage --log "$NG_STAGE_LOG" --name "$name" \
    --status $rc --seconds $((SECONDS - t0)) --results "$results" || [ $rc -ne 0 ] || rc=1
  rm -rf "$results"
  _stage_done "$name" $rc $((SECONDS - t0))
  return $rc
}

_stage_done() {
  if [ "$2" -eq 0 ]; then
    echo "== $1: passed ($3 s)"
  else
    echo "== $1: FAILED ($3 s)"
    failed_stages+=("$1")
  fi
}

# stages_verdict WHAT: every skip with its reason, each stage's counts and the total (the
# stages of NG_STAGE_LOG: this driver's, and those of drivers it ran); non-zero if any failed.
stages_verdict() {
  local rc=0
  python3 "$STAGES_SRC/scripts/count-tests.py" table --log "$NG_STAGE_LOG" --title "$1" || rc=1
  [ "${#failed_stages[@]}" -eq 0 ] || rc=1
  [ -z "${stages_log_owned:-}" ] || rm -f "$NG_STAGE_LOG"
  return $rc
}
