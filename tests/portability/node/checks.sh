# The portability tier's checks, run on the node under test: inside a Debian 11 root (chroot,
# private namespaces; tests/portability/debian11_test.sh) or as the smoke of the Debian 11 VM
# (tests/portability/vm_test.sh). Sourced by run.sh; bash and the node's own tools only:
# iproute2, iptables (1.8.7 there), nft (0.9.8), conntrack, iperf3, busybox, jq, and the node's
# reference plugins in /usr/lib/cni (0.9.0, cniVersion up to 0.4.0) as the oracle.
#
# The node's own network namespace is private to the tier (unshare --net, or the VM's); every
# check still makes its "nodes" as namespaces of their own and removes them when it ends.
# Our executables are in $NG_DIR/bin, the fixtures in $NG_DIR/data.

NG_DIR=${NG_DIR:-/ng}
BIN=$NG_DIR/bin
REF=${NG_REF_DIR:-/usr/lib/cni}
NODE_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
# The wire rate iperf3's TCP goodput stands for (Ethernet + IPv4 + TCP with timestamps per
# 1448-byte segment), as in tests/bandwidth/traffic_test.cc.
FRAME_OVER_GOODPUT=1514/1448
WORK=$(mktemp -d /tmp/ng-checks.XXXXXX)
passed=0
failed=0
current=""
namespaces=()

ok() {
  passed=$((passed + 1))
  echo "  ok   $current: $*"
}
bad() {
  failed=$((failed + 1))
  echo "  FAIL $current: $*"
}
# expect DESCRIPTION COMMAND...: one assertion, passed when COMMAND succeeds.
expect() {
  local what=$1
  shift
  if "$@"; then ok "$what"; else bad "$what"; fi
}
# same DESCRIPTION WANT GOT: two texts equal, the difference printed when they are not.
same() {
  if [ "$2" == "$3" ]; then
    ok "$1"
  else
    bad "$1"
    diff <(printf '%s\n' "$2") <(printf '%s\n' "$3") | sed 's/^/      /'
  fi
}
contains() { grep -qF -- "$2" <<<"$1"; }

# --- namespaces ----------------------------------------------------------------------------
netns_add() {
  ip netns add "$1" && ip -n "$1" link set lo up && namespaces+=("$1")
}
netns_del_all() {
  local ns pid
  for ns in "${namespaces[@]}"; do
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null; done
    ip netns del "$ns" 2>/dev/null
  done
  namespaces=()
}
in_ns() {
  local ns=$1
  shift
  ip netns exec "$ns" "$@"
}
# A node: forwarding on, as a node routing pod traffic has it.
make_node() {
  netns_add "$1" || return 1
  in_ns "$1" sh -c 'echo 1 >/proc/sys/net/ipv4/ip_forward &&
    echo 1 >/proc/sys/net/ipv6/conf/all/forwarding'
}
# attach NODE NS HOST_VETH V4_PREFIX V6_PREFIX: NS joined to NODE by a veth (eth0 inside NS),
# PREFIX.1 on the node's side, PREFIX.2 in NS with its default route through the node.
attach() {
  local node=$1 ns=$2 veth=$3 v4=$4 v6=$5
  netns_add "$ns" &&
    ip -n "$node" link add "$veth" type veth peer name eth0 netns "$ns" &&
    ip -n "$node" addr add "$v4.1/24" dev "$veth" &&
    ip -n "$node" -6 addr add "$v6::1/64" dev "$veth" nodad &&
    ip -n "$node" link set "$veth" up &&
    ip -n "$ns" addr add "$v4.2/24" dev eth0 &&
    ip -n "$ns" -6 addr add "$v6::2/64" dev eth0 nodad &&
    ip -n "$ns" link set eth0 up &&
    ip -n "$ns" route add default via "$v4.1" &&
    ip -n "$ns" -6 route add default via "$v6::1"
}
# pod_node NODE: a node with a container (NODE-c, 10.123.0.2 behind veth vc0) and a client
# outside it (NODE-k, 198.51.100.2 behind vk0), as tests/portmap's topology.
pod_node() {
  make_node "$1" &&
    attach "$1" "$1-c" vc0 10.123.0 2001:db8:123 &&
    attach "$1" "$1-k" vk0 198.51.100 2001:db8:51
}

# --- plugins ---------------------------------------------------------------------------------
# cni NODE PLUGIN VERB CONTAINER_ID CONF [VAR=VALUE...]: PLUGIN run in NODE's namespace as a
# runtime runs it (container NODE-c, eth0). Its stdout in $cni_out, stderr in $cni_err.
cni() {
  local node=$1 plugin=$2 verb=$3 id=$4 conf=$5
  shift 5
  local rc=0
  cni_out=$(printf '%s' "$conf" | in_ns "$node" env -i PATH="$NODE_PATH" CNI_COMMAND="$verb" \
    CNI_CONTAINERID="$id" CNI_NETNS="/run/netns/$node-c" CNI_IFNAME=eth0 \
    CNI_PATH="$(dirname "$plugin")" "$@" "$plugin" 2>"$WORK/stderr") || rc=$?
  cni_err=$(cat "$WORK/stderr")
  return $rc
}
# expect_cni DESCRIPTION cni-ARGS...: the call succeeds.
expect_cni() {
  local what=$1
  shift
  if cni "$@"; then
    ok "$what"
  else
    bad "$what (exit $?): $cni_out $cni_err"
    return 1
  fi
}

# portmap_conf NETWORK MAPPINGS [EXTRA_KEYS [v4]]: the reference's 0.4.0 config for container
# NODE-c of pod_node, snat on; dual-stack, or IPv4 only with "v4" (the reference's CHECK
# looks for IPv4 rules in ip6tables too and fails on any dual-stack container).
portmap_conf() {
  local v6=',{"version":"6","interface":1,"address":"2001:db8:123::2/64","gateway":"2001:db8:123::1"}'
  [ "${4:-}" = v4 ] && v6=""
  printf '%s' '{"cniVersion":"0.4.0","name":"'"$1"'","type":"portmap",
    "capabilities":{"portMappings":true},"snat":true'"${3:-}"',
    "runtimeConfig":{"portMappings":'"$2"'},
    "prevResult":{"cniVersion":"0.4.0",
      "interfaces":[{"name":"vc0"},{"name":"eth0","sandbox":"/run/netns/ctr"}],
      "ips":[{"version":"4","interface":1,"address":"10.123.0.2/24","gateway":"10.123.0.1"}'"$v6"'],
      "routes":[],"dns":{}}}'
}
MAPPINGS='[{"hostPort":8080,"containerPort":80,"protocol":"tcp"},
  {"hostPort":8053,"containerPort":53,"protocol":"udp"},
  {"hostPort":8443,"containerPort":80,"protocol":"tcp","hostIP":"198.51.100.1"}]'
MAPPINGS_2='[{"hostPort":8081,"containerPort":80,"protocol":"tcp"}]'

# nat_table NODE SAVE: table nat as SAVE (iptables-nft-save, ip6tables-legacy-save...) prints
# it, without its comment lines and with every counter zero.
nat_table() {
  in_ns "$1" "$2" -t nat 2>&1 | grep -v '^#' | sed -E 's/\[[0-9]+:[0-9]+\]/[0:0]/g'
}
# tables NODE MODE: both families' nat tables in MODE (nft or legacy).
tables() {
  nat_table "$1" "iptables-$2-save"
  nat_table "$1" "ip6tables-$2-save"
}
# mode_env MODE: the PATH a runtime gives the plugins on a node of that mode. nft is the
# node's default (Debian 11's `iptables` is iptables-nft); for legacy, a folder first on PATH
# whose iptables tools are the -legacy ones, as on a node switched with update-alternatives.
mode_env() {
  if [ "$1" = legacy ]; then
    local dir=$WORK/legacy-path t
    mkdir -p "$dir"
    for t in iptables ip6tables; do
      ln -sf "/usr/sbin/$t-legacy" "$dir/$t"
      ln -sf "/usr/sbin/$t-legacy-save" "$dir/$t-save"
      ln -sf "/usr/sbin/$t-legacy-restore" "$dir/$t-restore"
    done
    echo "PATH=$dir:$NODE_PATH"
  else
    echo "PATH=$NODE_PATH"
  fi
}

# serve NS: busybox httpd on port 80 of NS, answering with NS's name.
serve() {
  mkdir -p "$WORK/www-$1" && echo "hello from $1" >"$WORK/www-$1/index.html" &&
    in_ns "$1" busybox httpd -p 80 -h "$WORK/www-$1"
}
# fetch NS URL: the page at URL, from NS (retried while the server starts).
fetch() {
  local i
  for i in $(seq 1 30); do
    # (Debian 11's busybox wget crashes with -q or -T: its progress goes to stderr instead.)
    in_ns "$1" timeout 5 busybox wget -O - "$2" 2>/dev/null && return 0
    sleep 0.2
  done
  return 1
}
# closed DESCRIPTION NS URL: nothing answers at URL from NS. One try, made once the server has
# answered through the mapping: a port with no mapping left is refused at once, and retrying as
# fetch does would cost 30 tries under the VM's emulation.
closed() {
  if in_ns "$2" timeout 5 busybox wget -O - "$3" >/dev/null 2>&1; then
    bad "$1: $3 still answers"
  else
    ok "$1"
  fi
}
# reach DESCRIPTION NS URL WANT: the page at URL, fetched from NS, reads WANT.
reach() {
  local got
  got=$(fetch "$2" "$3")
  same "$1" "$4" "$got"
}

# --- checks ----------------------------------------------------------------------------------
# Each check_* makes its own nodes and removes them (netns_del_all) when it ends.

check_version() {
  local p v
  for p in portmap bandwidth host-local; do
    if v=$(env -i CNI_COMMAND=VERSION "$BIN/$p" </dev/null 2>"$WORK/stderr"); then
      expect "$p VERSION lists 0.4.0 and 1.0.0" \
        jq -e '.supportedVersions | index("0.4.0") and index("1.0.0")' <<<"$v" >/dev/null
    else
      bad "$p VERSION: $(head -c 400 "$WORK/stderr")"
    fi
  done
  # nodegate's usage (stdout, exit 0) shows that it starts.
  if v=$("$BIN/nodegate" --help 2>&1); then
    expect "nodegate --help" contains "$v" "usage: nodegate"
  else
    bad "nodegate --help: $(head -c 400 <<<"$v")"
  fi
}

# host-local: ours and the reference share one data directory (the same on-disk state): each
# sees the other's allocation, and each releases the other's.
check_host_local() {
  local dir=$WORK/host-local conf ip
  conf='{"cniVersion":"0.4.0","name":"hl","type":"host-local",
    "ipam":{"type":"host-local","dataDir":"'"$dir"'",
      "ranges":[[{"subnet":"10.77.0.0/24"}]],"routes":[{"dst":"0.0.0.0/0"}]}}'
  make_node hl || { bad "namespaces"; return; }
  expect_cni "ours ADD" hl "$BIN/host-local" ADD c-ours "$conf" || return
  ip=$(jq -r '.ips[0].address' <<<"$cni_out")
  same "ours ADD address" 10.77.0.2/24 "$ip"
  expect_cni "reference ADD beside ours" hl "$REF/host-local" ADD c-ref "$conf" || return
  same "reference ADD takes the next address" 10.77.0.3/24 "$(jq -r '.ips[0].address' <<<"$cni_out")"
  same "ours records an address as the reference does" "$(sed 's/c-ref/ID/' "$dir/hl/10.77.0.3")" \
    "$(sed 's/c-ours/ID/' "$dir/hl/10.77.0.2" 2>&1)"
  expect_cni "ours DEL of the reference's" hl "$BIN/host-local" DEL c-ref "$conf"
  expect_cni "reference DEL of ours" hl "$REF/host-local" DEL c-ours "$conf"
  same "no address left allocated" "" "$(cd "$dir/hl" && ls | grep -v -e '^lock$' -e '^last_reserved_ip')"
  expect_cni "ours ADD again" hl "$BIN/host-local" ADD c-ours "$conf"
  expect_cni "ours DEL" hl "$BIN/host-local" DEL c-ours "$conf"
  expect_cni "ours DEL again (idempotent)" hl "$BIN/host-local" DEL c-ours "$conf"
  same "nothing allocated after DEL" "" "$(cd "$dir/hl" && ls | grep -v -e '^lock$' -e '^last_reserved_ip')"
  netns_del_all
}

# portmap in MODE (nft: the node's default; legacy), against the reference on the same node
# userland: the same config in two nodes gives the same table nat as the node's own
# iptables-save prints it, ours lets traffic through, ours CHECKs, each DEL leaves what the
# reference's ADD+DEL leaves.
check_portmap_iptables() {
  local mode=$1 env conf ours refd
  env=$(mode_env "$mode")
  conf=$(portmap_conf pt "$MAPPINGS")
  pod_node po && pod_node pr || { bad "namespaces"; return; }
  expect_cni "reference ADD" pr "$REF/portmap" ADD ctr1 "$conf" "$env" || return
  expect_cni "ours ADD" po "$BIN/portmap" ADD ctr1 "$conf" "$env" || return
  refd=$(tables pr "$mode")
  ours=$(tables po "$mode")
  contains "$refd" "CNI-DN-" || bad "the reference wrote no CNI-DN chain in $mode mode"
  same "iptables-$mode-save: ours as the reference's" "$refd" "$ours"
  expect_cni "ours CHECK" po "$BIN/portmap" CHECK ctr1 "$conf" "$env"
  serve po-c && serve pr-c || bad "httpd"
  reach "client -> node:8080 -> container" po-k http://198.51.100.1:8080/ "hello from po-c"
  reach "client -> hostIP 198.51.100.1:8443 -> container" po-k http://198.51.100.1:8443/ \
    "hello from po-c"
  reach "node -> own address:8080 (OUTPUT)" po http://198.51.100.1:8080/ "hello from po-c"
  reach "the reference's: client -> node:8080" pr-k http://198.51.100.1:8080/ "hello from pr-c"
  expect_cni "reference DEL" pr "$REF/portmap" DEL ctr1 "$conf" "$env"
  expect_cni "ours DEL" po "$BIN/portmap" DEL ctr1 "$conf" "$env"
  same "after DEL: ours leaves what the reference leaves" "$(tables pr "$mode")" "$(tables po "$mode")"
  expect_cni "ours DEL again (idempotent)" po "$BIN/portmap" DEL ctr1 "$conf" "$env"
  closed "8080 closed after DEL" po-k http://198.51.100.1:8080/
  netns_del_all
}

# udp_entry NODE PORT: a conntrack entry as a client's first datagram to the node's PORT leaves
# (198.51.100.9:40000 -> 198.51.100.1:PORT, no reply yet). udp_entries NODE PORT: how many such.
udp_entry() {
  in_ns "$1" conntrack -I -p udp -s 198.51.100.9 -d 198.51.100.1 --sport 40000 --dport "$2" \
    -t 600 >/dev/null 2>&1
}
udp_entries() {  # or "could not look: ..." when conntrack cannot list (never a 0)
  local out
  out=$(in_ns "$1" conntrack -L -p udp 2>&1) || { echo "could not look: conntrack -L: $out"; return 1; }
  grep -c "dport=$2 " <<<"$out" || [ $? -eq 1 ]
}
# udp_gone DESCRIPTION NODE PORT: no entry toward PORT is left within 5 s.
udp_gone() {
  local i
  for i in $(seq 1 50); do
    [ "$(udp_entries "$2" "$3")" = 0 ] && { ok "$1"; return; }
    sleep 0.1
  done
  bad "$1: $(in_ns "$2" conntrack -L -p udp 2>&1 | grep "dport=$3 " | head -2)"
}

# portmap's UDP conntrack flush on this kernel (docs/performance/conntrack.md, "After the
# plugin's exit"): an entry a client's datagram made toward a host port before the mapping
# existed would keep that traffic on the node instead of sending it to the container. ADD
# removes it, DEL removes one made while the mapping was there, and entries toward other ports
# stay. The flush runs in the helper portmap leaves at exit: the check waits for it (5 s at
# most). On 5.10 (the VM) it is the dump filter CTA_FILTER's oldest kernel.
check_portmap_conntrack() {
  local env conf
  env=$(mode_env nft)
  conf=$(portmap_conf pt "$MAPPINGS")
  pod_node pc || { bad "namespaces"; return; }
  if ! udp_entry pc 8053 || ! udp_entry pc 9053; then
    bad "conntrack -I: $(udp_entry pc 9053 2>&1)"
    netns_del_all
    return
  fi
  same "two entries before ADD" "1 1" "$(udp_entries pc 8053) $(udp_entries pc 9053)"
  expect_cni "ours ADD" pc "$BIN/portmap" ADD ctr1 "$conf" "$env" || { netns_del_all; return; }
  udp_gone "ADD removes the entry toward the mapped port 8053" pc 8053
  same "the entry toward the unmapped port 9053 stays" 1 "$(udp_entries pc 9053)"
  udp_entry pc 8053
  same "a new entry toward 8053 while mapped" 1 "$(udp_entries pc 8053)"
  expect_cni "ours DEL" pc "$BIN/portmap" DEL ctr1 "$conf" "$env"
  udp_gone "DEL removes it" pc 8053
  same "the entry toward 9053 still stays" 1 "$(udp_entries pc 9053)"
  netns_del_all
}

# Switching a node between the reference and ours, both ways, in MODE: each DEL removes what
# the other's ADD wrote, a mixed node holds exactly what a reference-only node holds (the
# reference recognises our shared rules: no second masquerade rule), and each CHECK accepts
# what the other wrote.
check_portmap_cross() {
  local mode=$1 env conf conf2 baseline
  env=$(mode_env "$mode")
  conf=$(portmap_conf pt "$MAPPINGS")
  conf2=$(portmap_conf pt "$MAPPINGS_2" "" v4)
  pod_node xa && pod_node xb && pod_node xc || { bad "namespaces"; return; }
  # xa: the reference alone, ADD ctr1 and ctr2.
  expect_cni "reference ADD ctr1" xa "$REF/portmap" ADD ctr1 "$conf" "$env" &&
    expect_cni "reference ADD ctr2" xa "$REF/portmap" ADD ctr2 "$conf2" "$env" || return
  baseline=$(tables xa "$mode")
  # xb: ours ADD ctr1, then the reference ADD ctr2.
  expect_cni "ours ADD ctr1" xb "$BIN/portmap" ADD ctr1 "$conf" "$env" &&
    expect_cni "then reference ADD ctr2" xb "$REF/portmap" ADD ctr2 "$conf2" "$env" || return
  same "ours then reference: the reference-only table" "$baseline" "$(tables xb "$mode")"
  # xc: the reference ADD ctr1, then ours ADD ctr2.
  expect_cni "reference ADD ctr1" xc "$REF/portmap" ADD ctr1 "$conf" "$env" &&
    expect_cni "then ours ADD ctr2" xc "$BIN/portmap" ADD ctr2 "$conf2" "$env" || return
  same "reference then ours: the reference-only table" "$baseline" "$(tables xc "$mode")"
  expect_cni "ours CHECK of ours (ctr1 on xb)" xb "$BIN/portmap" CHECK ctr1 "$conf" "$env"
  expect_cni "ours CHECK of the reference's (ctr2 on xb)" xb "$BIN/portmap" CHECK ctr2 "$conf2" "$env"
  # The reference's CHECK of ours, held against its CHECK of its own (ctr2 on xa, the same
  # chain names): 1.1.1 (Debian 12) refuses even its own IPv4-only container ("could not
  # check ipv6 dnat": its CHECK looks for the container's DNAT chain in ip6tables' nat table
  # too, where its ADD made none), so there ours must be refused with the same answer; 0.9.0
  # (Debian 11) accepts both.
  local own_rc=0 own_out
  cni xa "$REF/portmap" CHECK ctr2 "$conf2" "$env" || own_rc=$?
  own_out=$cni_out
  if [ "$own_rc" = 0 ]; then
    expect_cni "reference CHECK of ours (ctr2 on xc)" xc "$REF/portmap" CHECK ctr2 "$conf2" "$env"
  elif cni xc "$REF/portmap" CHECK ctr2 "$conf2" "$env"; then
    bad "reference CHECK of ours (ctr2 on xc) passes, of its own (ctr2 on xa) fails: $own_out"
  else
    local own_msg ours_msg
    own_msg=$(jq -r .msg <<<"$own_out" 2>/dev/null || echo "$own_out")
    ours_msg=$(jq -r .msg <<<"$cni_out" 2>/dev/null || echo "$cni_out")
    if [ "$own_msg" == "$ours_msg" ]; then
      ok "reference CHECK of ours (ctr2 on xc) refused as of its own (ctr2 on xa): $own_msg"
    else
      bad "reference CHECK of ours (ctr2 on xc): $ours_msg; of its own (ctr2 on xa): $own_msg"
    fi
  fi
  # Cross DEL, both ways, down to the reference's own ADD+DEL residue.
  expect_cni "reference DEL ctr1 on xa" xa "$REF/portmap" DEL ctr1 "$conf" "$env"
  expect_cni "reference DEL ctr2 on xa" xa "$REF/portmap" DEL ctr2 "$conf2" "$env"
  baseline=$(tables xa "$mode")
  expect_cni "reference DEL of ours (ctr1 on xb)" xb "$REF/portmap" DEL ctr1 "$conf" "$env"
  expect_cni "ours DEL of the reference's (ctr2 on xb)" xb "$BIN/portmap" DEL ctr2 "$conf2" "$env"
  same "xb after cross DEL: the reference's residue" "$baseline" "$(tables xb "$mode")"
  expect_cni "ours DEL of the reference's (ctr1 on xc)" xc "$BIN/portmap" DEL ctr1 "$conf" "$env"
  expect_cni "reference DEL of ours (ctr2 on xc)" xc "$REF/portmap" DEL ctr2 "$conf2" "$env"
  same "xc after cross DEL: the reference's residue" "$baseline" "$(tables xc "$mode")"
  netns_del_all
}

# readable LISTING: nft printed every rule in its own syntax (what it cannot decode it prints
# as "[invalid type]", "unknown" or raw "[ ... ]" expressions).
readable() {
  if grep -qiE 'invalid|unknown|\[' <<<"$1"; then
    bad "a rule nft cannot print: $(grep -iE 'invalid|unknown|\[' <<<"$1" | head -3)"
  else
    ok "every rule printed in nft's syntax"
  fi
}

# Our nftables backend where the node's nft is Debian 11's 0.9.8: ADD, listed by that nft
# (every rule readable: the localhost and hairpin marks are lookups in plain sets, which Linux
# 5.10 accepts), traffic (from a client, the node's own address, 127.0.0.1 through
# route_localnet, the container itself), CHECK, DEL.
check_portmap_nftables() {
  local conf listing n
  conf=$(portmap_conf pn "$MAPPINGS" ',"backend":"nftables"')
  # The network's objects are named n<10 hex digits of sha512(network name)>.
  n=n$(printf '%s' pn | sha512sum | cut -c1-10)
  pod_node nf || { bad "namespaces"; return; }
  expect_cni "ADD" nf "$BIN/portmap" ADD ctr1 "$conf" || return
  if listing=$(in_ns nf nft list ruleset 2>&1); then
    ok "nft $(nft --version | cut -d' ' -f2) lists the ruleset"
  else
    bad "nft list ruleset: $listing"
  fi
  expect "table inet cni_hostport listed" contains "$listing" "table inet cni_hostport"
  # An element may carry its owner as a comment between key and value.
  expect "the 8080 mapping listed" \
    grep -qE 'tcp \. 8080( comment "[^"]*")? : 10\.123\.0\.2 \. 80' <<<"$listing"
  expect "the hostIP mapping listed" \
    grep -qE '198\.51\.100\.1 \. tcp \. 8443( comment "[^"]*")? : 10\.123\.0\.2 \. 80' <<<"$listing"
  readable "$listing"
  expect "the localhost rule listed" contains "$listing" \
    "ip saddr & 255.0.0.0 . meta l4proto . th dport @${n}_hairpin_any_v4_8 meta mark set meta mark | 0x00002000"
  expect "the hairpin rule listed" contains "$listing" \
    "ip saddr & 255.255.255.0 . ip daddr . meta l4proto . th dport @${n}_hairpin_ip_v4_24 meta mark set"
  expect "the localhost element of 8080 listed" contains "$listing" '127.0.0.0 . tcp . 8080 comment "ctr1"'
  expect_cni "CHECK" nf "$BIN/portmap" CHECK ctr1 "$conf"
  serve nf-c || bad "httpd"
  reach "client -> node:8080 -> container" nf-k http://198.51.100.1:8080/ "hello from nf-c"
  reach "client -> hostIP:8443 -> container" nf-k http://198.51.100.1:8443/ "hello from nf-c"
  reach "node -> own address:8080 (output)" nf http://198.51.100.1:8080/ "hello from nf-c"
  reach "node -> 127.0.0.1:8080 (localhost, route_localnet)" nf http://127.0.0.1:8080/ "hello from nf-c"
  reach "container -> node:8080 (hairpin)" nf-c http://10.123.0.1:8080/ "hello from nf-c"
  expect_cni "DEL" nf "$BIN/portmap" DEL ctr1 "$conf"
  listing=$(in_ns nf nft list ruleset 2>&1) || bad "nft list ruleset after DEL: $listing"
  if grep -q 'ctr1' <<<"$listing"; then bad "an element of ctr1 left after DEL"; else ok "no element of ctr1 left after DEL"; fi
  closed "8080 closed after DEL" nf-k http://198.51.100.1:8080/
  expect_cni "DEL again (idempotent)" nf "$BIN/portmap" DEL ctr1 "$conf"
  netns_del_all
}

# The nftables backend with masqAll: the container has no route back to the client, so the
# client is answered only when its traffic is masqueraded (a network without masqAll beside
# it shows that: its port is not answered); from 127.0.0.1 too.
check_portmap_nftables_masqall() {
  local conf plain listing n
  conf=$(portmap_conf pm "$MAPPINGS" ',"backend":"nftables","masqAll":true')
  plain=$(portmap_conf pp '[{"hostPort":8081,"containerPort":80,"protocol":"tcp"}]' ',"backend":"nftables"')
  n=n$(printf '%s' pm | sha512sum | cut -c1-10)
  pod_node nm || { bad "namespaces"; return; }
  ip -n nm-c route del default && ip -n nm-c -6 route del default || bad "container routes"
  expect_cni "masqAll ADD" nm "$BIN/portmap" ADD ctr2 "$conf" || return
  expect_cni "ADD without masqAll (network pp)" nm "$BIN/portmap" ADD ctr3 "$plain" || return
  listing=$(in_ns nm nft list ruleset 2>&1) || bad "nft list ruleset: $listing"
  readable "$listing"
  expect "masqAll: the any-source rule listed" contains "$listing" \
    "ip saddr & 0.0.0.0 . meta l4proto . th dport @${n}_hairpin_any_v4_0 meta mark set meta mark | 0x00002000"
  expect "masqAll: the any-source element of 8080 listed" contains "$listing" '0.0.0.0 . tcp . 8080 comment "ctr2"'
  expect_cni "masqAll CHECK" nm "$BIN/portmap" CHECK ctr2 "$conf"
  serve nm-c || bad "httpd"
  reach "masqAll: client -> node:8080 -> container, masqueraded" nm-k http://198.51.100.1:8080/ "hello from nm-c"
  reach "masqAll: node -> 127.0.0.1:8080" nm http://127.0.0.1:8080/ "hello from nm-c"
  # One try (the server answers by now): an unanswered connection waits for the timeout.
  if in_ns nm-k timeout 3 busybox wget -O - http://198.51.100.1:8081/ >/dev/null 2>&1; then
    bad "without masqAll the client was answered: the container routes back, masquerading is not tested"
  else
    ok "without masqAll the client is not answered (the container has no route back)"
  fi
  expect_cni "DEL without masqAll" nm "$BIN/portmap" DEL ctr3 "$plain"
  expect_cni "masqAll DEL" nm "$BIN/portmap" DEL ctr2 "$conf"
  listing=$(in_ns nm nft list ruleset 2>&1) || bad "nft list ruleset after DEL: $listing"
  if grep -q 'ctr2' <<<"$listing"; then bad "an element of ctr2 left after DEL"; else ok "no element of ctr2 left after DEL"; fi
  closed "masqAll: 8080 closed after DEL" nm-k http://198.51.100.1:8080/
  netns_del_all
}

# bandwidth: the same qdiscs as the reference's, traffic at the configured rate both ways
# (iperf3 between the container and a peer beyond the node), CHECK, nothing left after DEL.
# RATE in bit/s; SECONDS per measurement (one more is omitted: slow start and burst).
check_bandwidth() {
  local rate=${BW_RATE:-4000000} secs=${BW_SECONDS:-3} conf
  conf='{"cniVersion":"0.4.0","name":"bw","type":"bandwidth",
    "ingressRate":'"$rate"',"ingressBurst":131072,"egressRate":'"$rate"',"egressBurst":131072,
    "prevResult":{"cniVersion":"0.4.0",
      "interfaces":[{"name":"vc0"},{"name":"eth0","sandbox":"/run/netns/ctr"}],
      "ips":[{"version":"4","interface":1,"address":"10.123.0.2/24","gateway":"10.123.0.1"}]}}'
  pod_node bo && pod_node br || { bad "namespaces"; return; }
  expect_cni "reference ADD" br "$REF/bandwidth" ADD ctr1 "$conf" &&
    expect_cni "ours ADD" bo "$BIN/bandwidth" ADD ctr1 "$conf" || return
  same "tc qdiscs: ours as the reference's" "$(qdiscs br)" "$(qdiscs bo)"
  expect_cni "ours CHECK" bo "$BIN/bandwidth" CHECK ctr1 "$conf"
  # bo-k plays the peer beyond the node: 198.51.100.2.
  rate_of bo-c bo-k 198.51.100.2 -R "$secs"
  expect "to the container: $measured bit/s for $rate" near "$measured" "$rate"
  rate_of bo-c bo-k 198.51.100.2 "" "$secs"
  expect "from the container: $measured bit/s for $rate" near "$measured" "$rate"
  expect_cni "ours DEL" bo "$BIN/bandwidth" DEL ctr1 "$conf"
  expect_cni "reference DEL" br "$REF/bandwidth" DEL ctr1 "$conf"
  # Not the reference's residue: its DEL leaves the veth's qdiscs and a filter redirecting to
  # the ifb it deleted (plugins/bandwidth/README.md); ours removes them.
  same "after DEL: no qdisc of ours on the veth" "" "$(qdiscs bo | grep vc0)"
  expect "no ifb left (a retired one is deleted a moment after DEL)" no_ifb_within_5s bo
  rate_of bo-c bo-k 198.51.100.2 -R 1
  expect "unshaped after DEL: $measured bit/s, over 10x $rate" \
    near_or_above "$measured" $((rate * 10))
  expect_cni "ours DEL again (idempotent)" bo "$BIN/bandwidth" DEL ctr1 "$conf"
  netns_del_all
}
# qdiscs NODE: every qdisc of NODE but the kernel's defaults, as tc prints them.
qdiscs() { in_ns "$1" tc qdisc show | grep -v -e 'qdisc noqueue' -e 'qdisc noop'; }
no_ifb_within_5s() {
  local i
  for i in $(seq 1 50); do
    [ -z "$(ip -n "$1" link show type ifb)" ] && return 0
    sleep 0.1
  done
  return 1
}
# rate_of NS PEER PEER_IP [-R] SECONDS: iperf3 from NS to PEER (-R: PEER to NS); the frame
# rate in bit/s in $measured (not printed: a command substitution's subshell would lose the
# port counter, and two servers would share a port).
port=5201
measured=0
rate_of() {
  local ns=$1 peer=$2 ip=$3 reverse=$4 secs=$5 out="" i omit=""
  port=$((port + 1))
  measured=0
  [ "$secs" -gt 1 ] && omit="-O 1"
  in_ns "$peer" iperf3 -s -1 -D -p "$port" -B "$ip" || return
  for i in $(seq 1 20); do
    out=$(in_ns "$ns" timeout 60 iperf3 -J -c "$ip" -p "$port" -t "$secs" $omit $reverse) && break
    sleep 0.2
  done
  measured=$(jq -r ".end.sum_received.bits_per_second * $FRAME_OVER_GOODPUT | floor" \
    <<<"$out" 2>/dev/null) || measured=0
}
# near MEASURED WANT: within 10% above (a token bucket never lets more through) or 20% below
# (TCP backing off from a small queue, a busy machine), the bounds of tests/bandwidth.
near() { awk -v m="$1" -v w="$2" 'BEGIN { exit !(m <= w * 1.10 && m >= w * 0.80) }'; }
near_or_above() { awk -v m="$1" -v w="$2" 'BEGIN { exit !(m >= w) }'; }

# bridge_conf NETWORK DATA_DIR [EXTRA_KEYS]: a 0.4.0 bridge config, gateway and masquerade
# on, dual-stack host-local (found beside the bridge: ours with ours, the node's with its own).
bridge_conf() {
  printf '%s' '{"cniVersion":"0.4.0","name":"'"$1"'","type":"bridge","bridge":"cni0",
    "isGateway":true,"ipMasq":true'"${3:-}"',"ipam":{"type":"host-local","dataDir":"'"$2"'",
    "ranges":[[{"subnet":"10.22.0.0/24"}],[{"subnet":"fd22::/64"}]]}}'
}
# pings NS ADDRESS: one echo from NS to ADDRESS is answered within 5 s.
pings() { in_ns "$1" busybox ping -c 1 -W 5 "$2" >/dev/null 2>&1; }
# bridge_state NODE MODE: what a bridge attachment leaves on NODE and in NODE-c, comparable
# between two nodes: the bridge's and eth0's global addresses, NODE-c's routes, the nat tables
# of MODE (the chains are named from the network and container ID, the same on both sides),
# the veth count.
bridge_state() {
  echo "cni0: $(ip -n "$1" -o addr show dev cni0 scope global 2>&1 | awk '{print $3, $4}' | sort | tr '\n' ' ')"
  echo "eth0: $(ip -n "$1-c" -o addr show dev eth0 scope global 2>&1 | awk '{print $3, $4}' | sort | tr '\n' ' ')"
  ip -n "$1-c" route show 2>&1
  ip -n "$1-c" -6 route show 2>&1 | grep -v -e '^fe80' -e '^multicast'
  tables "$1" "$2"
  echo "veths: $(ip -n "$1" -o link show type veth | wc -l)"
}

# The bridge, ours beside the node's reference (0.9.0 on Debian 11) in iptables MODE: the same
# config in two nodes leaves the same addresses, routes and masquerade rules; ours CHECKs;
# the container reaches its gateway; each DEL leaves what the other's leaves; DEL again; and
# each plugin's DEL removes the other's attachment.
check_bridge() {
  local mode=$1 env conf_o conf_r
  env=$(mode_env "$mode")
  conf_o=$(bridge_conf br "$WORK/ipam-o")
  conf_r=$(bridge_conf br "$WORK/ipam-r")
  make_node bo && netns_add bo-c && make_node br && netns_add br-c || { bad "namespaces"; return; }
  expect_cni "ours: ADD" bo "$BIN/bridge" ADD c1 "$conf_o" "$env" || return
  local result=$cni_out
  expect_cni "reference: ADD" br "$REF/bridge" ADD c1 "$conf_r" "$env" || return
  same "the same addresses, routes and $mode nat rules after ADD" "$(bridge_state br "$mode")" \
    "$(bridge_state bo "$mode")"
  expect "the ADD made masquerade rules" contains "$(tables bo "$mode")" "CNI-"
  expect_cni "ours: CHECK" bo "$BIN/bridge" CHECK c1 \
    "$(jq -c --argjson r "$result" '. + {prevResult: $r}' <<<"$conf_o")" "$env"
  expect "the container reaches its gateway" pings bo-c 10.22.0.1
  expect_cni "ours: DEL" bo "$BIN/bridge" DEL c1 "$conf_o" "$env"
  expect_cni "reference: DEL" br "$REF/bridge" DEL c1 "$conf_r" "$env"
  same "the same state after DEL" "$(bridge_state br "$mode")" "$(bridge_state bo "$mode")"
  expect_cni "ours: DEL again (idempotent)" bo "$BIN/bridge" DEL c1 "$conf_o" "$env"
  # Across: one plugin's attachment deleted by the other, on each node.
  expect_cni "reference ADD, then" bo "$REF/bridge" ADD c2 "$conf_r" "$env" &&
    expect_cni "ours DELs it" bo "$BIN/bridge" DEL c2 "$conf_r" "$env"
  expect_cni "ours ADD, then" br "$BIN/bridge" ADD c3 "$conf_o" "$env" &&
    expect_cni "the reference DELs it" br "$REF/bridge" DEL c3 "$conf_o" "$env"
  local n listed
  for n in bo br; do
    listed=$(tables "$n" "$mode")
    if ! grep -q '^\*nat' <<<"$listed"; then
      bad "$n: could not list the nat tables: $listed"
    elif grep -q CNI- <<<"$listed"; then
      bad "$n: masquerade rules left: $(grep CNI- <<<"$listed" | head -3)"
    else
      ok "$n: no masquerade rule left"
    fi
    same "$n: no veth left" "veths: 0" "$(bridge_state "$n" "$mode" | grep '^veths')"
  done
  netns_del_all
}

# The first use of the legacy tables since boot, by ours (the VM's first check: nothing has
# loaded ip_tables or ip6_tables yet). The kernel does not load them on demand; the iptables
# tools run modprobe first, and so must ours: bridge's ipMasq and portmap in legacy mode share
# the one transaction that does. Then the masquerade rules are there, and DEL removes them.
check_legacy_first_use() {
  local env conf
  if [ -e /proc/net/ip_tables_names ] || [ -e /proc/net/ip6_tables_names ]; then
    bad "ip_tables or ip6_tables was loaded before this check: it must run first on a fresh boot"
    return
  fi
  env=$(mode_env legacy)
  conf=$(bridge_conf bl "$WORK/ipam-l")
  make_node bl && netns_add bl-c || { bad "namespaces"; return; }
  expect_cni "ours: ADD, legacy mode, x_tables not loaded" bl "$BIN/bridge" ADD c1 "$conf" "$env" ||
    return
  expect "ip_tables and ip6_tables loaded" test -e /proc/net/ip_tables_names -a \
    -e /proc/net/ip6_tables_names
  expect "the ADD made masquerade rules in both families" contains "$(tables bl legacy)" "CNI-"
  same "a POSTROUTING jump in each family" 2 "$(tables bl legacy | grep -c '^-A POSTROUTING .*CNI-')"
  expect_cni "ours: DEL" bl "$BIN/bridge" DEL c1 "$conf" "$env"
  if grep -q CNI- <<<"$(tables bl legacy)"; then
    bad "masquerade rules left: $(tables bl legacy | grep CNI- | head -3)"
  else
    ok "no masquerade rule left"
  fi
  netns_del_all
}

# The bridge's VLAN keys on a kernel with VLAN filtering (Debian 11's 5.10 in the VM). "vlan"
# as the node's reference 0.9.0 sets it, which keeps the bridge's default VLAN 1 on the port:
# ours with "preserveDefaultVlan": true makes the same VLANs. Ours by default removes VLAN 1,
# as upstream does since 1.8 (plugins/bridge/README.md). Upstream's later "vlanTrunk" (ours
# only): tagged VLANs on the port, with VLAN 1 its untagged PVID. DEL removes the port.
check_bridge_vlan() {
  local conf_o conf_r conf_d trunk ports
  conf_o=$(bridge_conf bv "$WORK/ipam-vo" ',"vlan":100,"preserveDefaultVlan":true')
  conf_r=$(bridge_conf bv "$WORK/ipam-vr" ',"vlan":100')
  make_node vo && netns_add vo-c && make_node vr && netns_add vr-c && make_node vd &&
    netns_add vd-c || { bad "namespaces"; return; }
  expect_cni "ours: ADD with vlan 100, preserveDefaultVlan" vo "$BIN/bridge" ADD c1 "$conf_o" || return
  expect_cni "reference: ADD with vlan 100" vr "$REF/bridge" ADD c1 "$conf_r" || return
  same "the bridge filters VLANs" 1 "$(in_ns vo cat /sys/class/net/cni0/bridge/vlan_filtering 2>&1)"
  same "the same bridge VLANs as the reference" "$(vlans vr)" "$(vlans vo)"
  expect "the port's PVID is 100, untagged" grep -q '^VETH 100 PVID Egress Untagged$' <<<"$(vlans vo)"
  expect "the container reaches its gateway over VLAN 100" pings vo-c 10.22.0.1
  expect_cni "ours: DEL" vo "$BIN/bridge" DEL c1 "$conf_o"
  expect_cni "reference: DEL" vr "$REF/bridge" DEL c1 "$conf_r"
  same "the same bridge VLANs after DEL" "$(vlans vr)" "$(vlans vo)"

  conf_d=$(bridge_conf bd "$WORK/ipam-vd" ',"vlan":100')
  expect_cni "ours: ADD with vlan 100 (default VLAN not preserved)" vd "$BIN/bridge" ADD c1 "$conf_d" ||
    return
  ports=$(vlans vd)
  expect "every port in VLAN 100 as its PVID" grep -q '^VETH 100 PVID Egress Untagged$' <<<"$ports"
  if grep -q '^VETH 1 ' <<<"$ports"; then bad "a port kept VLAN 1: $ports"; else ok "no port kept VLAN 1"; fi
  expect "the container reaches its gateway over VLAN 100" pings vd-c 10.22.0.1
  expect_cni "ours: DEL" vd "$BIN/bridge" DEL c1 "$conf_d"

  trunk=$(bridge_conf bt "$WORK/ipam-t" ',"vlanTrunk":[{"minID":101,"maxID":103},{"id":200}]')
  expect_cni "ours: ADD with vlanTrunk" vd "$BIN/bridge" ADD c2 "$trunk" || return
  ports=$(vlans vd)
  for v in 101 102 103 200; do
    expect "vlanTrunk: the port carries VLAN $v tagged" grep -q "^VETH $v\$" <<<"$ports"
  done
  expect "vlanTrunk: VLAN 1 is the trunk port's PVID, untagged" \
    grep -q '^VETH 1 PVID Egress Untagged$' <<<"$ports"
  expect_cni "ours: DEL of the trunk port" vd "$BIN/bridge" DEL c2 "$trunk"
  if grep -q '^VETH 101$' <<<"$(vlans vd)"; then bad "the trunk port left"; else ok "the trunk port removed"; fi
  netns_del_all
}
# vlans NODE: `bridge vlan show` of NODE's ports, one "PORT VLAN FLAGS" line each, veth names
# replaced by VETH.
vlans() {
  in_ns "$1" bridge vlan show 2>&1 | awk 'NF >= 1 && $1 != "port" { if ($1 !~ /^[0-9]/) port = $1; else $0 = port " " $0; print }' |
    sed -E 's/^veth[0-9a-f]+/VETH/; s/^(\S+)\s+/\1 /; s/\s+$//; s/\s+/ /g' | sort
}

# nodegate admit on the project's seed scenario (conf/): the hostNetwork DNS pod is refused
# for the static pod's hostPort 8080, and admitted without that pod.
check_admit() {
  local d=$NG_DIR/data/admit out rc=0
  out=$("$BIN/nodegate" admit -o json --node "$d/node.yaml" --manifests "$d/manifests" \
    "$d/candidates/coredns-hostnetwork.yaml" 2>"$WORK/stderr") || rc=$?
  same "refused: exit 1" 1 "$rc"
  same "refused by NodePorts" NodePorts "$(jq -r '.pods[0].failures[0].plugin' <<<"$out" 2>&1)"
  expect "the holder named" contains "$out" "hostport-web-worker-1"
  rc=0
  out=$("$BIN/nodegate" admit -o json --profile kubelet --node "$d/node.yaml" \
    --manifests "$d/manifests-without-hostport" "$d/candidates/coredns-hostnetwork.yaml" \
    2>"$WORK/stderr") || rc=$?
  same "admitted without the static pod: exit 0" 0 "$rc"
  same "admitted" true "$(jq -r '.admitted' <<<"$out" 2>&1)"
}

# nodegate ports on a node holding ours and the reference's mappings (written by the node's
# iptables) and a listener: each mapping with its container, target and pod (libcni cache).
check_ports() {
  local conf conf2 out cache=$WORK/cni-cache
  conf=$(portmap_conf pt "$MAPPINGS")
  conf2=$(portmap_conf pt "$MAPPINGS_2" "" v4)
  pod_node pp || { bad "namespaces"; return; }
  mkdir -p "$cache"
  printf '%s' '{"kind":"cniCacheV1","containerId":"ctr1","ifName":"eth0","networkName":"pt",
    "cniArgs":[["K8S_POD_NAMESPACE","default"],["K8S_POD_NAME","web-1"]]}' >"$cache/pt-ctr1-eth0"
  expect_cni "ours ADD ctr1" pp "$BIN/portmap" ADD ctr1 "$conf" &&
    expect_cni "reference ADD ctr2" pp "$REF/portmap" ADD ctr2 "$conf2" || return
  in_ns pp busybox httpd -p 9090 -h "$WORK" || bad "httpd"
  if out=$(in_ns pp "$BIN/nodegate" ports -o json --cni-cache "$cache" 2>"$WORK/stderr"); then
    ok "nodegate ports"
  else
    bad "nodegate ports: $(cat "$WORK/stderr")"
  fi
  same "8080: ours, to the container, its pod" "ctr1 10.123.0.2:80 iptables-nft default/web-1" \
    "$(jq -r '.ports[] | select(.port == 8080 and .hostIP == "0.0.0.0") | .mapped[] |
      "\(.containerID) \(.target) \(.layout) \(.pod)"' <<<"$out" 2>&1)"
  same "8081: the reference's" "ctr2 10.123.0.2:80 iptables-nft" \
    "$(jq -r '.ports[] | select(.port == 8081 and .hostIP == "0.0.0.0") | .mapped[] |
      "\(.containerID) \(.target) \(.layout)"' <<<"$out" 2>&1)"
  same "9090: the listener" busybox \
    "$(jq -r '.ports[] | select(.port == 9090) | .listening[].command' <<<"$out" 2>&1 | sort -u)"
  netns_del_all
}

cleanup_checks() {
  netns_del_all
  rm -rf "$WORK"
}
