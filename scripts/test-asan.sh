#!/usr/bin/env bash
# The unit tier under AddressSanitizer + UndefinedBehaviorSanitizer. Builds only what that tier
# runs (the unit test binaries and the four executables some of them exec, which the netns
# tests also run under the sanitizers: scripts/test.sh). Run from the source tree's root.
#
#   scripts/test-asan.sh ASAN_DIR [--build-only]
set -euo pipefail
ASAN_DIR="${1:-build-asan}"
JOBS="${JOBS:-$(nproc)}"
# Built with clang (Debian's, also make fuzz's compiler): at -O0 with the sanitizers it
# compiles this code about twice as fast as GCC, and its sanitized executables start in about
# half the time (static runtime), which the netns pass that execs them thousands of times
# feels. Warnings are GCC's business (the release build, -Werror); clang's differ, so they are
# off here.
# Line tables only, not full debug info: the sanitizers' reports still name file and line, and
# the build (the longest stage of make test, behind the namespace tests) writes far less.
# Linked by lld: each of the ~80 static, sanitized test executables took 3-4.5 s to link with
# GNU ld, about 1 s with lld.
# Linked as fixed-address executables (-no-pie): a sanitized PIE carries ~440,000 relative
# relocations that the loader applies at every start (~20 ms of a ~110 ms start), and the netns
# pass starts these executables ~700 times.
CC=clang CXX=clang++ bash scripts/configure.sh "$ASAN_DIR" -DCMAKE_BUILD_TYPE=Debug \
  -DNODEGATE_SANITIZE=ON -DNODEGATE_WERROR=OFF -DNODEGATE_UNIT_TESTS=ON \
  -DCMAKE_CXX_FLAGS=-w -DCMAKE_C_FLAGS=-w -DCMAKE_CXX_FLAGS_DEBUG=-gline-tables-only \
  -DCMAKE_C_FLAGS_DEBUG=-gline-tables-only -DCMAKE_EXE_LINKER_FLAGS="-fuse-ld=lld -no-pie"
# unit_tier: every unit test binary and the four executables (CMakeLists.txt)
cmake --build "$ASAN_DIR" -j "$JOBS" --target unit_tier
[ "${2:-}" = --build-only ] && exit 0
cd "$ASAN_DIR"
ctest --output-on-failure -L unit -j "$JOBS"
