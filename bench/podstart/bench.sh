#!/usr/bin/env bash
# Pod start under containerd: what a user of the plugins feels. Debian's containerd 1.6 with
# its CRI plugin, started inside a throwaway node namespace as tests/e2e/containerd_e2e.sh
# starts it, driven over the CRI as a kubelet drives it (bench/podstart/driver.py). The pod
# network is conf/examples/10-standard.conflist: Debian's bridge (ipMasq) with host-local,
# then portmap and bandwidth, either ours ("ours") or Debian's reference ("reference"), with
# Debian's bridge in both; and the whole chain ours ("ourbridge": our bridge, host-local, portmap
# and bandwidth). loopback is Debian's in all.
#
# A set is SET sandboxes (default 20) started one after another, each with one TCP and one UDP
# host port and the bandwidth annotations, then stopped and removed one after another. Sets
# alternate between the plugins (ours, reference, reference, ours, ... ROUNDS pairs, default
# 2), on a node with 0 and then 1,000 other mappings (OTHERS; the reference portmap's layout
# in nf_tables, bench/lib/node.sh). Reported per plugin set and node:
#   - RunPodSandbox and Stop+Remove (StopPodSandbox then RemovePodSandbox), p50 and p90;
#   - the CNI ADD chain (bridge's start to bandwidth's end) and each plugin's share: from
#     fork to exit of each plugin process, read from the scheduler's tracepoints
#     (sched_process_fork/exec/exit, `perf record -a` while the sets run; nothing wraps the
#     plugins, so containerd execs exactly what it would on a node). bridge's own share
#     leaves out the host-local it runs;
#   - the bare exec of a static binary (bench/startup/noop.c), forked the same way from a
#     shell between the sets and timed the same way: the floor of every plugin call.
# OTHER_PORTMAP=/path/to/portmap adds a third set, ours with that portmap binary (an A/B of a
# portmap change: the rest of the chain is the same).
#
# Everything (containerd's root, state, socket, the runc root, the pod netns files, the IPAM
# store, the CNI config) is under a temp folder, the node namespace is removed at the end, and
# the containers and shims are stopped by PID, also on failure or Ctrl-C (scripts/lib/
# containerd.sh). Two such benches on one machine would time each other's containerd: `make
# bench` takes /tmp/nodegate-e2e.lock around this section.
#
#   bash bench/podstart/bench.sh BUILD_DIR        (root; SET=N ROUNDS=N OTHERS="0 1000")
set -euo pipefail
BUILD_DIR="$(cd "${1:-build}" && pwd)"
SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
SET="${SET:-20}"
ROUNDS="${ROUNDS:-2}"
OTHERS="${OTHERS:-0 1000}"
OTHER_PORTMAP="${OTHER_PORTMAP:-}"
NOOP="$BUILD_DIR/bench/startup_noop"
PY=/usr/bin/python3

[ "$(id -u)" = 0 ] || { echo "podstart bench needs root (namespaces, containerd)" >&2; exit 1; }
for f in "$BUILD_DIR"/bin/{bridge,host-local,portmap,bandwidth} "$NOOP" /usr/lib/cni/bridge; do
  [ -x "$f" ] || { echo "missing $f (build first; containernetworking-plugins)" >&2; exit 1; }
done
for tool in containerd ctr runc perf; do
  command -v "$tool" >/dev/null || { echo "missing $tool (scripts/install-deps.sh)" >&2; exit 1; }
done

T="$(mktemp -d /tmp/ng-podstart.XXXXXX)"
NODE="ng-ps-node-$$"
# shellcheck disable=SC2034 # node_remove deletes $CLIENT too; no client namespace is made here
CLIENT="ng-ps-cli-$$"
C="$T/containerd"
SOCK="$C/containerd.sock"
IMAGE="localhost/ngpause:1"
CGROUP="nodegate-bench-$$"
CTD_PID=""
PERF_PID=""

# shellcheck source=../../scripts/lib/node.sh
source "$SRC/scripts/lib/node.sh"      # in_node, node_busybox_rootfs, node_remove
# shellcheck source=../../scripts/lib/containerd.sh
source "$SRC/scripts/lib/containerd.sh"  # containerd_config, _start, _pause_image, _teardown
# shellcheck source=../lib/node.sh
source "$SRC/bench/lib/node.sh"        # settle, iptables_population, veth_pair_cost
cri() { timeout 120 "$PY" "$SRC/tests/e2e/cri_client.py" "$SOCK" "$@"; }

cleanup() {
  set +e
  [ -z "$PERF_PID" ] || { kill -INT "$PERF_PID"; wait "$PERF_PID"; } 2>/dev/null
  # shellcheck disable=SC2046 # one ID per word
  containerd_teardown $(cut -d'"' -f8 "$T"/sets/*.json 2>/dev/null)
  node_remove
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Plugin folders: $T/plugins is a link to one of them, switched between sets (containerd and
# bridge look each plugin up by name at every call).
mkdir -p "$T"/{ours,ourbridge,reference,other,net.d,ipam,sets} "$C"
for p in bridge loopback; do
  for set in ours reference other; do ln -s "/usr/lib/cni/$p" "$T/$set/$p"; done
done
ln -s /usr/lib/cni/loopback "$T/ourbridge/loopback"
install -m 0755 "$BUILD_DIR/bin/bridge" "$T/ourbridge/bridge"
# Ours (and the floor) are copied in, as an installer copies them (make install, the .deb,
# an image): a file the linker has just written sits in the page cache in small pieces, and
# exec'ing it cost 0.3 ms more per call here than exec'ing a copy (bench/podstart/README.md).
for p in host-local portmap bandwidth; do
  install -m 0755 "$BUILD_DIR/bin/$p" "$T/ours/$p"
  ln -s "/usr/lib/cni/$p" "$T/reference/$p"
  ln -s "../ours/$p" "$T/other/$p"
  ln -s "../ours/$p" "$T/ourbridge/$p"
done
if [ -n "$OTHER_PORTMAP" ]; then
  rm "$T/other/portmap" && install -m 0755 "$OTHER_PORTMAP" "$T/other/portmap"
fi
install -m 0755 "$NOOP" "$T/noop"
NOOP="$T/noop"
ln -s ours "$T/plugins"
use_plugins() { ln -sfn "$1" "$T/plugins.new" && mv -T "$T/plugins.new" "$T/plugins"; }

sed "s|\"type\": \"host-local\",|\"type\": \"host-local\", \"dataDir\": \"$T/ipam\",|" \
  "$SRC/conf/examples/10-standard.conflist" >"$T/net.d/10-standard.conflist"
containerd_config

ip netns add "$NODE"
in_node ip link set lo up
containerd_start || { echo "containerd's CRI did not come up" >&2; exit 1; }
# The sandbox image: busybox's httpd as its entrypoint (as in the e2e test).
containerd_pause_image

# The scheduler's fork, exec and exit events of the whole machine while the sets run, stamped
# with CLOCK_MONOTONIC like the driver's times. perf needs tracefs for the tracepoints' formats:
# mounted in a mount namespace of perf's own, so the machine's mounts stay as they are.
unshare -m --propagation private sh -c '
  mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
  exec perf record -q -a -k mono -o "$1" \
    -e sched:sched_process_fork -e sched:sched_process_exec -e sched:sched_process_exit' \
  _ "$T/perf.data" 2>"$T/perf.err" &
PERF_PID=$!
sleep 2
kill -0 "$PERF_PID" 2>/dev/null || { echo "perf record failed: $(cat "$T/perf.err")" >&2; exit 1; }

# The floor: 20 forks and execs of the static no-op from a shell in the node, 20 ms apart.
noop_set() {
  in_node bash -c 'for i in $(seq 20); do "$1"; sleep 0.02; done' _ "$NOOP"
}

# The rest of bridge's floor: one line "ADD_NS DEL_NS" per set into
# $T/veth.floor (bench/lib/node.sh).
veth_floor() { veth_pair_cost "$T" >>"$T/veth.floor"; }

sets=(ours ourbridge reference)
[ -z "$OTHER_PORTMAP" ] || sets+=(other)
port=30000
for others in $OTHERS; do
  # The other mappings, loaded before this node size's first sandbox (the restore replaces
  # table nat: the bridge's and portmap's shared chains are made again by the first ADD).
  iptables_population "$others" nodegate >"$T/population.rules"
  in_node iptables-nft-restore <"$T/population.rules"
  echo "node with $others other mappings: $(in_node iptables-nft-save -t nat | grep -c -- '-A CNI-HOSTPORT-DNAT') entry rules" >&2
  for round in $(seq "$ROUNDS"); do
    order=("${sets[@]}")
    if [ $((round % 2)) -eq 0 ]; then  # alternate: ours first, then the reference first
      order=()
      for ((k = ${#sets[@]} - 1; k >= 0; k--)); do order+=("${sets[$k]}"); done
    fi
    for set in "${order[@]}"; do
      use_plugins "$set"
      rm -rf "$T/ipam" && mkdir -p "$T/ipam"
      settle
      noop_set
      veth_floor
      out="$T/sets/$set-$others-$round.json"
      if ! "$PY" "$SRC/bench/podstart/driver.py" "$SOCK" "$out" "$set-$others-$round" "$SET" \
        "$port" "/$CGROUP"; then
        echo "podstart: the $set set at $others other mappings failed" >&2
        exit 1
      fi
      port=$((port + SET))
      echo "  $set, $others other mappings, round $round: $SET sandboxes" >&2
    done
  done
done

# Nothing may be left: no sandbox, no rule naming a bench port, no reservation.
left="$(cri list)"
[ -z "$left" ] || { echo "podstart: sandboxes left: $left" >&2; exit 1; }
rules="$(in_node iptables-nft-save -t nat | grep -c -E 'dport (3[0-9]{4})' || true)"
[ "$rules" = 0 ] || { echo "podstart: $rules rules of bench ports left" >&2; exit 1; }

kill -INT "$PERF_PID"
wait "$PERF_PID" || true
PERF_PID=""
perf script -i "$T/perf.data" -F pid,tid,time,event,trace 2>/dev/null >"$T/perf.txt"
"$PY" "$SRC/bench/podstart/report.py" "$T/sets" "$T/perf.txt" "$T/plugins/" "$NOOP" "$OTHERS" \
  "$T/veth.floor"
