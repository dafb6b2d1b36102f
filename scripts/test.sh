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
#      Debian 11 root, and in a Debian 11 VM; and the other tests that need that root (label
#      `debian11`: portmap_nftables_netns_test lists our table with its nft 0.9.8), which wait
#      for it rather than leave a comparison out;
#   4. the unit tier, in the sanitizer build;
#   5. the netns tests that exec the executables and make them parse kernel replies (label
#      `plugins`; each test left out says why in its CMakeLists.txt) again, against the
#      sanitizer builds of those executables;
# arm64 is make test-arm64's (scripts/test-arm64.sh) and CI's (.ci/run): its cross build alone
# is about as long as this whole run's builds, which would take make test past 20 minutes on a
# 2-core machine. So is the containerd e2e against Debian's reference plugins (label reference).
# Every stage runs even when an earlier one failed; the exit status is non-zero if any did.
# Each ctest stage uses --no-tests=error, and counts its tests and their cases as passed,
# failed and skipped (scripts/lib/stages.sh); the last lines give those counts per stage and in
# total, after every skip with its reason. Under CI (CI=true) a skip fails its test unless
# tests/allowed_skips.txt lists it (scripts/run-test.py).
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
source "$(dirname "$0")/lib/stages.sh"  # stage, ctest_stage, stages_verdict

# Its own process group (setsid), so that an interrupted run stops the whole build.
setsid nice -n 19 env JOBS="$JOBS" bash scripts/test-asan.sh "$ASAN_DIR" --build-only \
  >"$asan_log" 2>&1 &
asan_pid=$!


setsid nice -n 10 bash tests/portability/root.sh --suite bullseye --image >"$root_log" 2>&1 &
root_pid=$!

# Tests that need the Debian 11 root (label debian11) wait for it in stage 3; the containerd e2e
# against Debian's reference plugins (label reference: it proves the e2e suite, not our code)
# is .ci/run's.
ctest_stage "release build: style, netns, e2e, deploy tests" "$BUILD_DIR" -j "$JOBS" \
  -LE '^(portability|debian11|reference)$'

wait_root() {
  local rc=0
  wait "$root_pid" || rc=$?
  root_pid=""
  if [ "$rc" -eq 0 ]; then
    echo "   $(tail -1 "$root_log")"
  else
    cat "$root_log"  # the tests below build it again and fail with the same reason
  fi
  return $rc
}
stage "the Debian 11 root and its VM image (tests/portability/root.sh, begun beside stage 1)" \
  wait_root
ctest_stage "portability tier (an empty root, a Debian 11 root, a Debian 11 VM) and the tests \
needing the Debian 11 root" "$BUILD_DIR" -j "$JOBS" -L '^(portability|debian11)$'

wait_asan() {
  local rc=0
  wait "$asan_pid" || rc=$?
  asan_pid=""
  [ "$rc" -eq 0 ] || cat "$asan_log"
  return $rc
}
if stage "the sanitizer build (begun beside stage 1 at the lowest priority)" wait_asan; then
  ctest_stage "unit tier under ASan+UBSan" "$ASAN_DIR" -L '^unit$' -j "$JOBS"
  NODEGATE_BIN_DIR_OVERRIDE="$(cd "$ASAN_DIR" && pwd)/bin" ctest_stage \
    "the netns tests that exec the executables, against their sanitizer builds" "$BUILD_DIR" \
    -L '^plugins$' -j "$JOBS"
fi

stages_verdict "make test"
