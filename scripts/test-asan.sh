#!/usr/bin/env bash
# The unit tier again under AddressSanitizer + UndefinedBehaviorSanitizer. Builds only what
# that tier runs (the unit test binaries and the four executables some of them exec).
set -euo pipefail
ASAN_DIR="${1:-build-asan}"
JOBS="${JOBS:-$(nproc)}"
cmake -S . -B "$ASAN_DIR" -DCMAKE_BUILD_TYPE=Debug -DNODEGATE_SANITIZE=ON >/dev/null
# Unit test names are also their target names (ng_test); script tests have no target.
mapfile -t tests < <(cd "$ASAN_DIR" && ctest -N -L unit | sed -n 's/^ *Test *#[0-9]*: *//p')
targets=(portmap bandwidth host-local nodegate)
all_targets="$(cmake --build "$ASAN_DIR" --target help | sed -n 's/^\.\.\. \([^ ]*\).*/\1/p')"
for t in "${tests[@]}"; do
  if grep -qx "$t" <<<"$all_targets"; then
    targets+=("$t")
  fi
done
cmake --build "$ASAN_DIR" -j "$JOBS" --target "${targets[@]}"
cd "$ASAN_DIR"
ctest --output-on-failure -L unit -j "$JOBS"
