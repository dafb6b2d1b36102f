#!/usr/bin/env bash
# The portability tier in a Debian 11 root (glibc 2.31, iptables 1.8.7 in nft mode, nft 0.9.8,
# the reference plugins 0.9.0): our executables run there as a node operator would run them,
# chrooted in private namespaces on this machine's kernel (tests/portability/README.md).
#
#   debian11_test.sh [CHECK...]      (default: every check but bandwidth; see node/checks.sh)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
require_root

checks=("$@")
if [ ${#checks[@]} -eq 0 ]; then
  checks=(version host_local portmap_iptables:nft portmap_cross:nft portmap_iptables:legacy
    portmap_cross:legacy portmap_conntrack portmap_nftables portmap_nftables_masqall admit ports
    bridge:nft bridge:legacy)
fi
entry=$(debian_root --suite bullseye)
tmp=$(mktemp -d /tmp/ng-portability.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
stage_ng "$tmp/ng"
in_root "$entry/root" "$tmp/ng" /bin/bash /ng/node/run.sh "${checks[@]}"
