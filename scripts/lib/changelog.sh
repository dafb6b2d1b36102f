# shellcheck shell=bash
# Sourced: the release's changelog rule. Every version released has its section in CHANGELOG.md,
# in the Keep a Changelog form ("## [0.2.0] - 2027-01-15"). scripts/release.sh refuses a version
# without one; tests/release/refusals_test.sh checks the tree's own CHANGELOG.md against its
# version and that the refusal happens.

# changelog_has_version FILE VERSION: true when FILE has a "## [VERSION]" heading.
changelog_has_version() {
  [ -f "$1" ] || return 1
  grep -qE "^## \[${2//./\\.}\]( |$)" "$1"
}
