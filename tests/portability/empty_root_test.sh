#!/usr/bin/env bash
# The executables where nothing else is: each runs chrooted in a root that holds only itself,
# /proc and /sys (no libc, no /etc, no iptables, no shell), in network, mount and PID
# namespaces of its own; a distroless node, or any node whose libc is not the build machine's.
# The kernel state the plugins leave is read from outside the root with this machine's tools,
# in the same private network namespace.
#
#   empty_root_test.sh
set -uo pipefail
. "$(dirname "$0")/lib.sh"
require_root

if [ "${1:-}" != --inside ]; then
  tmp=$(mktemp -d /tmp/ng-empty-root.XXXXXX)
  rc=0
  unshare --net --mount --pid --fork --kill-child --propagation private \
    bash "$0" --inside "$tmp" || rc=$?
  rm -rf "$tmp"
  exit "$rc"
fi
tmp=$2

passed=0
failed=0
ok() {
  passed=$((passed + 1))
  echo "  ok   $*"
}
bad() {
  failed=$((failed + 1))
  echo "  FAIL $*"
}
same() {
  if [ "$2" == "$3" ]; then ok "$1"; else bad "$1: want '$2', got '$3'"; fi
}

# A /run of this mount namespace's own: `ip netns add` below creates its files there, not in
# the machine's /run/netns. One root per executable: /EXE, /proc, /sys. lo up.
mount -t tmpfs -o mode=755 ng-run /run
ip link set lo up
for e in "${EXECUTABLES[@]}"; do
  r=$tmp/$e
  mkdir -p "$r/proc" "$r/sys"
  cp "$BIN_DIR/$e" "$r/$e"
  mount -t proc proc "$r/proc"
  mount -t sysfs sysfs "$r/sys"
done

# run EXE [VAR=VALUE...] -- ARGS...: EXE in its root with only the given environment, stdin
# from $stdin; stdout in $out, stderr in $err, exit status returned.
stdin=/dev/null
chroot=$(command -v chroot)
run() {
  local e=$1
  shift
  local vars=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do
    vars+=("$1")
    shift
  done
  shift
  local rc=0
  out=$(env -i "${vars[@]}" "$chroot" "$tmp/$e" "/$e" "$@" <"$stdin" 2>"$tmp/stderr") || rc=$?
  err=$(cat "$tmp/stderr")
  return $rc
}
# cni EXE VERB ID CONF: a CNI call, the container's namespace at /ctr in the root.
cni() {
  local e=$1 verb=$2 id=$3
  printf '%s' "$4" >"$tmp/stdin"
  stdin=$tmp/stdin
  run "$e" CNI_COMMAND="$verb" CNI_CONTAINERID="$id" CNI_NETNS=/ctr CNI_IFNAME=eth0 \
    CNI_PATH=/ -- || {
    local rc=$?
    stdin=/dev/null
    return $rc
  }
  stdin=/dev/null
}
expect_cni() {
  local what=$1
  shift
  if cni "$@"; then ok "$what"; else bad "$what (exit $?): $out $err"; fi
}

echo "== self-contained"
for e in "${EXECUTABLES[@]}"; do
  problems=$(static_problems "$BIN_DIR/$e" | paste -sd ';')
  if [ -z "$problems" ]; then
    ok "$e: no interpreter, no DT_NEEDED"
  else
    bad "$e: $problems: it cannot start where this machine's libraries are not"
  fi
done

echo "== VERSION"
for p in portmap bandwidth host-local bridge; do
  if run "$p" CNI_COMMAND=VERSION --; then
    if jq -e '.supportedVersions | index("0.4.0") and index("1.0.0")' <<<"$out" >/dev/null; then
      ok "$p VERSION"
    else
      bad "$p VERSION: $out"
    fi
  else
    bad "$p VERSION: $(head -c 300 <<<"$err")"
  fi
done
# --help prints the usage on stdout; --version names the build (version, commit, static).
if run nodegate -- --help && grep -q "usage: nodegate" <<<"$out"; then
  ok "nodegate --help"
else
  bad "nodegate --help: $(head -c 300 <<<"$out$err")"
fi
if run nodegate -- --version -o json && jq -e '.static == true and (.version | length > 0)' \
  <<<"$out" >/dev/null; then
  ok "nodegate --version"
else
  bad "nodegate --version: $(head -c 300 <<<"$out$err")"
fi

# A container: its namespace bound at /ctr in the plugins' roots, a veth to it from here.
ip netns add ctr
ip link add vc0 type veth peer name eth0 netns ctr
ip addr add 10.123.0.1/24 dev vc0
ip link set vc0 up
ip -n ctr addr add 10.123.0.2/24 dev eth0
ip -n ctr link set eth0 up
for e in portmap bandwidth host-local; do
  touch "$tmp/$e/ctr"
  mount --bind /run/netns/ctr "$tmp/$e/ctr"
done
prev='"prevResult":{"cniVersion":"1.0.0","interfaces":[{"name":"vc0"},{"name":"eth0","sandbox":"/ctr"}],
  "ips":[{"interface":1,"address":"10.123.0.2/24","gateway":"10.123.0.1"}]}'

echo "== host-local ADD/DEL"
conf='{"cniVersion":"1.0.0","name":"hl","type":"host-local",
  "ipam":{"type":"host-local","dataDir":"/state","ranges":[[{"subnet":"10.77.0.0/24"}]]}}'
expect_cni "ADD" host-local ADD c1 "$conf"
same "ADD's address" 10.77.0.2/24 "$(jq -r '.ips[0].address' <<<"$out" 2>&1)"
# The file reads "ID\r\nIFNAME", as the reference writes it.
same "recorded in the root" "c1 eth0" \
  "$(tr '\r\n' '  ' <"$tmp/host-local/state/hl/10.77.0.2" 2>&1 | tr -s ' ' | sed 's/ $//')"
expect_cni "DEL" host-local DEL c1 "$conf"
if [ -e "$tmp/host-local/state/hl/10.77.0.2" ]; then bad "address still allocated after DEL"; else ok "released"; fi

echo "== portmap ADD/CHECK/DEL (no iptables on the node: nft mode)"
conf='{"cniVersion":"1.0.0","name":"pt","type":"portmap","capabilities":{"portMappings":true},
  "runtimeConfig":{"portMappings":[{"hostPort":8080,"containerPort":80,"protocol":"tcp"}]},'"$prev"'}'
expect_cni "ADD" portmap ADD ctr1 "$conf"
rules=$(iptables-nft-save -t nat 2>&1)
if grep -q -- "--to-destination 10.123.0.2:80" <<<"$rules"; then ok "DNAT in nf_tables"; else bad "no DNAT in nf_tables: $rules"; fi
expect_cni "CHECK" portmap CHECK ctr1 "$conf"

echo "== nodegate ports"
mkdir -p "$tmp/nodegate/cache"
printf '%s' '{"kind":"cniCacheV1","containerId":"ctr1","ifName":"eth0","networkName":"pt",
  "cniArgs":[["K8S_POD_NAMESPACE","default"],["K8S_POD_NAME","web-1"]]}' >"$tmp/nodegate/cache/pt-ctr1-eth0"
if run nodegate -- ports -o json --cni-cache /cache; then ok "nodegate ports"; else bad "nodegate ports: $err"; fi
same "8080 mapped to the container, its pod" "ctr1 10.123.0.2:80 default/web-1" \
  "$(jq -r '.ports[] | select(.port == 8080) | .mapped[] | "\(.containerID) \(.target) \(.pod)"' <<<"$out" 2>&1)"

expect_cni "portmap DEL" portmap DEL ctr1 "$conf"
rules=$(iptables-nft-save -t nat 2>&1)
if grep -q 10.123.0.2 <<<"$rules"; then bad "a rule left after DEL"; else ok "no rule left after DEL"; fi

echo "== bandwidth ADD/CHECK/DEL"
conf='{"cniVersion":"1.0.0","name":"bw","type":"bandwidth","ingressRate":8000000,"ingressBurst":131072,
  "egressRate":8000000,"egressBurst":131072,'"$prev"'}'
expect_cni "ADD" bandwidth ADD ctr1 "$conf"
# (Read first, then matched: under pipefail, grep -q closing the pipe early fails the writer.)
qdiscs=$(tc qdisc show dev vc0)
if grep -q "qdisc tbf" <<<"$qdiscs"; then ok "tbf on the host veth"; else bad "no tbf: $qdiscs"; fi
if [ -n "$(ip -br link show type ifb)" ]; then ok "an ifb for egress"; else bad "no ifb"; fi
expect_cni "CHECK" bandwidth CHECK ctr1 "$conf"
expect_cni "DEL" bandwidth DEL ctr1 "$conf"
qdiscs=$(tc qdisc show dev vc0)
if grep -q "qdisc tbf" <<<"$qdiscs"; then bad "tbf left after DEL"; else ok "no tbf after DEL"; fi

echo "== bridge ADD/CHECK/DEL (host-local beside it in its root; no iptables: nft mode)"
cp "$BIN_DIR/host-local" "$tmp/bridge/host-local"
ip netns add ctrb
touch "$tmp/bridge/ctr"
mount --bind /run/netns/ctrb "$tmp/bridge/ctr"
conf='{"cniVersion":"1.0.0","name":"br","type":"bridge","bridge":"ngbr0","isGateway":true,
  "ipMasq":true,"ipam":{"type":"host-local","dataDir":"/state","ranges":[[{"subnet":"10.78.0.0/24"}]]}}'
expect_cni "ADD" bridge ADD cb1 "$conf"
added=$out
same "the container's address" 10.78.0.2/24 "$(ip -n ctrb -o -4 addr show dev eth0 2>&1 | awk '{print $4}')"
same "the gateway on the bridge" 10.78.0.1/24 "$(ip -o -4 addr show dev ngbr0 2>&1 | awk '{print $4}')"
rules=$(iptables-nft-save -t nat 2>&1)
if grep -q -- "-s 10.78.0.2/32 .*-j CNI-" <<<"$rules"; then ok "masquerade in nf_tables"; else bad "no masquerade: $rules"; fi
expect_cni "CHECK" bridge CHECK cb1 "$(jq -c --argjson p "$added" '. + {prevResult: $p}' <<<"$conf" 2>&1)"
expect_cni "DEL" bridge DEL cb1 "$conf"
same "no veth left on the bridge" "" "$(ip -o link show master ngbr0 2>&1)"
rules=$(iptables-nft-save -t nat 2>&1)
if grep -q 10.78.0.2 <<<"$rules"; then bad "a rule left after DEL"; else ok "no rule left after DEL"; fi
if [ -e "$tmp/bridge/state/br/10.78.0.2" ]; then bad "address still reserved after DEL"; else ok "released"; fi

echo "== nodegate admit"
mkdir -p "$tmp/nodegate/data"
cp "$SOURCE_DIR/tests/admit/testdata/node.yaml" "$tmp/nodegate/data/"
cp -r "$SOURCE_DIR/conf/manifests" "$tmp/nodegate/data/manifests"
cp "$SOURCE_DIR/conf/candidates/coredns-hostnetwork.yaml" "$tmp/nodegate/data/"
rc=0
run nodegate -- admit -o json --node /data/node.yaml --manifests /data/manifests \
  /data/coredns-hostnetwork.yaml || rc=$?
same "refused: exit 1" 1 "$rc"
same "refused by NodePorts" NodePorts "$(jq -r '.pods[0].failures[0].plugin' <<<"$out" 2>&1)"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
