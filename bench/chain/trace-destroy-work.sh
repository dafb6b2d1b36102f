#!/usr/bin/env bash
# When the nf_tables destroy work runs, beside the chain's execs: bench/chain/driver.py runs PODS
# pods (ADD chain, DEL chain, next pod) in a node namespace made here, while a system-wide
# `perf record` takes only the workqueue events of nf_tables_trans_destroy_work (queued by a
# commit that removed something, then one run per batch of such commits, each run an RCU grace
# period, synchronize_rcu, before the frees) and the plugins' execs and exits.
# bench/chain/destroy_work.py prints, per pod, the DEL commits that queued the work, the
# worker's runs and when bridge's next ADD ended: a back-to-back ADD's masquerade commit (an xt
# match) waits until the last run is over (docs/performance/chain.md).
#
#   bash bench/chain/trace-destroy-work.sh BUILD_DIR [ours|reference]   (root; PODS=8)
set -euo pipefail
BUILD_DIR="$(cd "${1:-build}" && pwd)"
SET="${2:-ours}"
SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PODS="${PODS:-8}"
[ "$(id -u)" = 0 ] || { echo "trace-destroy-work needs root (namespaces, perf)" >&2; exit 1; }
command -v perf >/dev/null || { echo "missing perf (scripts/install-deps.sh)" >&2; exit 1; }
work="$(awk '$3 == "nf_tables_trans_destroy_work" {print "0x" $1; exit}' /proc/kallsyms)"
case "$work" in
  "" | 0x0000000000000000)
    echo "nf_tables_trans_destroy_work not in /proc/kallsyms (nf_tables not loaded, or" \
      "kptr_restrict hides it)" >&2
    exit 1
    ;;
esac

# shellcheck source=lib.sh
source "$SRC/bench/chain/lib.sh"  # chain_setup, stage_plugins, stage_chain
chain_setup dw
stage_plugins "$SET" "$T/plugins"
stage_chain

# perf reads the tracepoints' formats from tracefs: mounted in a mount namespace of its own.
filter="function == $work"
unshare -m --propagation private sh -c '
  mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
  exec perf record -q -a -k mono -o "$1/perf.data" \
    -e workqueue:workqueue_queue_work --filter "$6" \
    -e workqueue:workqueue_execute_start --filter "$6" \
    -e workqueue:workqueue_execute_end --filter "$6" \
    -e sched:sched_process_exec -e sched:sched_process_exit -- \
    nsenter --net="/run/netns/$2" /usr/bin/python3 "$3/bench/chain/driver.py" "$1/plugins" \
    "$1/chain.conflist" "$2-c" "$4" 30000 0 "$1/chain.json" "$1/noop"' \
  _ "$T" "$NODE" "$SRC" "$PODS" "" "$filter"
perf script -i "$T/perf.data" -F comm,pid,time,event,trace 2>/dev/null >"$T/perf.txt"
echo "$SET, back to back, $PODS pods:"
python3 "$SRC/bench/chain/destroy_work.py" "$T/perf.txt" "$T/chain.json"
