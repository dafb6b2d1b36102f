#!/usr/bin/env bash
# make release refuses what it must not ship (issue 33): scripts/release.sh fails, naming the
# file, when an executable is of another architecture than the one it is released as
# (readelf -h) or is not static (an ELF interpreter). The executables here are this machine's
# own dynamic /bin/true under the plugins' names, so the test needs no build.
set -euo pipefail
SRC="$(cd "$(dirname "$0")/../.." && pwd)"
# shellcheck source=../../scripts/lib/check.sh
source "$SRC/scripts/lib/check.sh"  # ok, fail, expect_eq, FAILED
# shellcheck source=../../scripts/lib/arch.sh
source "$SRC/scripts/lib/arch.sh"  # HOST_ARCH
T="$(mktemp -d /tmp/ng-release-refusals.XXXXXX)"
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/bin"
for p in host-local cluster-ipam portmap bandwidth nodegate; do cp /bin/true "$T/bin/$p"; done

# expect_refusal ARCH PATTERN DESCRIPTION: release.sh of $T/bin as ARCH fails, saying PATTERN,
# and leaves no artifact.
expect_refusal() {
  local rc=0 out
  out="$(bash "$SRC/scripts/release.sh" --no-image "$T/out" "$1=$T/bin" 2>&1)" || rc=$?
  [ "$rc" -ne 0 ] && ok "$3: release fails (exit $rc)" || fail "$3: release succeeded"
  grep -q -- "$2" <<<"$out" && ok "$3: says '$2'" || fail "$3: no '$2' in: $out"
  [ -z "$(ls -A "$T/out" 2>/dev/null)" ] && ok "$3: no artifact written" ||
    fail "$3: left $(ls "$T/out")"
}

other=arm64
[ "$HOST_ARCH" = arm64 ] && other=amd64
expect_refusal "$other" "not $other" "a $HOST_ARCH executable released as $other"
expect_refusal "$HOST_ARCH" "has an ELF interpreter (not static)" "a dynamic executable"

if [ "$FAILED" -ne 0 ]; then
  echo "release refusals test: FAILED" >&2
  exit 1
fi
echo "release refusals test passed"
