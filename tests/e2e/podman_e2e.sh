#!/usr/bin/env bash
# End-to-end through a real container runtime: podman 4.3 with its CNI backend, run inside a
# throwaway node namespace, with OUR bridge, host-local, portmap and bandwidth and Debian's
# loopback. Everything (podman storage, CNI config, IPAM store, namespaces) lives in a temp
# folder or namespace made here and is removed on exit, also on failure or Ctrl-C.
#
#   E2E_PLUGINS=reference bash tests/e2e/podman_e2e.sh   # same checks with Debian's plugins
#
# With Debian's plugins every check passes except CHECK: Debian's portmap 1.1.1 checks its IPv4
# rules with ip6tables too and fails ("could not check ipv6 dnat"), a reference bug.
#
# Checks:
#   1. a container started with -p serves HTTP reached from a client namespace through the
#      node's address and from the node through 127.0.0.1; `nodegate cni check` passes using the
#      result podman cached; `podman rm` removes every rule, reservation and device it made;
#   2. 30 containers on a shaped network started and removed in parallel batches leave no rule,
#      address file or bwp device behind, and no address is handed out twice;
#   3. `podman kube play` of a manifest with a hostPort works through our plugins; the same
#      manifest checked first with `nodegate admit` against the running manifests is rejected
#      when it would conflict, and the explanation names the holder.
set -euo pipefail

BIN="$(cd "${NODEGATE_BIN_DIR:-build/bin}" && pwd)"
SRC="$(cd "${NODEGATE_SOURCE_DIR:-.}" && pwd)"
PLUGINS_FROM="${E2E_PLUGINS:-ours}"
BATCH="${E2E_BATCH:-10}"
COUNT="${E2E_COUNT:-30}"

if [ "$(id -u)" -ne 0 ]; then
  echo "e2e: needs root (creates network namespaces and runs podman)" >&2
  exit 1
fi

T="$(mktemp -d /tmp/ng-e2e.XXXXXX)"
NODE="ng-e2e-node-$$"
CLIENT="ng-e2e-cli-$$"

# shellcheck source=../../scripts/lib/node.sh
source "$SRC/scripts/lib/node.sh"  # P, in_node, in_client, node_* set-up, checks and removal
# shellcheck source=../../scripts/lib/check.sh
source "$SRC/scripts/lib/check.sh"  # ok, fail, expect_eq, FAILED

cleanup() {
  set +e
  node_remove
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "== setup: node namespace $NODE, client $CLIENT, plugins: $PLUGINS_FROM"
mkdir -p "$T"/{net.d,ipam}
if [ "$PLUGINS_FROM" = reference ]; then node_plugin_dir /usr/lib/cni; else node_plugin_dir "$BIN"; fi
# The standard example, with its IPAM store in the temp folder; and a shaped variant whose
# bandwidth plugin shapes every container from its own config (podman has no bandwidth flag).
sed "s|\"type\": \"host-local\",|\"type\": \"host-local\", \"dataDir\": \"$T/ipam\",|" \
  "$SRC/conf/examples/10-standard.conflist" >"$T/net.d/10-standard.conflist"
sed -e "s|\"type\": \"host-local\",|\"type\": \"host-local\", \"dataDir\": \"$T/ipam\",|" \
  -e 's|"name": "nodegate"|"name": "shaped"|' -e 's|"bridge": "ng0"|"bridge": "ng9"|' \
  -e 's|10\.88\.|10.99.|g' \
  -e 's|"capabilities": {"bandwidth": true}|"egressRate": 50000000, "egressBurst": 4000000, "ingressRate": 50000000, "ingressBurst": 4000000|' \
  "$SRC/conf/examples/10-standard.conflist" >"$T/net.d/20-shaped.conflist"
"$BIN/nodegate" conf validate "$T/net.d" --cni-path "$T/plugins" >/dev/null ||
  fail "conf validate rejects the e2e configuration"

node_podman_conf localhost/ngpause:1
node_and_client "ngc$$"
node_busybox_image localhost/ngbox:1 "sh httpd sleep mkdir echo cat ip"
node_busybox_image localhost/ngpause:1 "sh httpd sleep mkdir echo cat ip" \
  --change 'ENTRYPOINT ["/bin/sleep", "2147483647"]'

serve_cmd() { echo "mkdir -p /www && echo $1 > /www/index.html && exec httpd -f -p 8080 -h /www"; }
# serving CONTAINER: wait until its httpd listens (podman returns once the container started,
# which may be long before, on a loaded node). A pod is named by its infra container.
serving() {
  local netns
  netns="$(P inspect -f '{{.NetworkSettings.SandboxKey}}' "$1")"
  node_listening "$netns" -t 8080 || fail "nothing listens on 8080 in $1's netns '$netns'"
}
infra_of() { P pod inspect -f '{{.InfraContainerID}}' "$1"; }

echo "== 1. a container with -p, reached from a client and from the node"
P run -d --name web --network nodegate -p 18080:8080 localhost/ngbox:1 sh -c "$(serve_cmd hello-nodegate)" >/dev/null
CID="$(P inspect -f '{{.Id}}' web)"
IP="$(P inspect -f '{{.NetworkSettings.Networks.nodegate.IPAddress}}' web)"
echo "  container web: $IP"
case "$IP" in 10.88.*) ok "address $IP from our host-local range" ;; *) fail "address '$IP'" ;; esac
[ -f "$T/ipam/nodegate/$IP" ] && ok "reservation file for $IP" || fail "no reservation file for $IP"
serving web
expect_eq hello-nodegate "$(in_client timeout 5 busybox wget -qO- http://198.51.100.1:18080/ 2>&1 || true)" \
  "client -> node 198.51.100.1:18080"
expect_eq hello-nodegate "$(in_node timeout 5 busybox wget -qO- http://127.0.0.1:18080/ 2>&1 || true)" \
  "node -> 127.0.0.1:18080"
CACHE="/var/lib/cni/results/nodegate-$CID-eth0"
[ -n "${E2E_SAVE_CACHE:-}" ] && cp "$CACHE" "$E2E_SAVE_CACHE"
if [ -f "$CACHE" ]; then
  # No NETNS given: the driver takes it, and the port mappings, from podman's cache entry.
  if in_node "$BIN/nodegate" cni check nodegate --container-id "$CID" \
    --conf-dir "$T/net.d" --cni-path "$T/plugins" >"$T/check.txt" 2>&1; then
    ok "nodegate cni check passes with the result podman cached"
  else
    fail "nodegate cni check on podman's cached result: $(cat "$T/check.txt")"
  fi
else
  fail "podman left no libcni cache entry at $CACHE"
fi
[ "$(node_rules_matching 18080)" -gt 0 ] && ok "port 18080 rules present" || fail "no rules for 18080"
# Drop-in on this node's iptables: the operator's own listing shows the mapping.
echo "  $(iptables --version): iptables -t nat -S | grep 18080"
in_node iptables -t nat -S 2>/dev/null | grep 18080 | sed 's/^/    /' || true
[ "$(in_node iptables -t nat -S 2>/dev/null | grep -c 'dport 18080')" -gt 0 ] &&
  ok "the node's iptables lists the mapping" || fail "iptables -t nat -S does not show port 18080"
P rm -f -t 0 web >/dev/null
expect_eq 0 "$(node_rules_matching 18080)" "podman rm: no rule mentions 18080"
expect_eq 0 "$(node_rules_matching "$CID")" "podman rm: no rule mentions the container"
expect_eq 0 "$(node_reservations)" "podman rm: no address reserved"
expect_eq 0 "$(count_lines -v "ngc$$" in_node ip -o link show type veth)" "podman rm: no container veth"
[ -f "$CACHE" ] && fail "cache entry left behind" || ok "podman rm: cache entry removed"

echo "== 2. $COUNT containers on a shaped network, started and removed in batches of $BATCH"
start=$SECONDS
for ((b = 0; b < COUNT; b += BATCH)); do
  for ((i = b; i < b + BATCH && i < COUNT; i++)); do
    P run -d --name "s$i" --network shaped -p "$((20000 + i)):8080" localhost/ngbox:1 \
      sleep 2147483647 >/dev/null &
  done
  wait
done
RUNNING="$(P ps -q --filter name='^s[0-9]+$' | wc -l)"
expect_eq "$COUNT" "$RUNNING" "$COUNT containers running"
ADDRS="$(for ((i = 0; i < COUNT; i++)); do P inspect -f '{{.NetworkSettings.Networks.shaped.IPAddress}}' "s$i"; done)"
expect_eq "$COUNT" "$(echo "$ADDRS" | sort -u | grep -c .)" "$COUNT distinct addresses"
expect_eq "$COUNT" "$(node_reservations)" "$COUNT reservation files"
expect_eq "$COUNT" "$(node_bwp_devices)" "$COUNT bwp (egress shaping) devices"
[ "$(node_rules_matching 'CNI-DN-')" -ge "$COUNT" ] && ok "per-container DNAT chains present" ||
  fail "fewer than $COUNT per-container DNAT chain lines"
for ((b = 0; b < COUNT; b += BATCH)); do
  for ((i = b; i < b + BATCH && i < COUNT; i++)); do
    P rm -f -t 0 "s$i" >/dev/null &
  done
  wait
done
echo "  ($((SECONDS - start)) s for start and removal)"
expect_eq 0 "$(count_lines . P ps -aq)" "no container left"
expect_eq 0 "$(node_reservations)" "no address file left"
expect_eq 0 "$(node_bwp_devices)" "no bwp device left"
expect_eq 0 "$(node_rules_matching 'CNI-DN-')" "no per-container DNAT chain left"
expect_eq 0 "$(node_rules_matching 'dport 20[0-9][0-9][0-9]')" "no rule for the mapped ports left"
expect_eq 0 "$(node_rules_matching 'dports 20[0-9][0-9][0-9]')" "no entry rule for the mapped ports left"
expect_eq 0 "$(count_lines tbf in_node tc qdisc show)" "no tbf qdisc left"

echo "== 3. kube play with a hostPort, checked first with nodegate admit / guard"
# $T/running holds the manifests of the pods that run (a static-pod folder): a manifest gets
# there only through `nodegate guard`, and only what is there is played.
mkdir -p "$T/running"
cat >"$T/web.yaml" <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: default
spec:
  containers:
    - name: httpd
      image: localhost/ngbox:1
      command: ["sh", "-c", "$(serve_cmd hello-kube)"]
      ports:
        - containerPort: 8080
          hostPort: 18081
YAML
# A second pod that wants the same host port, and one that does not.
sed -e 's/name: web$/name: web-copy/' "$T/web.yaml" >"$T/conflicting.yaml"
sed -e 's/name: web$/name: web-other/' -e 's/hostPort: 18081/hostPort: 18082/' \
  "$T/web.yaml" >"$T/other.yaml"
if "$BIN/nodegate" guard --manifests "$T/running" "$T/web.yaml" >"$T/admit1.txt" 2>&1; then
  ok "guard: web admitted and installed into the running folder"
  P kube play --network nodegate "$T/running/web.yaml" >/dev/null
else
  fail "guard rejected web on an empty node: $(cat "$T/admit1.txt")"
fi
serving "$(infra_of web)"
expect_eq hello-kube "$(in_node timeout 5 busybox wget -qO- http://127.0.0.1:18081/ 2>&1 || true)" \
  "kube play pod reached on node 127.0.0.1:18081"
expect_eq hello-kube "$(in_client timeout 5 busybox wget -qO- http://198.51.100.1:18081/ 2>&1 || true)" \
  "kube play pod reached from the client through 198.51.100.1:18081"
set +e
"$BIN/nodegate" admit --manifests "$T/running" "$T/conflicting.yaml" >"$T/admit2.txt" 2>&1
rc=$?
set -e
expect_eq 1 "$rc" "admit rejects a pod that wants hostPort 18081 too"
[ -f "$T/running/conflicting.yaml" ] && fail "a rejected manifest reached the folder" || true
grep -q "web" "$T/admit2.txt" && grep -q 18081 "$T/admit2.txt" &&
  ok "the explanation names the holder: $(grep -m1 18081 "$T/admit2.txt" | sed 's/^ *//')" ||
  fail "explanation does not name the holder: $(cat "$T/admit2.txt")"
if "$BIN/nodegate" guard --manifests "$T/running" "$T/other.yaml" >/dev/null 2>&1; then
  ok "guard admits and installs a pod on another host port"
  P kube play --network nodegate "$T/running/other.yaml" >/dev/null
  serving "$(infra_of web-other)"
  expect_eq hello-kube "$(in_node timeout 5 busybox wget -qO- http://127.0.0.1:18082/ 2>&1 || true)" \
    "second pod reached on 127.0.0.1:18082"
else
  fail "admit rejected a pod on a free host port"
fi
P pod rm -a -f -t 0 >/dev/null
expect_eq 0 "$(node_rules_matching 1808)" "pods removed: no rule for 18081/18082"
expect_eq 0 "$(node_reservations)" "pods removed: no address reserved"

if [ "$FAILED" -ne 0 ]; then
  echo "e2e: FAILED (plugins: $PLUGINS_FROM)" >&2
  exit 1
fi
echo "e2e: all checks passed (plugins: $PLUGINS_FROM)"
