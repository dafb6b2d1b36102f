#!/usr/bin/env bash
# `nodegate ports` benchmark: the whole process (exec to exit, -o json) on a node with MAPPINGS
# portmap mappings (the reference's iptables layout in nf_tables, the node's default), SOCKETS
# TCP listeners and bound UDP sockets held by one process, and PODS pods declaring host ports
# (--pods, a PodList), with a libcni cache entry per mapping (--cni-cache) so every mapping is
# named by its pod. Target: under 100 ms at 5,000 / 10,000 / 1,000. The cost of each source is
# printed too, so growth shows where it comes from.
#
#   bash bench/ports/bench.sh BUILD_DIR     (root; RUNS=N, MAPPINGS, SOCKETS, PODS)
set -euo pipefail
BUILD_DIR="$(cd "${1:-build}" && pwd)"
NG="$BUILD_DIR/bin/nodegate"
RUNS="${RUNS:-9}"
MAPPINGS="${MAPPINGS:-5000}"
SOCKETS="${SOCKETS:-10000}"
PODS="${PODS:-1000}"
NET=benchnet
WORK="$(mktemp -d /tmp/ng-ports-bench.XXXXXX)"
NODE="ng-ports-bench-$$"
HOLDER=""

cleanup() {
  [ -n "$HOLDER" ] && kill "$HOLDER" 2>/dev/null || true
  ip netns del "$NODE" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
# shellcheck source=bench/lib/node.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/node.sh"
# shellcheck source=bench/lib/results.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/results.sh"

[ "$(id -u)" = 0 ] || { echo "ports bench needs root (network namespaces)" >&2; exit 1; }
[ -x "$NG" ] || { echo "missing $NG (build first)" >&2; exit 1; }

make_node "$NODE"
iptables_population "$MAPPINGS" "$NET" > "$WORK/ipt.rules"
ip netns exec "$NODE" iptables-nft-restore < "$WORK/ipt.rules"

# The runtime's libcni cache: one result per mapped container, naming its pod.
mkdir -p "$WORK/cache"
awk -v n="$MAPPINGS" -v net="$NET" -v dir="$WORK/cache" 'BEGIN {
  for (i = 0; i < n; i++) {
    file = sprintf("%s/%s-other%d-eth0", dir, net, i)
    printf "{\"kind\":\"cniCacheV1\",\"containerId\":\"other%d\",\"config\":\"e30=\",\"ifName\":\"eth0\",\"networkName\":\"%s\",\"cniArgs\":[[\"K8S_POD_NAMESPACE\",\"bench\"],[\"K8S_POD_NAME\",\"pod-%d\"]]}\n", i, net, i > file
    close(file)
  }
}'

# Pods on the node: the first PODS mapped containers' pods, each declaring its host port.
awk -v n="$PODS" 'BEGIN {
  printf "{\"apiVersion\":\"v1\",\"kind\":\"PodList\",\"items\":["
  for (i = 0; i < n; i++) {
    printf "%s{\"metadata\":{\"name\":\"pod-%d\",\"namespace\":\"bench\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"ports\":[{\"containerPort\":80,\"hostPort\":%d}]}]},\"status\":{\"phase\":\"Running\"}}", (i ? "," : ""), i, 10000 + i
  }
  print "]}"
}' > "$WORK/pods.json"

# One process holding SOCKETS sockets: half TCP listeners, half bound UDP sockets.
cat > "$WORK/holder.py" <<'PY'
import resource, signal, socket, sys
n = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_NOFILE, (n + 256, n + 256))
held = []
for i in range(n):
    tcp = i % 2 == 0
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM if tcp else socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 30000 + i // 2))
    if tcp:
        s.listen(1)
    held.append(s)
print("ready", flush=True)
signal.pause()  # until the bench kills it
PY
mkfifo "$WORK/ready"
ip netns exec "$NODE" python3 "$WORK/holder.py" "$SOCKETS" > "$WORK/ready" &
HOLDER=$!
read -r _ < "$WORK/ready"

counts=$(ip netns exec "$NODE" "$NG" ports --pods "$WORK/pods.json" --cni-cache "$WORK/cache" -o json |
  python3 -c 'import json,sys; rows=json.load(sys.stdin)["ports"]
claims=lambda k: sum(len(r.get(k) or []) for r in rows)
print(len(rows), claims("declared"), claims("mapped"), claims("listening"))')
read -r rows declared mapped listening <<<"$counts"
echo "node: $MAPPINGS mappings, $SOCKETS sockets, $PODS pods -> $rows rows ($declared declared, $mapped mapped, $listening listening claims)"

# Median wall time of RUNS whole runs of `nodegate ports ARGS...` in the node.
time_ms() {
  ip netns exec "$NODE" env RUNS="$RUNS" NG="$NG" bash -c '
    for i in $(seq 1 "$RUNS"); do
      t0=$EPOCHREALTIME; "$NG" ports "$@" >/dev/null || exit 1; t1=$EPOCHREALTIME
      awk -v a="$t0" -v b="$t1" "BEGIN { printf \"%.3f\n\", (b - a) * 1000 }"
    done' _ "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

all=$(time_ms --pods "$WORK/pods.json" --cni-cache "$WORK/cache" -o json)
text=$(time_ms --pods "$WORK/pods.json" --cni-cache "$WORK/cache")
one=$(time_ms --pods "$WORK/pods.json" --cni-cache "$WORK/cache" --port 10000 -o json)
kernel=$(time_ms --cni-cache "$WORK/empty-cache" -o json)
echo
echo "nodegate ports, whole process, median of $RUNS (ms)"
printf '%-52s %8s\n' "everything, -o json" "$all" "everything, text" "$text" \
  "--port 10000 (one row)" "$one" "mappings and sockets only (no pods, no cache)" "$kernel"
echo "target: nodegate ports under 100 ms at $MAPPINGS mappings, $SOCKETS sockets, $PODS pods ($all): $(awk -v a="$all" 'BEGIN { print (a < 100) ? "met" : "MISSED" }')"
bench_result ports "nodegate ports -o json, whole process, $MAPPINGS mappings, $SOCKETS sockets, $PODS pods" "$all"
bench_result ports "nodegate ports --port (one row), same node" "$one"
