#!/usr/bin/env bash
# make demo: the main job of nodegate, shown as a person would want to see it. Everything runs
# in throwaway network namespaces ("node", "client", and the container's) with podman's state
# in a temporary folder; all of it is removed at the end, also on failure or Ctrl-C.
#
#   bash scripts/demo.sh build/bin
#   DEMO_RUNTIME=netns bash scripts/demo.sh build/bin   # without podman: a busybox namespace
set -euo pipefail

BIN="$(cd "${1:-build/bin}" && pwd)"
SRC="$(cd "$(dirname "$0")/.." && pwd)"
NG="$BIN/nodegate"
RATE_MBIT="${DEMO_RATE_MBIT:-20}"

if [ "$(id -u)" -ne 0 ]; then
  echo "demo: run as root (it creates network namespaces)" >&2
  exit 1
fi

T="$(mktemp -d /tmp/ng-demo.XXXXXX)"
NODE="ngdemo-node-$$"
CLIENT="ngdemo-client-$$"
CTR="ngdemo-ctr-$$"
RUNTIME="${DEMO_RUNTIME:-}"
if [ -z "$RUNTIME" ]; then
  if command -v podman >/dev/null && command -v runc >/dev/null; then RUNTIME=podman; else RUNTIME=netns; fi
fi
PIDS=()

bold() { printf '\033[1m%s\033[0m\n' "$*"; }
heading() { echo; bold "== $*"; }
say() { echo "   $*"; }
show() {  # show CMD...: print the command as a person would type it, run it, indent its output
  local text="$*"
  text="${text/#P /podman }"
  text="${text/#in_client /(in the client) }"
  text="${text/#in_node /(on the node) }"
  text="${text/#cni /nodegate cni }"
  text="${text//$BIN\//}"
  printf '   \033[2m$ %s\033[0m\n' "$text"
  "$@" 2>&1 | sed 's/^/     /'
  return "${PIPESTATUS[0]}"
}

# shellcheck source=lib/node.sh
source "$SRC/scripts/lib/node.sh"  # P, in_node, in_client, node_* set-up and removal
CACHE_DIR=""  # the runtime's result cache: podman's (/var/lib/cni) or our own in $T
cni() { in_node "$NG" cni "$@" --conf-dir "$T/net.d" --cni-path "$T/plugins" --cache-dir "$CACHE_DIR"; }

cleanup() {
  set +e
  trap - EXIT INT TERM
  echo
  bold "== cleaning up"
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null; done
  if [ "$RUNTIME" != podman ] && [ -e "/run/netns/$CTR" ]; then
    cni del demo "$CTR" --container-id demo >/dev/null 2>&1
  fi
  ip netns del "$CTR" 2>/dev/null
  [ ! -d "$T/etcd" ] || bash "$SRC/scripts/lib/etcd_cluster.sh" stop "$T/etcd" >/dev/null 2>&1
  node_remove
  say "namespaces $NODE, $CLIENT removed; $T removed"
}
trap cleanup EXIT
trap 'echo; echo "interrupted"; exit 130' INT TERM

heading "nodegate demo: a container through our CNI plugins, then admission"
say "plugins: bridge, host-local, portmap, bandwidth from $BIN (loopback: Debian's)"
say "runtime: $RUNTIME; everything happens in namespaces $NODE and $CLIENT"

# --- the node ---------------------------------------------------------------------------------
mkdir -p "$T"/{net.d,ipam,cache,www}
node_plugin_dir "$BIN"
# The standard example chain, with its address store here and the shaping rate set in the
# bandwidth plugin's own config (podman has no flag for the bandwidth capability).
BPS=$((RATE_MBIT * 1000000))
sed -e "s|\"type\": \"host-local\",|\"type\": \"host-local\", \"dataDir\": \"$T/ipam\",|" \
  -e 's|"name": "nodegate"|"name": "demo"|' -e 's|"bridge": "ng0"|"bridge": "demo0"|' \
  -e "s|\"capabilities\": {\"bandwidth\": true}|\"ingressRate\": $BPS, \"ingressBurst\": $((BPS / 10)), \"egressRate\": $BPS, \"egressBurst\": $((BPS / 10))|" \
  "$SRC/conf/examples/10-standard.conflist" >"$T/net.d/10-demo.conflist"
node_and_client "ngd$$"

heading "1. the configuration, checked before any runtime uses it"
show "$NG" conf validate "$T/net.d" --cni-path "$T/plugins"

heading "2. a container gets an address from our IPAM and a mapped host port"
echo "hello from a container behind nodegate" >"$T/www/index.html"
if [ "$RUNTIME" = podman ]; then
  CACHE_DIR=/var/lib/cni
  node_podman_conf
  node_busybox_image localhost/ngdemo:1 "sh httpd sleep"
  show P run -d --name web --network demo -p 8080:80 -v "$T/www:/www:ro" localhost/ngdemo:1 \
    httpd -f -p 80 -h /www
  CID="$(P inspect -f '{{.Id}}' web)"
  IP="$(P inspect -f '{{.NetworkSettings.Networks.demo.IPAddress}}' web)"
  CTR_NETNS="$(P inspect -f '{{.NetworkSettings.SandboxKey}}' web)"
else
  CACHE_DIR="$T/cache"
  ip netns add "$CTR"
  ip netns exec "$CTR" ip link set lo up
  show cni add demo "$CTR" --container-id demo -p 8080:80
  nsenter --net="/run/netns/$CTR" busybox httpd -f -p 80 -h "$T/www" &
  PIDS+=($!)
  CID=demo
  IP="$(nsenter --net="/run/netns/$CTR" ip -4 -o addr show eth0 | awk '{print $4}' | cut -d/ -f1)"
  CTR_NETNS="/run/netns/$CTR"
fi
say "container address: $IP   (host-local reservation: $(ls "$T/ipam/demo" | grep -E '^[0-9a-f.:]+$' | grep '[.:]' | tr '\n' ' '))"
node_listening "$CTR_NETNS" -t 80 || say "(the container's httpd is not listening yet)"
heading "3. reached through the mapped host port"
show in_client timeout 5 busybox wget -qO- http://198.51.100.1:8080/
say "(from the client namespace, through the node's address 198.51.100.1:8080)"
show in_node timeout 5 busybox wget -qO- http://127.0.0.1:8080/
say "(from the node itself, through 127.0.0.1:8080)"
say "the rules portmap made, as an operator lists them ($(in_node iptables --version)):"
in_node iptables -t nat -S 2>/dev/null | grep -E 'dport 8080|dports 8080|CNI-HOSTPORT-DNAT -' |
  head -6 | sed 's/^/     /'

heading "4. shaped to $RATE_MBIT Mbit/s, measured with iperf3"
nsenter --net="$CTR_NETNS" iperf3 -s -1 -p 5201 >/dev/null 2>&1 &
PIDS+=($!)
node_listening "$CTR_NETNS" -t 5201 || true
in_rate="$(in_node iperf3 -c "$IP" -p 5201 -t 3 -f m 2>/dev/null | awk '/receiver/ {print $(NF-2), $(NF-1)}')"
nsenter --net="$CTR_NETNS" iperf3 -s -1 -p 5202 >/dev/null 2>&1 &
PIDS+=($!)
node_listening "$CTR_NETNS" -t 5202 || true
out_rate="$(in_node iperf3 -c "$IP" -p 5202 -t 3 -f m -R 2>/dev/null | awk '/receiver/ {print $(NF-2), $(NF-1)}')"
say "into the container:   ${in_rate:-no measurement}   (limit $RATE_MBIT Mbits/sec)"
say "out of the container: ${out_rate:-no measurement}   (limit $RATE_MBIT Mbits/sec)"
say "qdiscs bandwidth made:"
in_node tc qdisc show | grep -E 'tbf|ingress' | sed 's/^/     /'

heading "5. CHECK: every plugin confirms what it made is still there"
show cni check demo --container-id "$CID"
say "(the driver reads the result the runtime cached, in libcni's format)"

heading "6. removed cleanly"
if [ "$RUNTIME" = podman ]; then
  show P rm -f -t 0 web
else
  show cni del demo "$CTR" --container-id demo
fi
# (each count is the listing's, or "could not look: ..." when a listing fails)
rules="$(node_rules_matching 'CNI-DN-\|dport 8080')" || true  # shown as it is
addrs="$(node_reservations)" || true
ifbs="$(node_bwp_devices)" || true  # once DEL's helper has deleted the retired (bwpdel*) ifb
say "per-container rules left: $rules   reserved addresses left: $addrs   bwp devices left: $ifbs"

heading "7. admission: will this DNS DaemonSet pod fit on the node?"
say "the node's static pods: $(ls "$SRC/conf/manifests" | tr '\n' ' ')"
show "$NG" admit --manifests "$SRC/conf/manifests" "$SRC/conf/candidates/coredns-hostnetwork.yaml" || true
say "(no process listens on 8080: the pod is rejected because another pod declares the port)"

heading "8. nodegate ports: who holds each host port of the node"
say "declared by pods, mapped by portmap, listened on by processes: side by side, with a verdict"
nsenter --net="/run/netns/$NODE" python3 -c 'import socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 9100)); s.listen(); time.sleep(60)' &
PIDS+=($!)
sleep 0.5
show in_node "$NG" ports --manifests "$SRC/conf/manifests" --cni-cache "$CACHE_DIR" || true
say "(8080: a static pod declares it and nothing listens, which is what the scheduler counts;"
say " 9100: a process listens that no pod declares, so a pod asking for it would fail to bind)"

heading "9. nodegate guard: install a static pod only when the node admits it"
mkdir -p "$T/manifests"
cp "$SRC"/conf/manifests/*.yaml "$T/manifests/"
show "$NG" guard --manifests "$T/manifests" "$SRC/conf/candidates/coredns-hostnetwork.yaml" || true
say "folder after the refusal: $(ls "$T/manifests" | tr '\n' ' ')"
sed -e 's/"-health-port", "8080"/"-health-port", "8081"/' -e 's/containerPort: 8080/containerPort: 8081/' \
  "$SRC/conf/candidates/coredns-hostnetwork.yaml" >"$T/node-local-dns.yaml"
say "moving the DNS pod's health port to 8081, and trying again:"
show "$NG" guard --manifests "$T/manifests" "$T/node-local-dns.yaml" || true
say "folder now: $(ls "$T/manifests" | tr '\n' ' ')"

heading "10. a control-plane static pod on a full node: the kubelet evicts others to admit it"
CP="$SRC/tests/admit/testdata/control-plane"
say "node cp-1 has 2 CPUs and 4Gi; its pods already ask for 1800m and 2374Mi:"
say "a batch job (BestEffort), two web caches (Burstable), an exporter (Guaranteed), coredns (critical)"
mkdir -p "$T/cp-manifests"
show "$NG" guard --node "$CP/node.yaml" --pods "$CP/pods.yaml" --manifests "$T/cp-manifests" \
  "$CP/kube-apiserver.yaml" || true
say "(a static pod short only of resources is not rejected: the kubelet evicts pods for it,"
say " BestEffort and Burstable before Guaranteed, never critical ones; evicting is your call)"
show "$NG" guard --allow-preemption --node "$CP/node.yaml" --pods "$CP/pods.yaml" \
  --manifests "$T/cp-manifests" "$CP/kube-apiserver.yaml" || true
say "folder now: $(ls "$T/cp-manifests" | tr '\n' ' ')"

heading "11. nodegate webhook: the same DNS pod created through the API with a fixed nodeName"
say "a pod with spec.nodeName never meets the scheduler: without a check at the door, the kubelet"
say "marks it Failed and a ReplicaSet makes another at once. What the kubelet would say:"
dns_pod="$T/dns-pod.yaml"
sed -e 's/^spec:$/spec:\n  nodeName: worker-1/' "$SRC/conf/candidates/coredns-hostnetwork.yaml" >"$dns_pod"
show "$NG" admit --profile kubelet --node "$SRC/tests/admit/testdata/node.yaml" \
  --manifests "$SRC/conf/manifests" "$dns_pod" || true
say "with nodegate webhook (a stand-in API server: node worker-1, the mirror pods of its static pods):"
python3 "$SRC/scripts/demo-webhook.py" "$NG" "$SRC" || true
say "(the CREATE fails with the kubelet's reason and the holder of port 8080; no Failed pod, no storm)"

heading "12. cluster-ipam: two nodes draw their pods' addresses from one pool in etcd"
say "three etcd members on loopback (Debian's etcd-server, TLS with a throwaway CA):"
bash "$SRC/scripts/lib/etcd_cluster.sh" start "$T/etcd" >/dev/null
say "$(paste -sd' ' "$T/etcd/endpoints")"
# One conflist per node, differing only in nodeName (on a cluster: the same file, the node's name
# from $KUBERNETES_NODE_NAME or the host name).
pool_conf() {  # pool_conf NODE AGENT_SOCKET ("": the plugin alone)
  printf '{"cniVersion":"1.1.0","name":"pods","plugins":[{"type":"ptp","ipam":{"type":"cluster-ipam",'
  printf '"ranges":[[{"subnet":"10.244.0.0/16","blockSize":28}]],"nodeName":"%s",' "$1"
  printf '"agentSocket":"%s","lockDir":"%s/locks",' "$2" "$T"
  printf '"etcd":{"endpoints":[%s],' "$(sed 's/.*/"&"/' "$T/etcd/endpoints" | paste -sd,)"
  printf '"caFile":"%s/pki/ca.crt","certFile":"%s/pki/client.crt","keyFile":"%s/pki/client.key"}}}]}' \
    "$T/etcd" "$T/etcd" "$T/etcd"
}
ipam_call() {  # ipam_call NODE VERB POD: cluster-ipam as the node's main plugin calls it
  python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); p=c["plugins"][0]; p["name"]=c["name"]
p["cniVersion"]=c["cniVersion"]; print(json.dumps(p))' "$T/ipam-$1.conflist" |
    CNI_COMMAND="$2" CNI_CONTAINERID="$3" CNI_NETNS=/run/netns/none CNI_IFNAME=eth0 CNI_PATH="$BIN" \
      "$BIN/cluster-ipam"
}
# node-a has its node agent (cluster-ipam agent: keeps the etcd TLS connection, the plugin
# forwards its calls to it); node-b's plugin works alone.
"$BIN/cluster-ipam" agent --socket "$T/agent-node-a.sock" 2>"$T/agent-node-a.log" &
AGENT_PID=$!
PIDS+=("$AGENT_PID")
for _ in $(seq 100); do [ -S "$T/agent-node-a.sock" ] && break; sleep 0.05; done
say "node-a's agent: $(head -1 "$T/agent-node-a.log")"
pool_conf node-a "$T/agent-node-a.sock" >"$T/ipam-node-a.conflist"
pool_conf node-b "" >"$T/ipam-node-b.conflist"
for pod in 1 2 3; do
  for node in node-a node-b; do
    ip="$(ipam_call "$node" ADD "$node-pod$pod" | python3 -c 'import json,sys; print(json.load(sys.stdin)["ips"][0]["address"])')"
    say "$node, pod $pod: $ip"
  done
done
show "$NG" ipam --conf "$T/ipam-node-a.conflist" show
say "(each node claimed a /28 block with one transaction; each ADD was one read and one transaction)"
for pod in 1 2 3; do for node in node-a node-b; do ipam_call "$node" DEL "$node-pod$pod"; done; done
kill -TERM "$AGENT_PID" && wait "$AGENT_PID" 2>/dev/null
say "node-a's agent, on SIGTERM: $(tail -1 "$T/agent-node-a.log")"
show "$NG" ipam --conf "$T/ipam-node-a.conflist" check

heading "13. kubectl nodegate explain: the seed story from the cluster's side"
say "a stand-in of the API server's contract (no kube-apiserver here) with five nodes: the CoreDNS"
say "DaemonSet (hostNetwork, 53/UDP) runs on four; on n3 its pod stays Pending. Which pod is in the way?"
python3 "$SRC/scripts/demo-explain.py" "$BIN" "$SRC" || true
say "(the scheduler's line says only that ports were not free on 1 node; nodegate names the pod"
say " holding 53/UDP there and its DaemonSet, and that preemption cannot help: same priority)"
