#!/usr/bin/env bash
# make bench: every area's benchmark, ours beside the reference, in one run.
# Each area keeps its benchmark in bench/<area>/bench.sh, called with the build directory.
set -uo pipefail
BUILD_DIR="$(cd "${1:-build}" && pwd)"
HERE="$(cd "$(dirname "$0")" && pwd)"
status=0
# Every section runs copies of the executables, as a node runs them (make install, the .deb, an
# image): a file the linker has just written sits in the page cache in small pieces and exec'd
# 0.3 ms slower per call here (bench/podstart/README.md).
STAGE="$(mktemp -d /tmp/ng-bench-stage.XXXXXX)"
trap 'rm -rf "$STAGE"' EXIT
cp -r "$BUILD_DIR/bin" "$BUILD_DIR/bench" "$STAGE/"
BUILD_DIR="$STAGE"
# podstart times containerd: under a lock, so that two benches on one machine do not time
# each other.
for area in podstart startup ipam cluster-ipam portmap bandwidth admit ports webhook explain; do
  script="$HERE/$area/bench.sh"
  [ -f "$script" ] || continue
  echo
  echo "=== $area ==="
  lock=()
  [ "$area" != podstart ] || lock=(flock /tmp/nodegate-e2e.lock)
  if ! "${lock[@]}" bash "$script" "$BUILD_DIR"; then
    echo "bench $area: FAILED" >&2
    status=1
  fi
done
exit $status
