#!/usr/bin/env bash
# make release refuses what it must not ship: scripts/release.sh fails, naming the file, when an
# executable is of another architecture than the one it is released as (readelf -h) or is not
# static (an ELF interpreter), and when CHANGELOG.md has no section for the version. The
# executables here are this machine's own dynamic /bin/true under the plugins' names, so the
# test needs no build.
set -euo pipefail
SRC="$(cd "$(dirname "$0")/../.." && pwd)"
# shellcheck source=../../scripts/lib/check.sh
source "$SRC/scripts/lib/check.sh"  # ok, fail, expect_eq, FAILED
# shellcheck source=../../scripts/lib/arch.sh
source "$SRC/scripts/lib/arch.sh"  # HOST_ARCH
# shellcheck source=../../scripts/lib/changelog.sh
source "$SRC/scripts/lib/changelog.sh"  # changelog_has_version
# shellcheck source=../../scripts/lib/build_outputs.sh
source "$SRC/scripts/lib/build_outputs.sh"  # project_version
T="$(mktemp -d /tmp/ng-release-refusals.XXXXXX)"
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/bin"
for p in host-local cluster-ipam portmap bandwidth bridge nodegate; do cp /bin/true "$T/bin/$p"; done

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

# The tree's version has its changelog section (a version bump without one fails here, not
# only at release time), and the rule tells an entry from its absence.
VERSION="$(project_version "$SRC")"
changelog_has_version "$SRC/CHANGELOG.md" "$VERSION" &&
  ok "CHANGELOG.md has a section for $VERSION" || fail "CHANGELOG.md has no ## [$VERSION] section"
printf '# Changelog\n\n## [Unreleased]\n\n## [%s.1] - 2027-01-01\n\n## [1%s] - 2027-01-01\n' \
  "$VERSION" "$VERSION" >"$T/CHANGELOG.md"
changelog_has_version "$T/CHANGELOG.md" "$VERSION" &&
  fail "a changelog with only $VERSION.1 and 1$VERSION counts as $VERSION's" ||
  ok "a changelog with only $VERSION.1 and 1$VERSION does not count as $VERSION's"
NODEGATE_CHANGELOG="$T/CHANGELOG.md" expect_refusal "$HOST_ARCH" "has no section for $VERSION" \
  "a version without a changelog section"

other=arm64
[ "$HOST_ARCH" = arm64 ] && other=amd64
expect_refusal "$other" "not $other" "a $HOST_ARCH executable released as $other"
expect_refusal "$HOST_ARCH" "has an ELF interpreter (not static)" "a dynamic executable"

if [ "$FAILED" -ne 0 ]; then
  echo "release refusals test: FAILED" >&2
  exit 1
fi
echo "release refusals test passed"
