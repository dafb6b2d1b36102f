#!/usr/bin/env bash
# make test: every tier, arranged to keep a 2-core machine busy. Run from the source tree's
# root after `make build`.
#
#   1. the sanitizer build (scripts/test-asan.sh: clang, ASan+UBSan; the unit tests and the four
#      executables), started in the background at the lowest CPU priority: it takes the cycles
#      the namespace tests leave idle (most of their time is the kernel's and exec's), and
#      yields whenever a test wants the CPU;
#   2. the release build's tests: style, netns, e2e, deploy (the release build has no unit
#      tests: see NODEGATE_UNIT_TESTS), in parallel except those labelled e2e/deploy/serial;
#      meanwhile the portability tier's Debian 11 root and its VM image are prepared (or found
#      in the cache) in the background (tests/portability/root.sh: mostly download and dpkg);
#   3. the portability tier (label `portability`): the executables in an empty root, in that
#      Debian 11 root, and in a Debian 11 VM;
#   4. the unit tier, in the sanitizer build;
#   5. the netns tests that exec the executables and make them parse kernel replies (label
#      `plugins`; each test left out says why in its CMakeLists.txt) again, against the
#      sanitizer builds of those executables;
# arm64 is make test-arm64's (scripts/test-arm64.sh): its cross build alone is about as long
# as this whole run's builds, which would take make test past 20 minutes on a 2-core machine.
# Every stage runs even when an earlier one failed; the exit status is non-zero if any did.
#
#   scripts/test.sh BUILD_DIR ASAN_DIR
set -uo pipefail
BUILD_DIR="$(cd "${1:-build}" && pwd)"
ASAN_DIR="${2:-build-asan}"
JOBS="${JOBS:-$(nproc)}"
asan_log="$(mktemp /tmp/ng-asan-build.XXXXXX)"
asan_pid=""
root_log="$(mktemp /tmp/ng-portability-root.XXXXXX)"
root_pid=""
# The roots' cache: where the portability tests look by default (beside the bin folder).
export NODEGATE_CACHE_DIR="${NODEGATE_CACHE_DIR:-$BUILD_DIR/cache}"
cleanup() {
  [ -n "$asan_pid" ] && kill -- "-$asan_pid" 2>/dev/null
  [ -n "$root_pid" ] && kill -- "-$root_pid" 2>/dev/null
  rm -f "$asan_log" "$root_log"
}
trap cleanup EXIT

# shellcheck source=lib/stages.sh
source "$(dirname "$0")/lib/stages.sh"  # stage, stages_verdict

# Its own process group (setsid), so that an interrupted run stops the whole build.
setsid nice -n 19 env JOBS="$JOBS" bash scripts/test-asan.sh "$ASAN_DIR" --build-only \
  >"$asan_log" 2>&1 &
asan_pid=$!


setsid nice -n 10 bash tests/portability/root.sh --suite bullseye --image >"$root_log" 2>&1 &
root_pid=$!

stage "release build: style, netns, e2e, deploy tests" \
  bash -c "cd '$BUILD_DIR' && ctest --output-on-failure -j '$JOBS' -LE portability"

echo "== waiting for the portability tier's Debian 11 root"
wait_start=$SECONDS
if wait "$root_pid"; then
  root_pid=""
  echo "== the root was ready after $((SECONDS - wait_start)) s more: $(tail -1 "$root_log")"
else
  root_pid=""
  cat "$root_log"  # the tests below build it again and fail with the same reason
fi
stage "portability tier: an empty root, a Debian 11 root, a Debian 11 VM" \
  bash -c "cd '$BUILD_DIR' && ctest --output-on-failure -j '$JOBS' -L portability"

echo "== waiting for the sanitizer build"
wait_start=$SECONDS
if wait "$asan_pid"; then
  asan_pid=""
  echo "== the sanitizer build was ready after $((SECONDS - wait_start)) s more"
  stage "unit tier under ASan+UBSan" \
    bash -c "cd '$ASAN_DIR' && ctest --output-on-failure -L unit -j '$JOBS'"
  stage "the netns tests that exec the executables, against their sanitizer builds" \
    bash -c "cd '$BUILD_DIR' && NODEGATE_BIN_DIR_OVERRIDE='$(cd "$ASAN_DIR" && pwd)/bin' \
      ctest --output-on-failure -L plugins -j '$JOBS'"
else
  asan_pid=""
  cat "$asan_log"
  failed_stages+=("sanitizer build")
fi

stages_verdict "make test"
