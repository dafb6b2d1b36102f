# Shared by the benchmarks that need a node: sourced, not run.
#
#   settle                       waits until the CPU is idle (a deleted namespace's teardown)
#   make_node NAME               a network namespace with lo up and a bridge-side address
#                                10.88.0.1/16 (on br0, a veth whose peer is up), as a node
#                                running a CNI bridge has
#   iptables_population N NET    iptables-restore input: N other containers of network NET in
#                                the reference portmap's iptables layout, one TCP mapping each
#                                (host ports 10000.., chains CNI-DN-<n>)
#   veth_pair_cost DIR           the kernel's cost of a veth pair in the node (in_node): 20 made,
#                                then deleted, by one `ip -batch` each (ip's exec shared by the
#                                20); prints "ADD_NS DEL_NS" per pair. DIR holds the batch files

# settle: waits (at most 30 s) until the machine is idle again. A deleted namespace is torn down
# by the kernel afterwards, in the background (thousands of chains take seconds of CPU), and a
# section timed meanwhile would measure that teardown, not the plugin.
settle() {
  local deadline=$((SECONDS + 30)) a b idle total
  while [ "$SECONDS" -lt "$deadline" ]; do
    read -r -a a < <(head -1 /proc/stat)
    sleep 0.3
    read -r -a b < <(head -1 /proc/stat)
    idle=$(( (b[4] + b[5]) - (a[4] + a[5]) ))
    total=0
    for i in 1 2 3 4 5 6 7 8; do total=$((total + b[i] - a[i])); done
    [ "$total" -gt 0 ] && [ $((idle * 100 / total)) -ge 90 ] && return 0
  done
  # A machine shared with other work may never be idle: measure anyway (the benchmarks run
  # under `set -e`, and a failing settle ended them without a word).
  echo "settle: the machine was still busy after 30 s; measuring anyway" >&2
}

make_node() {
  ip netns add "$1"
  ip netns exec "$1" sh -c 'ip link set lo up && ip link add br0 type veth peer name br0p &&
    ip link set br0p up && ip addr add 10.88.0.1/16 dev br0 && ip link set br0 up'
}

iptables_population() {
  local n=$1 net=${2:-$NET}
  awk -v n="$n" -v net="$net" 'BEGIN {
    print "*nat"
    print ":PREROUTING ACCEPT [0:0]"; print ":INPUT ACCEPT [0:0]"
    print ":OUTPUT ACCEPT [0:0]"; print ":POSTROUTING ACCEPT [0:0]"
    print ":CNI-HOSTPORT-DNAT - [0:0]"; print ":CNI-HOSTPORT-SETMARK - [0:0]"
    print ":CNI-HOSTPORT-MASQ - [0:0]"
    for (i = 0; i < n; i++) printf ":CNI-DN-%021x - [0:0]\n", i + 1
    print "-A PREROUTING -m addrtype --dst-type LOCAL -j CNI-HOSTPORT-DNAT"
    print "-A OUTPUT -m addrtype --dst-type LOCAL -j CNI-HOSTPORT-DNAT"
    print "-A POSTROUTING -m comment --comment \"CNI portfwd requiring masquerade\" -j CNI-HOSTPORT-MASQ"
    print "-A CNI-HOSTPORT-SETMARK -m comment --comment \"CNI portfwd masquerade mark\" -j MARK --set-xmark 0x2000/0x2000"
    print "-A CNI-HOSTPORT-MASQ -m mark --mark 0x2000/0x2000 -j MASQUERADE"
    for (i = 0; i < n; i++) {
      chain = sprintf("CNI-DN-%021x", i + 1); port = 10000 + i
      ip = sprintf("10.88.%d.%d", int(i / 250), i % 250 + 2)
      printf "-A %s -s 10.88.0.0/16 -p tcp -m tcp --dport %d -j CNI-HOSTPORT-SETMARK\n", chain, port
      printf "-A %s -s 127.0.0.1/32 -p tcp -m tcp --dport %d -j CNI-HOSTPORT-SETMARK\n", chain, port
      printf "-A %s -p tcp -m tcp --dport %d -j DNAT --to-destination %s:80\n", chain, port, ip
      printf "-A CNI-HOSTPORT-DNAT -p tcp -m comment --comment \"dnat name: \\\"%s\\\" id: \\\"other%d\\\"\" -m multiport --dports %d -j %s\n", net, i, port, chain
    }
    print "COMMIT"
  }'
}

veth_pair_cost() {
  local add="$1/veth-add.batch" del="$1/veth-del.batch" t0 t1 t2 i
  : >"$add"
  : >"$del"
  for i in $(seq 20); do
    echo "link add ngvf$i type veth peer name ngvp$i" >>"$add"
    echo "link del ngvf$i" >>"$del"
  done
  t0=$(date +%s%N)
  in_node ip -batch "$add"
  t1=$(date +%s%N)
  in_node ip -batch "$del"
  t2=$(date +%s%N)
  echo "$(((t1 - t0) / 20)) $(((t2 - t1) / 20))"
}
