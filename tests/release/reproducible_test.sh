#!/usr/bin/env bash
# The release is reproducible (issue 33): the same tree, copied to another folder and built
# there in build folders of other names, gives byte-identical release artifacts (the plugins'
# tarballs, the nodegate executables, the .deb files and their checksum files) for every
# architecture. Both sets are written by this tree's scripts/release.sh --no-image (the
# image's reproducibility is tests/deploy/image_test.sh's: same inputs, same image ID).
#
#   tests/release/reproducible_test.sh ARCH=BIN_DIR...     e.g. amd64=build/bin arm64=build-arm64/bin
#
# The second build is configured as the Makefile configures build/ and build-arm64/ (release
# build type; the arm64 one with cmake/toolchains/debian-cross.cmake). It costs about one build
# of the executables per architecture.
set -euo pipefail
SRC="$(cd "$(dirname "$0")/../.." && pwd)"
# shellcheck source=../../scripts/lib/check.sh
source "$SRC/scripts/lib/check.sh"  # ok, fail, expect_eq, FAILED
# shellcheck source=../../scripts/lib/arch.sh
source "$SRC/scripts/lib/arch.sh"  # HOST_ARCH
JOBS="${JOBS:-$(nproc)}"
[ $# -gt 0 ] || { echo "usage: reproducible_test.sh ARCH=BIN_DIR..." >&2; exit 2; }
T="$(mktemp -d /tmp/ng-reproducible.XXXXXX)"
trap 'rm -rf "$T"' EXIT
export NODEGATE_CACHE_DIR="${NODEGATE_CACHE_DIR:-$SRC/build/cache}"
START=$SECONDS

echo "== a copy of the tree in $T/elsewhere/tree"
mkdir -p "$T/elsewhere/tree"
(cd "$SRC" && git ls-files -z --cached --others --exclude-standard | xargs -0 tar -cf -) |
  tar -xf - -C "$T/elsewhere/tree"
COPY="$T/elsewhere/tree"
# The copy has no git history: the commit and source date the first build read from git
# (lib/CMakeLists.txt, build_info) come from the environment instead.
export NODEGATE_COMMIT="${NODEGATE_COMMIT:-$(git -C "$SRC" rev-parse HEAD)}"
export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git -C "$SRC" log -1 --format=%ct)}"

first=()
second=()
for spec in "$@"; do
  arch="${spec%%=*}"
  first+=("$arch=$(cd "${spec#*=}" && pwd)")
  out="$COPY/out-$arch"
  flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DNODEGATE_UNIT_TESTS=OFF)
  if [ "$arch" != "$HOST_ARCH" ]; then
    flags+=(-DCMAKE_TOOLCHAIN_FILE="$COPY/cmake/toolchains/debian-cross.cmake" -DNODEGATE_ARCH="$arch")
  fi
  echo "== building $arch again in $out"
  t0=$SECONDS
  (cd "$COPY" && bash scripts/configure.sh "$out" "${flags[@]}" &&
    cmake --build "$out" -j "$JOBS" --target portmap bandwidth host-local cluster-ipam nodegate >"$T/build-$arch.log" 2>&1) ||
    { tail -30 "$T/build-$arch.log" >&2; fail "the second $arch build failed"; exit 1; }
  echo "  ($((SECONDS - t0)) s)"
  second+=("$arch=$out/bin")
done

# One date, maintainer and revision for both (they come from this tree's git, which the copy
# lacks): what differs may only be what the builds produced.
export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git -C "$SRC" log -1 --format=%ct)}"
export DEB_MAINTAINER="${DEB_MAINTAINER:-$(git -C "$SRC" log -1 --format='%an <%ae>')}"
export DEB_REVISION="${DEB_REVISION:-$(git -C "$SRC" describe --always --dirty 2>/dev/null || echo unknown)}"
bash "$SRC/scripts/release.sh" --no-image "$T/first" "${first[@]}" >"$T/first.log" 2>&1 ||
  { cat "$T/first.log" >&2; fail "release of the first build"; exit 1; }
bash "$SRC/scripts/release.sh" --no-image "$T/second" "${second[@]}" >"$T/second.log" 2>&1 ||
  { cat "$T/second.log" >&2; fail "release of the second build"; exit 1; }

echo "== the artifacts, byte for byte"
count=0
for f in "$T"/first/*; do
  name="$(basename "$f")"
  count=$((count + 1))
  if cmp -s "$f" "$T/second/$name"; then
    ok "$name identical ($(sha256sum <"$f" | cut -c1-16))"
  else
    fail "$name differs between the two builds"
  fi
done
expect_eq "$(ls "$T/first" | wc -l)" "$(ls "$T/second" | wc -l)" "the same artifacts"
[ "$count" -ge $((9 * $#)) ] && ok "$count files compared" || fail "only $count files compared"
echo "  ($((SECONDS - START)) s)"
if [ "$FAILED" -ne 0 ]; then
  echo "reproducible test: FAILED" >&2
  exit 1
fi
echo "reproducible test passed"
