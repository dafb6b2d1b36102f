#!/usr/bin/env bash
# The unit tier again under AddressSanitizer + UndefinedBehaviorSanitizer. Builds only what
# that tier runs (the unit test binaries and the four executables some of them exec).
# Run from the source tree's root.
set -euo pipefail
ASAN_DIR="${1:-build-asan}"
JOBS="${JOBS:-$(nproc)}"
bash scripts/configure.sh "$ASAN_DIR" -DCMAKE_BUILD_TYPE=Debug -DNODEGATE_SANITIZE=ON
# unit_tier: every unit test binary and the four executables (CMakeLists.txt)
cmake --build "$ASAN_DIR" -j "$JOBS" --target unit_tier
cd "$ASAN_DIR"
ctest --output-on-failure -L unit -j "$JOBS"
