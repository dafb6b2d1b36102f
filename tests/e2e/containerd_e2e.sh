#!/usr/bin/env bash
# End-to-end through the runtime a kubelet talks to: Debian's containerd 1.6 with its CRI
# plugin, started by hand inside a throwaway node namespace, driven over the CRI (gRPC) by
# tests/e2e/cri_client.py as a kubelet would drive it. The pod network is Debian's bridge and
# loopback with OUR host-local, portmap and bandwidth (conf/examples/10-standard.conflist).
# Everything (containerd's root, state, socket, runc root, pod netns files, CNI config, IPAM
# store) lives in a temp folder or namespace made here and is removed on exit, also on failure
# or Ctrl-C; containerd and its shims are stopped by PID.
#
#   E2E_PLUGINS=reference bash tests/e2e/containerd_e2e.sh   # Debian's plugins instead of ours
#   E2E_RECORD=DIR bash tests/e2e/containerd_e2e.sh          # also record every host-local,
#       portmap and bandwidth call (CNI_* environment and stdin) as
#       DIR/NN-PHASE-PLUGIN-COMMAND.json, with temp paths and random IDs normalised
#       (tests/e2e/cni_record.py; tests/testdata/containerd/README.md)
#
# Checks:
#   1. RunPodSandbox with a TCP (18080->8080) and a UDP (18053->53) port mapping and the
#      kubernetes.io/ingress-bandwidth and egress-bandwidth annotations (10M): the sandbox is
#      READY with an address from our host-local range, its netns is under the temp folder;
#   2. the pod's httpd is reached from a client namespace through 198.51.100.1:18080 and from
#      the node through 127.0.0.1:18080; a UDP echo in the pod through 198.51.100.1:18053;
#   3. iperf3 into and out of the pod runs at about 10 Mbit/s (between 3 and 15) once the
#      burst containerd asks for is used up;
#   4. StopPodSandbox and RemovePodSandbox leave no rule mentioning the ports or the sandbox,
#      no reservation, no tbf qdisc, no bwp ifb, no veth and no pod netns.
set -euo pipefail

BIN="$(cd "${NODEGATE_BIN_DIR:-build/bin}" && pwd)"
SRC="$(cd "${NODEGATE_SOURCE_DIR:-.}" && pwd)"
PLUGINS_FROM="${E2E_PLUGINS:-ours}"
RECORD="${E2E_RECORD:-}"

if [ "$(id -u)" -ne 0 ]; then
  echo "e2e: needs root (creates network namespaces and runs containerd)" >&2
  exit 1
fi
[ -z "$RECORD" ] || RECORD="$(mkdir -p "$RECORD" && cd "$RECORD" && pwd)"

T="$(mktemp -d /tmp/ng-ctd.XXXXXX)"
NODE="ng-ctd-node-$$"
CLIENT="ng-ctd-cli-$$"
C="$T/containerd"             # containerd's root, state, socket, runc root, log
SOCK="$C/containerd.sock"
IMAGE="localhost/ngpause:1"
CTD_PID=""
HELPERS=()                    # PIDs of iperf3/socat servers started in the pod's netns
SANDBOX=""
CGROUP="nodegate-e2e-$$"     # the pod's cgroup parent, in every hierarchy
# containerd 1.6 puts its shims' sockets in /run/containerd/s whatever its state folder is:
# the folders this test makes there are removed at the end.
MADE_RUN_DIRS=""
[ -d /run/containerd ] || MADE_RUN_DIRS="/run/containerd/s /run/containerd"
[ -n "$MADE_RUN_DIRS" ] || [ -d /run/containerd/s ] || MADE_RUN_DIRS="/run/containerd/s"

# shellcheck source=../../scripts/lib/node.sh
source "$SRC/scripts/lib/node.sh"  # in_node, in_client, node_* set-up, checks and removal
# shellcheck source=../../scripts/lib/check.sh
source "$SRC/scripts/lib/check.sh"  # ok, fail, expect_eq, FAILED

# Debian's python, the one python3-grpcio is installed for (a python3 earlier in PATH may not
# have grpc).
PY=/usr/bin/python3
cri() { timeout 120 "$PY" "$SRC/tests/e2e/cri_client.py" "$SOCK" "$@"; }

# PIDs of the shims this containerd started: they carry "-address $SOCK".
shim_pids() {
  local d
  for d in /proc/[0-9]*; do
    [ "$(cat "$d/comm" 2>/dev/null)" = containerd-shim ] || continue
    tr '\0' ' ' <"$d/cmdline" 2>/dev/null | grep -qF -- "-address $SOCK " && echo "${d#/proc/}"
  done
}

cleanup() {
  set +e
  for pid in "${HELPERS[@]}"; do kill "$pid" 2>/dev/null; done
  if [ -n "$CTD_PID" ] && kill -0 "$CTD_PID" 2>/dev/null; then
    # What a kubelet does before it goes: every sandbox stopped and removed (CNI DEL).
    for id in $(cri list 2>/dev/null); do
      cri stop "$id" >/dev/null 2>&1
      cri remove "$id" >/dev/null 2>&1
    done
    kill "$CTD_PID"
    for _ in $(seq 50); do kill -0 "$CTD_PID" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$CTD_PID" 2>/dev/null
  fi
  # Whatever is left: containers by runc's own state, then the shims by PID and their
  # sockets (named by a hash of containerd's address, namespace and container ID).
  local left
  left="$(runc --root "$C/runc/k8s.io" list -q 2>/dev/null)"
  for id in $left; do runc --root "$C/runc/k8s.io" delete -f "$id" >/dev/null 2>&1; done
  for pid in $(shim_pids); do kill -9 "$pid" 2>/dev/null; done
  for id in $left $SANDBOX; do
    rm -f "/run/containerd/s/$(printf %s "$SOCK/k8s.io/$id" | sha256sum | cut -d' ' -f1)"
    # libcni's cache (containerd 1.6 cannot move it): entries a DEL that never ran left
    rm -f /var/lib/cni/results/*-"$id"-*
  done
  # shellcheck disable=SC2086 # two folders, or one, or none
  [ -z "$MADE_RUN_DIRS" ] || rmdir $MADE_RUN_DIRS 2>/dev/null
  find /sys/fs/cgroup -maxdepth 3 -depth -type d \( -path "*/$CGROUP" -o -path "*/$CGROUP/*" \) \
    -exec rmdir {} + 2>/dev/null
  [ -z "$RECORD" ] || record_normalise
  node_remove  # the namespaces, every mount under $T (pod netns, rootfs), $T itself
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# $T/plugins as for podman; with E2E_RECORD, host-local, portmap and bandwidth are wrappers
# that save their CNI_* environment and stdin, then exec the plugin with the same stdin.
plugin_dir() {
  if [ "$PLUGINS_FROM" = reference ]; then node_plugin_dir /usr/lib/cni; else node_plugin_dir "$BIN"; fi
  [ -n "$RECORD" ] || return 0
  mkdir -p "$T/record"
  for p in host-local portmap bandwidth; do
    local real
    real="$(readlink -f "$T/plugins/$p")"
    rm "$T/plugins/$p"
    cat >"$T/plugins/$p" <<EOF
#!/bin/sh
f="$T/record/\$(date +%s%N).$p"
env | grep '^CNI_' >"\$f.env"
cat >"\$f.stdin"
exec "$real" <"\$f.stdin"
EOF
    chmod +x "$T/plugins/$p"
  done
}

# E2E_RECORD: the calls as golden inputs (tests/e2e/cni_record.py), also after a failure.
record_normalise() {
  "$PY" "$SRC/tests/e2e/cni_record.py" "$T/record" "$T" "$SANDBOX" "$RECORD"
}
record_phase() {  # record_phase NAME: the calls after this belong to the CRI call NAME
  [ -z "$RECORD" ] || echo "$1" >"$T/record/$(date +%s%N).phase"
}
recorded() {  # recorded COMMAND: how many calls of that command the wrappers saw so far
  cat "$T"/record/*.env 2>/dev/null | grep -c "^CNI_COMMAND=$1\$" || true
}

# A docker-archive image of busybox's httpd serving $T/img/www as its entrypoint: the
# sandbox ("pause") container then serves, and no other container is needed.
pause_image() {
  node_busybox_rootfs "sh httpd"
  mkdir -p "$T/img/www"
  echo hello-containerd >"$T/img/www/index.html"
  local d="$T/archive" diff
  rm -rf "$d" && mkdir -p "$d"
  tar -C "$T/img" -cf "$d/layer.tar" .
  diff="$(sha256sum "$d/layer.tar" | cut -d' ' -f1)"
  cat >"$d/config.json" <<EOF
{"architecture": "$(dpkg --print-architecture)", "os": "linux",
 "config": {"Env": ["PATH=/bin"], "Entrypoint": ["/bin/httpd", "-f", "-p", "8080", "-h", "/www"]},
 "rootfs": {"type": "layers", "diff_ids": ["sha256:$diff"]}}
EOF
  echo "[{\"Config\": \"config.json\", \"RepoTags\": [\"$IMAGE\"], \"Layers\": [\"layer.tar\"]}]" \
    >"$d/manifest.json"
  tar -C "$d" -cf "$T/pause.tar" manifest.json config.json layer.tar
}

containerd_config() {
  cat >"$C/config.toml" <<EOF
version = 2
root = "$C/root"
state = "$C/state"
temp = "$C/tmp"
[grpc]
  address = "$SOCK"
[ttrpc]
  address = "$SOCK.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$C/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$IMAGE"
  # these machines may refuse a lower oom_score_adj than containerd's own
  restrict_oom_score_adj = true
  # pod netns files under $C/state/io.containerd.grpc.v1.cri/netns, not /var/run/netns
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$T/plugins"
    conf_dir = "$T/net.d"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    # copies instead of overlay mounts: works on any file system $T is on
    snapshotter = "native"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        Root = "$C/runc"
EOF
}

# pod_listening -t|-u PORT: wait (up to 5 s) until a server in the pod's netns is bound to PORT.
pod_listening() {
  for _ in $(seq 50); do
    nsenter --net="$NETNS" ss -Hln "$1" "sport = :$2" | grep -q . && return 0
    sleep 0.1
  done
}

# RATE: whole Mbit/s the receiver got in the last 2 s of 5 s of iperf3 from the node to the pod,
# or with $1 = -R from the pod to the node; 0 when iperf3 failed. containerd asks for a burst of
# 2^32-1 bits, which the bandwidth plugin turns into a bucket of about 190 MB that lets the
# first seconds through at full speed: only the last 2 s show the shaped rate.
rate_mbit() {
  local pid
  nsenter --net="$NETNS" iperf3 -s -1 -J -i 0.5 -p 5201 >/dev/null 2>&1 &
  pid=$!
  HELPERS+=("$pid")
  pod_listening -t 5201
  RATE="$(in_node timeout 30 iperf3 -c "$IP" -p 5201 -t 5 -i 0.5 -J --get-server-output "$@" \
    2>/dev/null | "$PY" -c '
import json, sys
r = json.load(sys.stdin)
# the receiving side: the server, or the client with -R
side = r if r["start"]["test_start"]["reverse"] else r["server_output_json"]
last = [i["sum"] for i in side["intervals"] if i["sum"]["start"] >= 2.99]
print(round(sum(s["bytes"] for s in last) * 8 / sum(s["seconds"] for s in last) / 1e6))' \
    2>/dev/null || echo 0)"
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

echo "== setup: node namespace $NODE, client $CLIENT, plugins: $PLUGINS_FROM"
mkdir -p "$T"/{net.d,ipam} "$C"
plugin_dir
sed "s|\"type\": \"host-local\",|\"type\": \"host-local\", \"dataDir\": \"$T/ipam\",|" \
  "$SRC/conf/examples/10-standard.conflist" >"$T/net.d/10-standard.conflist"
containerd_config
node_and_client "ngk$$"
start=$SECONDS
# nsenter, not `ip netns exec`, which remounts /sys and hides the cgroups from runc.
nsenter --net="/run/netns/$NODE" containerd --config "$C/config.toml" --log-level info \
  >"$C/containerd.log" 2>&1 &
CTD_PID=$!  # nsenter execs containerd: this is containerd's PID
for _ in $(seq 100); do
  [ -S "$SOCK" ] && cri version >/dev/null 2>&1 && break
  kill -0 "$CTD_PID" 2>/dev/null || break
  sleep 0.1
done
if VERSION="$(cri version 2>&1)"; then
  ok "containerd up, CRI: $VERSION"
else
  fail "containerd's CRI did not come up: $VERSION"
  ctr --address "$SOCK" plugins ls 2>&1 | grep -v ' ok$' >&2 || true
  tail -20 "$C/containerd.log" >&2
  exit 1
fi
pause_image
ctr --address "$SOCK" -n k8s.io images import --snapshotter native "$T/pause.tar" >/dev/null
# (the list first: `ctr | grep -q` fails under pipefail when grep stops reading early)
IMAGES="$(ctr --address "$SOCK" -n k8s.io images ls -q)"
grep -qx "$IMAGE" <<<"$IMAGES" && ok "pause image $IMAGE imported" ||
  fail "pause image $IMAGE not in containerd's k8s.io namespace: $IMAGES"

# 2. The pod's httpd and a UDP echo through the host ports; the rules and qdiscs behind them.
check_traffic() {
  for _ in $(seq 20); do
    [ -n "$(in_node timeout 2 busybox wget -qO- "http://$IP:8080/" 2>/dev/null)" ] && break
    sleep 0.2
  done
  expect_eq hello-containerd "$(in_client timeout 5 busybox wget -qO- http://198.51.100.1:18080/ 2>&1 || true)" \
    "TCP client -> node 198.51.100.1:18080"
  expect_eq hello-containerd "$(in_node timeout 5 busybox wget -qO- http://127.0.0.1:18080/ 2>&1 || true)" \
    "TCP node -> 127.0.0.1:18080"
  # busybox has no UDP server: a socat echo in the pod's netns answers on port 53.
  nsenter --net="$NETNS" socat UDP4-RECVFROM:53,fork PIPE &
  HELPERS+=("$!")
  pod_listening -u 53
  expect_eq ping-udp "$(echo ping-udp | in_client timeout 5 socat -T2 - UDP4:198.51.100.1:18053 2>&1 || true)" \
    "UDP client -> node 198.51.100.1:18053"
  [ "$(node_rules_matching 18080)" -gt 0 ] && [ "$(node_rules_matching 18053)" -gt 0 ] &&
    ok "rules for 18080 and 18053 present" || fail "no rules for 18080 or 18053"
  [ "$(in_node tc qdisc show | grep -c tbf || true)" -ge 2 ] && ok "tbf qdiscs present" ||
    fail "fewer than 2 tbf qdiscs: $(in_node tc qdisc show | tr '\n' ';')"
}

# 3. iperf3 both ways against the 10M annotations.
check_shaping() {
  rate_mbit
  [ "$RATE" -gt 3 ] && [ "$RATE" -lt 15 ] && ok "ingress (node -> pod) $RATE Mbit/s" ||
    fail "ingress (node -> pod) $RATE Mbit/s, want 3-15"
  rate_mbit -R
  [ "$RATE" -gt 3 ] && [ "$RATE" -lt 15 ] && ok "egress (pod -> node) $RATE Mbit/s" ||
    fail "egress (pod -> node) $RATE Mbit/s, want 3-15"
  for pid in "${HELPERS[@]}"; do kill "$pid" 2>/dev/null || true; done
  HELPERS=()
}

echo "== 1. RunPodSandbox with port mappings and bandwidth annotations"
if SANDBOX="$(cri run --name web --uid 7c4c5c40-0000-4000-8000-00000000e2e0 --namespace default \
  --cgroup-parent "/$CGROUP" \
  --port tcp:18080:8080 --port udp:18053:53 \
  --annotation kubernetes.io/ingress-bandwidth=10M --annotation kubernetes.io/egress-bandwidth=10M \
  2>"$T/run.err")"; then
  echo "  sandbox ${SANDBOX:0:12}"
  STATUS="$(cri status "$SANDBOX")"
  field() { "$PY" -c "import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])" "$STATUS" "$1"; }
  IP="$(field ip)"
  NETNS="$(field netns)"
  expect_eq SANDBOX_READY "$(field state)" "PodSandboxStatus: READY"
  case "$IP" in 10.88.*) ok "address $IP from the host-local range" ;; *) fail "address '$IP'" ;; esac
  [ -f "$T/ipam/nodegate/$IP" ] && ok "reservation file for $IP" || fail "no reservation file for $IP"
  case "$NETNS" in "$C"/*) ok "pod netns under the temp folder" ;; *) fail "pod netns at '$NETNS'" ;; esac
  echo "== 2. traffic through the host ports"
  check_traffic
  echo "== 3. shaping: 10M each way"
  check_shaping
else
  # containerd keeps a sandbox whose network it could not tear down (SANDBOX_UNKNOWN): still
  # stop and remove it below, as a kubelet would, and see what is left.
  fail "RunPodSandbox: $(cat "$T/run.err")"
  SANDBOX="$(cri list 2>/dev/null | head -1 || true)"
  echo "== 2., 3. skipped: no sandbox running"
fi

echo "== 4. StopPodSandbox and RemovePodSandbox leave nothing behind"
if [ -n "$SANDBOX" ]; then
  [ -z "$RECORD" ] || echo "  before stop: $(recorded DEL) DEL calls recorded"
  record_phase stop
  cri stop "$SANDBOX" 2>"$T/stop.err" && ok "StopPodSandbox" || fail "StopPodSandbox: $(cat "$T/stop.err")"
  [ -z "$RECORD" ] || echo "  after stop: $(recorded DEL) DEL calls recorded"
  record_phase remove
  cri remove "$SANDBOX" 2>"$T/rm.err" && ok "RemovePodSandbox" || fail "RemovePodSandbox: $(cat "$T/rm.err")"
  [ -z "$RECORD" ] || echo "  after remove: $(recorded DEL) DEL calls recorded"
fi
expect_eq "" "$(cri list 2>&1)" "no sandbox left"
expect_eq 0 "$(node_rules_matching 18080)" "no rule mentions 18080"
expect_eq 0 "$(node_rules_matching 18053)" "no rule mentions 18053"
expect_eq 0 "$(node_rules_matching "${SANDBOX:-no-sandbox}")" "no rule mentions the sandbox ID"
expect_eq 0 "$(node_reservations)" "no address reserved"
expect_eq 0 "$(in_node tc qdisc show | grep -c tbf || true)" "no tbf qdisc"
expect_eq 0 "$(node_bwp_devices)" "no bwp device"
expect_eq 0 "$(in_node ip -o link show type veth | grep -vc "ngk$$" || true)" "no pod veth"
expect_eq 0 "$(grep -c " $C/state/[^ ]*netns" /proc/mounts || true)" "no pod netns mounted"
expect_eq 0 "$(find /var/lib/cni/results -name "*${SANDBOX:-no-sandbox}*" 2>/dev/null | wc -l)" \
  "no libcni cache entry (/var/lib/cni/results) for the sandbox"
echo "  ($((SECONDS - start)) s from containerd's start)"

if [ "$FAILED" -ne 0 ]; then
  echo "e2e: FAILED (plugins: $PLUGINS_FROM)" >&2
  exit 1
fi
echo "e2e: all checks passed (plugins: $PLUGINS_FROM)"
