#!/usr/bin/env bash
# Where the chain's plugins wait, from the kernel's own tracing: bench/chain/driver.py runs
# PODS pods (ADD chain, DEL chain, next pod) in a node namespace made here, under a per-task
# `perf record` of the driver and its children only (nothing else on the machine is traced):
# each sched_switch with the kernel stack the task left the CPU with, the PERF_RECORD_SWITCH
# that brings it back, and each exec. bench/chain/waits.py then sums the off-CPU time per
# plugin, ADD or DEL, and call path (an RCU grace period, a lock, a child's exec).
#
#   bash bench/chain/trace-waits.sh BUILD_DIR [ours|reference]   (root; PODS=20 OTHERS=0
#                                                                   PAUSE_MS=0: back to back)
set -euo pipefail
BUILD_DIR="$(cd "${1:-build}" && pwd)"
SET="${2:-ours}"
SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PODS="${PODS:-20}"
OTHERS="${OTHERS:-0}"
PAUSE_MS="${PAUSE_MS:-0}"
[ "$(id -u)" = 0 ] || { echo "trace-waits needs root (namespaces, perf)" >&2; exit 1; }
command -v perf >/dev/null || { echo "missing perf (scripts/install-deps.sh)" >&2; exit 1; }

# shellcheck source=lib.sh
source "$SRC/bench/chain/lib.sh"  # chain_setup, stage_plugins, stage_chain
# shellcheck source=../lib/node.sh
source "$SRC/bench/lib/node.sh"  # iptables_population
chain_setup tw
stage_plugins "$SET" "$T/plugins"
stage_chain
if [ "$OTHERS" != 0 ]; then
  iptables_population "$OTHERS" nodegate | ip netns exec "$NODE" iptables-nft-restore
fi

# perf reads the tracepoints' formats from tracefs: mounted in a mount namespace of its own.
unshare -m --propagation private sh -c '
  mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
  exec perf record -q -k mono -g --switch-events -o "$1/perf.data" \
    -e sched:sched_switch -e sched:sched_process_exec -- \
    nsenter --net="/run/netns/$2" /usr/bin/python3 "$3/bench/chain/driver.py" "$1/plugins" \
    "$1/chain.conflist" "$2-c" "$4" 30000 "$5" "$1/chain.json" "$1/noop"' \
  _ "$T" "$NODE" "$SRC" "$PODS" "$PAUSE_MS"
perf script -i "$T/perf.data" --show-switch-events -F comm,pid,tid,time,event,ip,sym \
  2>/dev/null >"$T/perf.txt"
echo "$SET, $OTHERS other mappings, pause $PAUSE_MS ms, $PODS pods:"
python3 "$SRC/bench/chain/waits.py" "$T/perf.txt" "$T/chain.json" "${TOP:-8}"
