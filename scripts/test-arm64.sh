#!/usr/bin/env bash
# make test-arm64: what make test cannot afford of arm64 (issue 33; tests/arm64/README.md).
#   1. the arm64 unit tier (tests/arm64/unit_tier.sh): the cross build's unit tests, its
#      executables_test and the plugins' VERSION and host-local ADD/DEL
#      (tests/arm64/qemu_user_test.sh), all under qemu-user; its build (the unit_tier target
#      of ARM64_DIR) is most of this stage's time;
#   2. the full netns tier of the portability checks (tests/portability/node/checks.sh) in a
#      Debian 12 arm64 VM: bookworm's arm64 kernel and root (tests/portability/root.sh
#      --arch arm64, bootstrapped under qemu-user and cached), qemu-system-aarch64 -M virt
#      -cpu max under TCG, no network; our arm64 executables beside bookworm's reference plugins;
#   3. the deploy tier of the arm64 build: its .deb installed into an empty root and its install
#      image run as deploy/daemonset.yaml runs it (tests/deploy, executed under qemu-user);
#   4. the release's reproducibility (tests/release/reproducible_test.sh): both architectures
#      built again from a copy of the tree in another folder give the same bytes.
# Every stage runs even when an earlier one failed; the exit status is non-zero if any did.
#
#   scripts/test-arm64.sh BUILD_DIR ARM64_DIR      (after make build and make build-arm64)
set -uo pipefail
BUILD_DIR="$(cd "${1:-build}" && pwd)"
ARM64_DIR="$(cd "${2:-build-arm64}" && pwd)"
JOBS="${JOBS:-$(nproc)}"
# The debs stay where make deps-arm64 put them (install-deps.sh: the caller's cache, else
# build/cache/debs) when the roots go to the arm64 build's cache: a fresh clone's bootstrap
# otherwise found no arm64 busybox-static.
SOURCE_CACHE="$(cd "$(dirname "$0")/.." && pwd)/build/cache"
export NODEGATE_DEB_CACHE_DIR="${NODEGATE_DEB_CACHE_DIR:-${NODEGATE_CACHE_DIR:-$SOURCE_CACHE}/debs}"
export NODEGATE_CACHE_DIR="${NODEGATE_CACHE_DIR:-$ARM64_DIR/cache}"
# The checks of the Debian 11 tier, all of them: both iptables modes, both directions of a
# switch between the reference and ours, the nftables backend, bandwidth's rates, bridge in both
# modes and with VLANs, nodegate.
# legacy_first_use first: it needs a kernel where nothing has loaded ip_tables yet.
VM_CHECKS=(legacy_first_use version host_local portmap_iptables:nft portmap_cross:nft
  portmap_iptables:legacy portmap_cross:legacy portmap_conntrack portmap_nftables
  portmap_nftables_masqall bandwidth bridge:nft bridge:legacy bridge_vlan admit ports)

# shellcheck source=lib/stages.sh
source "$(dirname "$0")/lib/stages.sh"  # stage, ctest_stage, counted_stage, stages_verdict

if stage "the arm64 unit tier's build (cross)" \
  cmake --build "$ARM64_DIR" -j "$JOBS" --target unit_tier; then
  counted_stage "the arm64 unit tier under qemu-user" \
    env JOBS="$JOBS" bash tests/arm64/unit_tier.sh "$ARM64_DIR"
fi

stage "the Debian 12 arm64 root and its disk image (cached in $NODEGATE_CACHE_DIR/roots)" \
  bash tests/portability/root.sh --suite bookworm --arch arm64 --image
stage "the netns checks in a Debian 12 arm64 VM (TCG)" \
  env NODEGATE_BIN_DIR="$ARM64_DIR/bin" NG_VM_TIMEOUT="${NG_VM_TIMEOUT:-3600}" \
  bash tests/portability/vm_test.sh --arch arm64 --suite bookworm "${VM_CHECKS[@]}"
ctest_stage "the arm64 package and install image (qemu-user)" "$ARM64_DIR" -L '^deploy$'
stage "the release, built twice in different folders: the same bytes" \
  env JOBS="$JOBS" bash tests/release/reproducible_test.sh amd64="$BUILD_DIR/bin" arm64="$ARM64_DIR/bin"

stages_verdict "make test-arm64"
