#!/bin/bash
# run.sh CHECK[:ARG]... : the named checks of checks.sh (check_CHECK ARG), in order, on this
# node; one line per assertion, then "N passed, N failed". Exit 0 only when none failed.
#   bash /ng/node/run.sh version host_local portmap_iptables:nft portmap_nftables
set -u
. "$(dirname "${BASH_SOURCE[0]}")/checks.sh"
trap cleanup_checks EXIT
echo "node: $(uname -r), $(. /etc/os-release && echo "$PRETTY_NAME"), $(iptables --version 2>&1), $(nft --version 2>&1)"
for spec in "$@"; do
  current=$spec
  echo "== $spec"
  if [[ "$spec" == *:* ]]; then
    "check_${spec%%:*}" "${spec#*:}"
  else
    "check_$spec"
  fi
  netns_del_all  # also after a check that stopped at a failure
  echo "   ($spec took $SECONDS s since the start)"
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
