#!/usr/bin/env bash
# Configures a build folder the way every make target builds: Ninja (one build graph, so the
# targets of `cmake --build --target A B ...` compile in parallel; the Makefile generator
# builds several goals one after another) and a unity build (each target's sources compiled
# as a few merged translation units: the headers of this template-heavy code are parsed once
# per target instead of once per file; about a quarter less compile time).
#
#   scripts/configure.sh BUILD_DIR [CMAKE ARGS...]
#
# A folder configured earlier with another generator is reconfigured from scratch (CMake
# refuses to switch generators in place).
set -euo pipefail
BUILD_DIR="$1"
shift
SOURCE_DIR="$(cd "$(dirname "$0")/.." && pwd)"
cache="$BUILD_DIR/CMakeCache.txt"
if [ -f "$cache" ] && ! grep -qx 'CMAKE_GENERATOR:INTERNAL=Ninja' "$cache"; then
  echo "configure: $BUILD_DIR was configured with another generator; starting it afresh" >&2
  rm -rf "$cache" "$BUILD_DIR/CMakeFiles"
fi
# CXX (as CMake reads it) names the compiler; a cache made with another one starts afresh too.
# A cross build's compiler is its toolchain file's (cmake/toolchains/), not CXX's.
if [ -f "$cache" ] && ! grep -q '^CMAKE_TOOLCHAIN_FILE:' "$cache"; then
  cached="$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$cache")"
  wanted="$(command -v "${CXX:-c++}" || true)"
  if [ -n "$wanted" ] && [ "$(readlink -f "$cached")" != "$(readlink -f "$wanted")" ]; then
    echo "configure: $BUILD_DIR was configured with $cached; starting it afresh with $wanted" >&2
    rm -rf "$cache" "$BUILD_DIR/CMakeFiles"
  fi
fi
cmake -G Ninja -S "$SOURCE_DIR" -B "$BUILD_DIR" -DCMAKE_UNITY_BUILD=ON "$@" >/dev/null
