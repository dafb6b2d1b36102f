#!/usr/bin/env bash
# Our portmap in nft mode beside the reference portmap and the node's own iptables-nft, for
# any iptables-nft version (docs/iptables-nft-encoding.md): whatever that node's iptables is,
# it must treat our rules exactly as the rules the reference makes through it.
#
#   same-save    the same ADDs made by the reference on one node and by us on another:
#                the node's iptables-nft-save / ip6tables-nft-save print the same lines;
#   shared-once  ours then the reference's ADD (and the other way round) on one node: the
#                reference's `iptables -C` recognises our shared rules (and we its): one
#                masquerade, one SETMARK, one jump from each built-in chain, per family;
#   check-all    on a node holding our rules, `iptables -C` finds every line the node's save
#                prints for the reference's rules of the same ADDs;
#   delete-all   and `iptables -D` of those lines removes every rule of ours (the reference's
#                DEL feeds such lines to -D);
#   cross-del    the reference's DEL removes our container's rules, ours removes the
#                reference's container's rules, our CHECK passes on the reference's rules.
#
# Where the node's tools come from (each check runs in its own private network and mount
# namespaces, never the machine's):
#   (default)    this machine's iptables-nft and /usr/lib/cni/portmap (Debian 12: 1.8.9, v1.1.1);
#   --root DIR   a root holding a node userland (iptables, the reference's containernetworking-
#                plugins): both run chrooted into DIR, e.g. a Debian 11 root (1.8.7, 0.9.0);
#   --path DIR   DIR first on PATH, e.g. links named iptables, iptables-nft, iptables-nft-save,
#                ip6tables... to an iptables built from source (1.8.4); the reference is
#                /usr/lib/cni/portmap with that PATH.
# Our portmap: $OURS, else $NODEGATE_BIN_DIR/portmap, run outside the root in the same
# namespaces (it writes nf_tables over netlink; the tables it sees are the node's).
#
#   bash tests/portmap/iptables_nft_compat.sh [--root DIR | --path DIR] [CHECK...]
set -uo pipefail

ROOT="${ROOT:-}" TOOLPATH="${TOOLPATH:-}" CHECKS=()
SELF="$(readlink -f "$0")"
while [ $# -gt 0 ]; do
  case "$1" in
    --root) ROOT="$(readlink -f "$2")"; shift 2 ;;
    --path) TOOLPATH="$(readlink -f "$2")"; shift 2 ;;
    --inner) INNER="$2"; shift 2 ;;
    *) CHECKS+=("$1"); shift ;;
  esac
done
OURS="${OURS:-${NODEGATE_BIN_DIR:?set NODEGATE_BIN_DIR or OURS}/portmap}"
export ROOT TOOLPATH OURS
NODE_PATH=/usr/sbin:/usr/bin:/sbin:/bin
[ -n "$TOOLPATH" ] && NODE_PATH="$TOOLPATH:$NODE_PATH"

# A node tool (iptables-nft-save...) or the reference plugin, as the node runs it.
node() {
  if [ -n "$ROOT" ]; then
    chroot "$ROOT" env -i PATH="$NODE_PATH" "$@"
  else
    env PATH="$NODE_PATH" "$@"
  fi
}

# conf NETWORK MAPPINGS V4CIDR V6CIDR [EXTRA]: a request config, cniVersion 0.4.0 (the newest
# the 0.9.0 reference speaks).
conf() {
  local ips="" v6=""
  [ -n "$4" ] && v6=",{\"version\":\"6\",\"interface\":0,\"address\":\"$4\"}"
  ips="{\"version\":\"4\",\"interface\":0,\"address\":\"$3\"}$v6"
  printf '{"cniVersion":"0.4.0","name":"%s","type":"portmap","snat":true%s,' "$1" "${5:-}"
  printf '"runtimeConfig":{"portMappings":%s},' "$2"
  printf '"prevResult":{"cniVersion":"0.4.0","interfaces":[{"name":"eth0","sandbox":"/x"}],'
  printf '"ips":[%s]}}\n' "$ips"
}

# plugin ours|ref COMMAND ID CONF: runs one call, output on stderr when it fails.
plugin() {
  local who="$1" cmd="$2" id="$3" conf="$4" out rc
  local env=(CNI_COMMAND="$cmd" CNI_CONTAINERID="$id" CNI_NETNS=/x CNI_IFNAME=eth0
    CNI_PATH=/usr/lib/cni)
  if [ "$who" = ref ]; then
    out=$(node env "${env[@]}" /usr/lib/cni/portmap <<<"$conf" 2>&1)
  else
    out=$(env -i PATH="$NODE_PATH" "${env[@]}" "$OURS" <<<"$conf" 2>&1)
  fi
  rc=$?
  [ $rc -eq 0 ] || echo "$who $cmd $id: exit $rc: $out" >&2
  return $rc
}

save() { node "$1-save" -t nat | grep -v '^#' | sed 's/\[[0-9]*:[0-9]*\]/[0:0]/'; }
saves() { save iptables-nft; save ip6tables-nft; }

# The calls of each same-save scenario: "ID|NETWORK|MAPPINGS|V4|V6|EXTRA" per line. Every rule
# kind of the layout: tcp/udp/sctp, hostIP of each family, hairpin sources on and off octet
# boundaries, localhost, >15 ports, conditions, another mark bit, snat off, an external chain.
M1='[{"hostPort":8080,"containerPort":80,"protocol":"tcp"},'\
'{"hostPort":5353,"containerPort":53,"protocol":"udp"},'\
'{"hostPort":9090,"containerPort":90,"protocol":"tcp","hostIP":"10.88.0.1"},'\
'{"hostPort":9091,"containerPort":91,"protocol":"sctp"},'\
'{"hostPort":9092,"containerPort":92,"protocol":"udp","hostIP":"fd00:88::1"}]'
M16="[$(for p in $(seq 9100 9115); do
  printf '{"hostPort":%d,"containerPort":80,"protocol":"tcp"},' "$p"; done)"\
'{"hostPort":9200,"containerPort":80,"protocol":"udp"}]'
M2='[{"hostPort":81,"containerPort":80,"protocol":"tcp"}]'
SCENARIOS=(
  "c1|rnet|$M1|10.88.0.2/16|fd00:88::2/64|
c2|rnet|$M2|10.88.0.3/16||"
  "c3|onet|$M16|10.88.16.4/20|fd00:88::4/60|"
  "c4|onet|$M1|10.88.0.2/16|fd00:88::2/64|,\"markMasqBit\":5,\"conditionsV4\":[\"!\",\"-d\",\"192.0.2.0/23\"],\"conditionsV6\":[\"-s\",\"fd00::/60\"]"
  "c5|onet|$M2|10.88.0.2/16|fd00:88::2/64|,\"snat\":false"
  "c6|onet|$M1|10.88.0.2/16|fd00:88::2/64|,\"externalSetMarkChain\":\"KUBE-MARK-MASQ\""
)

# add WHO SCENARIO-LINES: ADDs every call of a scenario.
add_all() {
  local who="$1" id net maps v4 v6 extra
  while IFS='|' read -r id net maps v4 v6 extra; do
    [ -n "$id" ] || continue
    plugin "$who" ADD "$id" "$(conf "$net" "$maps" "$v4" "$v6" "$extra")" || return 1
  done <<<"$2"
}

# One check, inside fresh namespaces.
inner_setup() {
  if [ -n "$ROOT" ]; then mount -t proc proc "$ROOT/proc" || return 1; fi
  ip link set lo up
  # The host side of the containers (our ADD sets route_localnet on the link to them).
  ip link add cni0 type bridge && ip link set cni0 up &&
    ip addr add 10.88.0.1/16 dev cni0 && ip -6 addr add fd00:88::1/64 dev cni0 nodad
}

# kube-proxy's mark chain, made by the node's iptables (which also makes the table before
# either plugin runs, as on most nodes; the other scenarios start without one).
make_kube_mark_masq() {
  for tool in iptables-nft ip6tables-nft; do node "$tool" -t nat -N KUBE-MARK-MASQ || return 1; done
}

# One node, one writer: the scenario's save (fresh namespaces per call).
scenario_save() {
  local who="$1" scenario="$2"
  unshare --net --mount --fork bash -c '
    . "$0" --inner lib
    inner_setup >/dev/null || exit 1
    if [[ "$2" == *KUBE-MARK-MASQ* ]]; then make_kube_mark_masq || exit 1; fi
    add_all "$1" "$2" || exit 1
    saves' "$SELF" "$who" "$scenario"
}

failures=0
fail() { echo "FAIL [$1]: $2" >&2; failures=$((failures + 1)); }

check_same_save() {
  local i=0 scenario ref ours
  for scenario in "${SCENARIOS[@]}"; do
    i=$((i + 1))
    ref=$(scenario_save ref "$scenario") || { fail same-save "scenario $i: reference ADD"; continue; }
    ours=$(scenario_save ours "$scenario") || { fail same-save "scenario $i: our ADD"; continue; }
    if [ "$ref" != "$ours" ]; then
      fail same-save "scenario $i: the node's save differs (< reference, > ours):
$(diff <(echo "$ref") <(echo "$ours"))"
    fi
    grep -q -- '-A CNI-DN-' <<<"$ours" || fail same-save "scenario $i: no container rules"
  done
}

# Inside one node: the shared rules, each exactly once per family.
count_shared() {
  local tool line n
  for tool in iptables-nft ip6tables-nft; do
    local s
    s=$(save "$tool")
    for line in '-A PREROUTING -m addrtype --dst-type LOCAL -j CNI-HOSTPORT-DNAT' \
      '-A OUTPUT -m addrtype --dst-type LOCAL -j CNI-HOSTPORT-DNAT' \
      '-A POSTROUTING -m comment --comment "CNI portfwd requiring masquerade" -j CNI-HOSTPORT-MASQ' \
      '-A CNI-HOSTPORT-MASQ -m mark --mark 0x2000/0x2000 -j MASQUERADE' \
      '-A CNI-HOSTPORT-SETMARK -m comment --comment "CNI portfwd masquerade mark" -j MARK --set-xmark 0x2000/0x2000'; do
      n=$(grep -cxF -- "$line" <<<"$s")
      [ "$n" = 1 ] || echo "$tool: $n x '$line'"
    done
    n=$(grep -c -- '^-A CNI-HOSTPORT-MASQ' <<<"$s")
    [ "$n" = 1 ] || echo "$tool: $n rules in CNI-HOSTPORT-MASQ"
  done
}

check_shared_once() {
  local first second out
  for first in ours ref; do
    second=ref
    [ "$first" = ref ] && second=ours
    out=$(unshare --net --mount --fork bash -c '
      . "$0" --inner lib
      inner_setup >/dev/null || exit 1
      plugin "$1" ADD c1 "$(conf rnet "$M1" 10.88.0.2/16 fd00:88::2/64)" || exit 1
      plugin "$2" ADD c2 "$(conf rnet "$M2" 10.88.0.3/16 fd00:88::3/64)" || exit 1
      count_shared' "$SELF" "$first" "$second" 2>&1)
    [ $? -eq 0 ] && [ -z "$out" ] || fail shared-once "$first ADD, then $second ADD: $out"
  done
}

# -C (and for delete-all then -D) on a node holding our rules, with the lines the node's save
# prints for the reference's rules of the same ADDs: every one is found (and removed).
check_check_and_delete() {
  local out ref_lines
  ref_lines=$(unshare --net --mount --fork bash -c '
    . "$0" --inner lib
    inner_setup >/dev/null || exit 1
    for s in "${SCENARIOS[@]:0:3}"; do add_all ref "$s" || exit 1; done
    for tool in iptables-nft ip6tables-nft; do save "$tool" | sed -n "s/^-A /$tool /p"; done
    ' "$SELF") || { fail "$1" "reference ADD"; return; }
  out=$(unshare --net --mount --fork bash -c '
    . "$0" --inner lib
    inner_setup >/dev/null || exit 1
    for s in "${SCENARIOS[@]:0:3}"; do add_all ours "$s" || exit 1; done
    rc=0 n=0
    while read -r tool line; do
      n=$((n + 1))
      eval "node $tool -t nat -C $line" || { echo "$tool -C $line"; rc=1; }
    done <<<"$2"
    [ "$n" -ge 40 ] || { echo "only $n rules checked"; rc=1; }
    [ "$1" = check-all ] && exit $rc
    while read -r tool line; do
      eval "node $tool -t nat -D $line" || { echo "$tool -D $line"; rc=1; }
    done <<<"$2"
    for tool in iptables-nft ip6tables-nft; do
      left=$(save "$tool" | grep -c "^-A ")
      [ "$left" = 0 ] || { echo "$tool: $left rules left: $(save "$tool" | grep "^-A ")"; rc=1; }
    done
    exit $rc' "$SELF" "$1" "$ref_lines" 2>&1)
  [ $? -eq 0 ] || fail "$1" "$out"
}

check_cross_del() {
  local out
  out=$(unshare --net --mount --fork bash -c '
    . "$0" --inner lib
    inner_setup >/dev/null || exit 1
    c1=$(conf rnet "$M1" 10.88.0.2/16 fd00:88::2/64)
    c2=$(conf rnet "$M2" 10.88.0.3/16 fd00:88::3/64)
    plugin ours ADD c1 "$c1" && plugin ref ADD c2 "$c2" || exit 1
    plugin ours CHECK c2 "$c2" || echo "our CHECK of the reference'"'"'s rules failed"
    plugin ref DEL c1 "$c1" || exit 1
    s=$(saves)
    chain=CNI-DN-$(printf %s rnetc1 | sha512sum | cut -c1-21)
    grep -e "$chain" -e "id: \\\\\"c1" <<<"$s" && echo "reference DEL left our c1"
    grep -q "id: \\\\\"c2" <<<"$s" || echo "reference DEL of c1 removed c2"
    plugin ours DEL c2 "$c2" || exit 1
    s=$(saves)
    grep -E "CNI-DN-|id: " <<<"$s" && echo "our DEL left the reference'"'"'s c2"
    true' "$SELF" 2>&1)
  [ $? -eq 0 ] && [ -z "$out" ] || fail cross-del "$out"
}

if [ "${INNER:-}" = lib ]; then return 0 2>/dev/null || exit 0; fi

[ "$(id -u)" = 0 ] || { echo "needs root (namespaces)"; exit 77; }
[ ${#CHECKS[@]} -gt 0 ] || CHECKS=(same-save shared-once check-all delete-all cross-del)
echo "node iptables: $(node iptables-nft --version)${ROOT:+ in $ROOT}; ours: $OURS"
for c in "${CHECKS[@]}"; do
  case "$c" in
    same-save) check_same_save ;;
    shared-once) check_shared_once ;;
    check-all | delete-all) check_check_and_delete "$c" ;;
    cross-del) check_cross_del ;;
    *) echo "unknown check $c"; exit 2 ;;
  esac
  echo "$c: done ($failures failure(s) so far)"
done
echo "iptables_nft_compat: $failures failure(s)"
[ "$failures" -eq 0 ]
