#!/usr/bin/env bash
# portmap benchmark: ADD and DEL latency of ours beside Debian's reference plugin, with 0, 1,000
# and 5,000 other mappings on the node, in each place the rules can live:
#   nft     the iptables layout in nf_tables, the node's default: both plugins run with the
#           node's PATH (iptables is iptables-nft) and the reference's own config;
#   legacy  the iptables layout in x_tables: ours with "iptablesMode":"legacy", the reference
#           with the legacy tools first on PATH;
#   nftables  our nftables backend (the reference's nftables backend is newer than Debian's).
# `floor` is what no plugin on an nf_tables node can beat: the exec of a static binary that
# sends one generation-checked batch adding one jump rule to CNI-HOSTPORT-DNAT in the same
# `ip nat` (bench/portmap/nft_floor.cc), the least an ADD adds; it is timed in the same loop as
# our ADD, each call after the same pause (see measure).
# A DEL's deleted objects are freed an RCU grace period later, and a commit made meanwhile
# waits for that (for any writer); each timed ADD starts 50 ms after the previous DEL, so the
# figures are the calls' own cost, not that wait. A node that starts and stops many pods makes
# its calls back to back: the "back to back" rows (nft mode, ours and the reference) time ADD
# then DEL then the next ADD with no pause, that wait included, and an ADD+DEL pair as one
# figure; the targets judge those.
# Everything runs inside a throwaway node namespace per size; the "other mappings" are loaded in
# one go (iptables-nft-restore, iptables-legacy-restore, nft -f) in each layout.
#
#   bash bench/portmap/bench.sh BUILD_DIR        (root; RUNS=N to change repetitions)
#   (SIZES="0 1000", MANY_PORTS=0 and CT_ENTRIES=0 leave parts out)
set -euo pipefail
BUILD_DIR="$(cd "${1:-build}" && pwd)"
OURS="$BUILD_DIR/bin/portmap"
FLOOR="$BUILD_DIR/bench/nft_floor"
REFERENCE=/usr/lib/cni/portmap
RUNS="${RUNS:-15}"
REF_RUNS="${REF_RUNS:-5}"
SIZES="${SIZES:-0 1000 5000}"
NET=benchnet
WORK="$(mktemp -d /tmp/ng-portmap-bench.XXXXXX)"
NODE=""

cleanup() {
  [ -n "$NODE" ] && ip netns del "$NODE" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
# shellcheck source=bench/lib/node.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/node.sh"
# shellcheck source=bench/lib/results.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/results.sh"

[ "$(id -u)" = 0 ] || { echo "portmap bench needs root (network namespaces)" >&2; exit 1; }
[ -x "$OURS" ] || { echo "missing $OURS (build first)" >&2; exit 1; }
[ -x "$REFERENCE" ] || { echo "missing $REFERENCE (containernetworking-plugins)" >&2; exit 1; }
[ -x "$FLOOR" ] || { echo "missing $FLOOR (build first)" >&2; exit 1; }

# iptables* -> the legacy tools, for the reference plugin.
mkdir -p "$WORK/legacy-bin"
for tool in iptables ip6tables; do
  for suffix in "" -save -restore; do
    ln -sf "/usr/sbin/$tool-legacy$suffix" "$WORK/legacy-bin/$tool$suffix"
  done
done

conf() {  # backend id port
  printf '{"cniVersion":"1.0.0","name":"%s","type":"portmap"%s,' "$NET" "$1"
  if [ -n "${MAPPINGS:-}" ]; then
    printf '"runtimeConfig":{"portMappings":%s},' "$MAPPINGS"
  else
    printf '"runtimeConfig":{"portMappings":[{"hostPort":%s,"containerPort":80,"protocol":"%s"}]},' "$3" "${PROTO:-tcp}"
  fi
  printf '"prevResult":{"cniVersion":"1.0.0","interfaces":[{"name":"eth0","sandbox":"/run/netns/%s"}],' "$2"
  printf '"ips":[{"interface":0,"address":"10.88.200.2/16","gateway":"10.88.0.1"}]}}'
}

# N other containers in our nftables layout: map elements, hairpin elements and ownership
# records.
nftables_population() {
  local n=$1 prefix
  prefix="n$(printf '%s' "$NET" | sha512sum | cut -c1-10)"
  awk -v n="$n" -v p="$prefix" 'BEGIN {
    for (i = 0; i < n; i++) {
      ip = sprintf("10.88.%d.%d", int(i / 250), i % 250 + 2)
      printf "add element inet cni_hostport %s_dnat_any_v4 { tcp . %d comment \"other%d\" : %s . 80 }\n", p, 10000 + i, i, ip
      printf "add element inet cni_hostport owned { \"o%014d\" . \"all4\", \"o%014d\" . \"k%014d\" }\n", i, i, i
      printf "add element inet cni_hostport %s_hairpin_any_v4_16 { 10.88.0.0 . tcp . %d comment \"other%d\" }\n", p, 10000 + i, i
    }
  }'
}

# Median of the numbers on stdin.
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR == 0) { print "nan"; exit }
  if (NR % 2) printf "%.2f\n", v[(NR + 1) / 2]; else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# The median, in ms, of column B minus column A of FILE's lines, for each "A B" given.
column_medians() {  # file "a b"...
  local file=$1 pair a b out=""
  shift
  for pair in "$@"; do
    read -r a b <<<"$pair"
    out="$out $(awk -v a="$a" -v b="$b" '{ printf "%.3f\n", ($b - $a) * 1000 }' "$file" | median)"
  done
  echo "$out"
}

# Times RUNS x (ADD, DEL) of one plugin inside the node namespace; prints "add_ms del_ms".
# With `with-floor` (ours in the nft mode), the floor is timed in the same loop and rhythm:
# after each DEL and its 50 ms pause, the floor's commit, another pause, and the floor's bare
# exec; then it prints "add_ms del_ms floor_ms exec_ms". A commit made right after another runs
# faster here than one made after a pause (about 4 ms at 5,000 mappings: the CPU's caches and
# the vCPU go cold while it sleeps), so a floor timed back to back would be measured under
# kinder conditions than the ADD it bounds.
# With `cpu` instead, it prints "add_ms del_ms add_cpu_ms": the ADD's CPU time (user and system,
# the kernel's work for it included) besides its wall time, which on a busy machine is mostly
# waiting for a CPU.
# With PAUSE=0 in the environment, no pause at all: ADD, DEL and the next ADD back to back.
measure() {  # label binary backend_json runs path_prefix [with-floor|cpu]
  local label=$1 binary=$2 backend=$3 runs=$4 path=$5 floor=""
  [ "${6:-}" = with-floor ] && floor=$FLOOR
  ip netns exec "$NODE" env PATH="$path$PATH" BIN="$binary" RUNS="$runs" FLOOR_BIN="$floor" \
    PAUSE="${PAUSE:-0.05}" \
    CONF_ADD="$(conf "$backend" bench-ctr 9000)" bash -c '
      export CNI_CONTAINERID=bench-ctr CNI_NETNS=/run/netns/bench-ctr CNI_IFNAME=eth0 CNI_PATH=/usr/lib/cni
      # The CPU time of the finished children, before and after the ADD: `times` (a builtin,
      # redirected without a fork) prints it on its second line as user and system time.
      before=$(mktemp) after=$(mktemp)
      trap "rm -f $before $after" EXIT
      for i in $(seq 1 "$RUNS"); do
        times >"$before"
        t0=$EPOCHREALTIME
        CNI_COMMAND=ADD "$BIN" <<<"$CONF_ADD" >/dev/null || { echo "ADD failed" >&2; exit 1; }
        t1=$EPOCHREALTIME
        times >"$after"
        CNI_COMMAND=DEL "$BIN" <<<"$CONF_ADD" >/dev/null || { echo "DEL failed" >&2; exit 1; }
        t2=$EPOCHREALTIME
        cpu=$(awk "FNR == 2 { gsub(/[ms]/, \" \"); printf \"%s \", \$1 * 60 + \$2 + \$3 * 60 + \$4 }" \
          "$before" "$after")
        line="$t0 $t1 $t2 $cpu"
        if [ -n "$FLOOR_BIN" ]; then
          sleep 0.05
          t3=$EPOCHREALTIME
          "$FLOOR_BIN" CNI-HOSTPORT-DNAT NG-FLOOR-T || { echo "floor failed" >&2; exit 1; }
          t4=$EPOCHREALTIME
          sleep 0.05
          t5=$EPOCHREALTIME
          "$FLOOR_BIN" --noop
          t6=$EPOCHREALTIME
          line="$line $t3 $t4 $t5 $t6"
        fi
        echo "$line"
        [ "$PAUSE" = 0 ] || sleep "$PAUSE"
      done' > "$WORK/$label.raw"
  if [ "${PAUSE:-}" = 0 ]; then
    column_medians "$WORK/$label.raw" "1 2" "2 3" "1 3"
  elif [ -n "$floor" ]; then
    column_medians "$WORK/$label.raw" "1 2" "2 3" "6 7" "8 9"
  elif [ "${6:-}" = cpu ]; then
    column_medians "$WORK/$label.raw" "1 2" "2 3" "4 5"
  else
    column_medians "$WORK/$label.raw" "1 2" "2 3"
  fi
}

# The same for two configs of one binary, run alternately (ADD/DEL of A, then of B), so that
# drift of the machine's speed during the runs falls on both: prints "add_a_ms add_b_ms".
measure_pair() {  # label binary backend_json_a backend_json_b runs
  local label=$1 binary=$2 runs=$5
  ip netns exec "$NODE" env BIN="$binary" RUNS="$runs" CONF_A="$(conf "$3" bench-ctr 9000)" \
    CONF_B="$(conf "$4" bench-ctr 9000)" bash -c '
      export CNI_CONTAINERID=bench-ctr CNI_NETNS=/run/netns/bench-ctr CNI_IFNAME=eth0 CNI_PATH=/usr/lib/cni
      for i in $(seq 1 "$RUNS"); do
        line=""
        for conf in "$CONF_A" "$CONF_B"; do
          t0=$EPOCHREALTIME
          CNI_COMMAND=ADD "$BIN" <<<"$conf" >/dev/null || { echo "ADD failed" >&2; exit 1; }
          t1=$EPOCHREALTIME
          CNI_COMMAND=DEL "$BIN" <<<"$conf" >/dev/null || { echo "DEL failed" >&2; exit 1; }
          line="$line $t0 $t1"
          sleep 0.05
        done
        echo "$line"
      done' > "$WORK/$label.raw"
  column_medians "$WORK/$label.raw" "1 2" "3 4"
}

# Median wall time of RUNS execs of the floor program in the node; prints "ms".
floor_ms() {  # args...
  ip netns exec "$NODE" env RUNS="$RUNS" BIN="$FLOOR" bash -c '
    for i in $(seq 1 "$RUNS"); do
      t0=$EPOCHREALTIME; "$BIN" "$@" || exit 1; t1=$EPOCHREALTIME
      awk -v a="$t0" -v b="$t1" "BEGIN { printf \"%.3f\n\", (b - a) * 1000 }"
    done' _ "$@" | median
}

declare -A ADD DEL PAIR CPU FLOOR_MS EXEC_MS DUMP_MS DUMP_EXEC_MS
# One pod with MANY_PORTS UDP host ports (a pod author chooses the number): the whole layout in
# one transaction, and the stale UDP conntrack entries of all those ports flushed with one dump.
# Measured first: for about half a minute after a namespace with thousands of chains is deleted,
# large commits here ran 40% slower (the kernel's teardown, not visible as CPU use).
MANY_PORTS="${MANY_PORTS:-2000}"
if [ "$MANY_PORTS" -gt 0 ]; then
  NODE="ng-pm-bench-$$-many"
  settle
  make_node "$NODE"
  MAPPINGS=$(awk -v n="$MANY_PORTS" 'BEGIN { printf "["; for (i = 0; i < n; i++)
    printf "%s{\"hostPort\":%d,\"containerPort\":53,\"protocol\":\"udp\"}", (i ? "," : ""), 20000 + i; printf "]" }')
  echo "one pod with $MANY_PORTS UDP host ports" >&2
  read -r a d c < <(measure "many-ours-nft" "$OURS" '' "$REF_RUNS" "" cpu)
  ADD[many-nft]=$a; DEL[many-nft]=$d; CPU[many-nft]=$c
  read -r a d c < <(measure "many-ours-legacy" "$OURS" ',"iptablesMode":"legacy"' "$REF_RUNS" "" cpu)
  ADD[many-legacy]=$a; DEL[many-legacy]=$d; CPU[many-legacy]=$c
  read -r a d c < <(measure "many-ours-nftables" "$OURS" ',"backend":"nftables"' "$REF_RUNS" "" cpu)
  ADD[many-nftables]=$a; DEL[many-nftables]=$d; CPU[many-nftables]=$c
  MAPPINGS=""
  ip netns del "$NODE"
  NODE=""
fi

for n in $SIZES; do
  NODE="ng-pm-bench-$$-$n"
  settle
  make_node "$NODE"
  iptables_population "$n" > "$WORK/ipt.rules"
  ip netns exec "$NODE" iptables-nft-restore < "$WORK/ipt.rules"
  # The floor's rule is the least an ADD adds: one entry rule in CNI-HOSTPORT-DNAT jumping to a
  # (here empty) chain. The kernel then validates every chain reachable from the hooks that
  # reach CNI-HOSTPORT-DNAT (PREROUTING and OUTPUT), as it does for a real ADD.
  ip netns exec "$NODE" iptables-nft -t nat -N NG-FLOOR-T

  # Our nftables structure for the network (first ADD), then the other mappings.
  ip netns exec "$NODE" env CNI_COMMAND=ADD CNI_CONTAINERID=setup CNI_NETNS=/x CNI_IFNAME=eth0 \
    CNI_PATH=/x "$OURS" <<<"$(conf ',"backend":"nftables"' setup 9)" >/dev/null
  nftables_population "$n" > "$WORK/nft.rules"
  ip netns exec "$NODE" nft -f "$WORK/nft.rules"
  echo "node with $n other mappings: $(ip netns exec "$NODE" iptables-nft-save -t nat 2>/dev/null | grep -c -- '-A CNI-HOSTPORT-DNAT') entry rules in nf_tables, $(ip netns exec "$NODE" nft list table inet cni_hostport | grep -c 'comment "other') nft elements" >&2

  read -r a d f e < <(measure "ours-nft-$n" "$OURS" '' "$RUNS" "" with-floor)
  ADD[nft,$n]=$a; DEL[nft,$n]=$d; FLOOR_MS[$n]=$f; EXEC_MS[$n]=$e
  if [ "$n" = 1000 ]; then  # "hostPortConflicts":"reject": lock, read the node's mappings, ADD
    read -r a b < <(NODEGATE_PORTMAP_LOCK="$WORK/portmap.lock" measure_pair "ours-nft-reject-$n" \
      "$OURS" '' ',"hostPortConflicts":"reject"' "$RUNS")
    ADD[nft-allow,$n]=$a; ADD[nft-reject,$n]=$b
  fi
  read -r a d < <(measure "reference-nft-$n" "$REFERENCE" "" "$REF_RUNS" "")
  ADD[refnft,$n]=$a; DEL[refnft,$n]=$d
  # Back to back: no pause between the calls (see the header).
  read -r a d p < <(PAUSE=0 measure "ours-nft-b2b-$n" "$OURS" '' "$RUNS" "")
  ADD[b2b,$n]=$a; DEL[b2b,$n]=$d; PAIR[b2b,$n]=$p
  read -r a d p < <(PAUSE=0 measure "reference-nft-b2b-$n" "$REFERENCE" '' "$REF_RUNS" "")
  ADD[refb2b,$n]=$a; DEL[refb2b,$n]=$d; PAIR[refb2b,$n]=$p
  DUMP_MS[$n]=$(floor_ms --dump CNI-HOSTPORT-DNAT)
  DUMP_EXEC_MS[$n]=$(floor_ms --noop)
  read -r a d < <(measure "ours-nftables-$n" "$OURS" ',"backend":"nftables"' "$RUNS" "")
  ADD[nftables,$n]=$a; DEL[nftables,$n]=$d
  if [ "$n" = 1000 ]; then
    read -r a b < <(NODEGATE_PORTMAP_LOCK="$WORK/portmap.lock" measure_pair \
      "ours-nftables-reject-$n" "$OURS" ',"backend":"nftables"' \
      ',"backend":"nftables","hostPortConflicts":"reject"' "$RUNS")
    ADD[nftables-allow,$n]=$a; ADD[nftables-reject,$n]=$b
  fi
  ip netns del "$NODE"
  # A legacy node of its own: a node whose x_tables hold the mappings (on an nf_tables node
  # with a populated legacy table too, DEL also reads that table to remove the container's
  # rules of the other mode).
  NODE="ng-pm-bench-$$-$n-legacy"
  settle
  make_node "$NODE"
  ip netns exec "$NODE" iptables-legacy-restore < "$WORK/ipt.rules"
  echo "legacy node with $n other mappings: $(ip netns exec "$NODE" iptables-legacy-save -t nat | grep -c -- '-A CNI-HOSTPORT-DNAT') entry rules in x_tables" >&2
  read -r a d < <(measure "ours-legacy-$n" "$OURS" ',"iptablesMode":"legacy"' "$RUNS" "")
  ADD[legacy,$n]=$a; DEL[legacy,$n]=$d
  read -r a d < <(measure "reference-legacy-$n" "$REFERENCE" "" "$REF_RUNS" "$WORK/legacy-bin:")
  ADD[reflegacy,$n]=$a; DEL[reflegacy,$n]=$d
  ip netns del "$NODE"
  NODE=""
done

# A UDP mapping on a node whose conntrack table holds no entry, then CT_ENTRIES connections:
# ADD and DEL flush the host port's UDP entries. Each dump walks the kernel's whole conntrack
# hash whatever the namespace holds, so with no entry the flush asks for the count and dumps
# nothing. Ours runs the flush after it exits, in the helper that releases its nfnetlink
# sockets (docs/performance/conntrack.md), so its UDP call should cost what the
# same call with a TCP mapping (no flush at all) costs. OLD_PORTMAP=path adds that binary's UDP
# ADD and DEL beside ours (an A/B of the flush).
CT_ENTRIES="${CT_ENTRIES:-20000}"
OLD_PORTMAP="${OLD_PORTMAP:-}"
CT_SIZES=""
if [ "$CT_ENTRIES" -gt 0 ]; then CT_SIZES="0 $CT_ENTRIES"; fi
for ct in $CT_SIZES; do
  NODE="ng-pm-bench-$$-ct$ct"
  settle
  make_node "$NODE"
  awk -v n="$ct" 'BEGIN { for (i = 0; i < n; i++)
    printf "-I -s 10.1.%d.%d -d 10.2.0.1 -p tcp --sport %d --dport 80 --state ESTABLISHED -u ASSURED -t 3600\n",
      int(i / 250) % 250, i % 250 + 1, 10000 + i % 50000 }' > "$WORK/ct.txt"
  [ "$ct" = 0 ] || ip netns exec "$NODE" conntrack -R "$WORK/ct.txt" >/dev/null 2>&1
  echo "node with $(ip netns exec "$NODE" conntrack -C) conntrack entries, UDP mapping" >&2
  PROTO=udp
  read -r a d < <(measure "udp-ours-iptables-$ct" "$OURS" '' "$RUNS" "")
  ADD[udp-iptables,$ct]=$a; DEL[udp-iptables,$ct]=$d
  read -r a d < <(measure "udp-ours-nftables-$ct" "$OURS" ',"backend":"nftables"' "$RUNS" "")
  ADD[udp-nftables,$ct]=$a; DEL[udp-nftables,$ct]=$d
  if [ -n "$OLD_PORTMAP" ]; then
    read -r a d < <(measure "udp-old-iptables-$ct" "$OLD_PORTMAP" '' "$RUNS" "")
    ADD[udp-old,$ct]=$a; DEL[udp-old,$ct]=$d
  fi
  read -r a d < <(measure "udp-reference-$ct" "$REFERENCE" "" "$REF_RUNS" "")
  ADD[udp-reference,$ct]=$a; DEL[udp-reference,$ct]=$d
  PROTO=tcp
  read -r a d < <(measure "tcp-ours-iptables-$ct" "$OURS" '' "$RUNS" "")
  ADD[tcp-iptables,$ct]=$a; DEL[tcp-iptables,$ct]=$d
  ip netns del "$NODE"
  NODE=""
done

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.1fx", a / b; else print "n/a" }'; }

echo
echo "portmap ADD / DEL latency, median ms (ours: $RUNS runs, reference: $REF_RUNS runs)"
echo "nf_tables (the node's default iptables; same config for both; floor = exec of a static binary + one commit adding a jump rule)"
printf '%-7s | %-17s | %-17s | %-15s | %-13s | %-14s\n' "others" "ours" "reference" "ref/ours" "floor (exec)" "ours - floor"
printf '%-7s | %-17s | %-17s | %-15s | %-13s | %-14s\n' "" "ADD      DEL" "ADD      DEL" "ADD     DEL" "" "ADD"
for n in $SIZES; do
  over=$(awk -v a="${ADD[nft,$n]}" -v f="${FLOOR_MS[$n]}" 'BEGIN { printf "%+.2f", a - f }')
  printf '%-7s | %8s %8s | %8s %8s | %7s %7s | %5s (%5s) | %8s\n' "$n" \
    "${ADD[nft,$n]}" "${DEL[nft,$n]}" "${ADD[refnft,$n]}" "${DEL[refnft,$n]}" \
    "$(ratio "${ADD[refnft,$n]}" "${ADD[nft,$n]}")" "$(ratio "${DEL[refnft,$n]}" "${DEL[nft,$n]}")" \
    "${FLOOR_MS[$n]}" "${EXEC_MS[$n]}" "$over"
done
echo
echo "nf_tables back to back: ADD, DEL and the next ADD with no pause (each DEL's objects are freed a grace period later, and the next commit waits for it)"
printf '%-7s | %-26s | %-26s | %-23s | %-14s\n' "others" "ours" "reference" "ref/ours" "ours - floor"
printf '%-7s | %-26s | %-26s | %-23s | %-14s\n' "" "ADD      DEL      ADD+DEL" "ADD      DEL      ADD+DEL" "ADD     DEL     pair" "ADD"
for n in $SIZES; do
  over=$(awk -v a="${ADD[b2b,$n]}" -v f="${FLOOR_MS[$n]}" 'BEGIN { printf "%+.2f", a - f }')
  printf '%-7s | %8s %8s %8s | %8s %8s %8s | %7s %7s %7s | %8s\n' "$n" \
    "${ADD[b2b,$n]}" "${DEL[b2b,$n]}" "${PAIR[b2b,$n]}" \
    "${ADD[refb2b,$n]}" "${DEL[refb2b,$n]}" "${PAIR[refb2b,$n]}" \
    "$(ratio "${ADD[refb2b,$n]}" "${ADD[b2b,$n]}")" "$(ratio "${DEL[refb2b,$n]}" "${DEL[b2b,$n]}")" \
    "$(ratio "${PAIR[refb2b,$n]}" "${PAIR[b2b,$n]}")" "$over"
done
echo
echo "x_tables (legacy iptables: ours with iptablesMode legacy, the reference with the legacy tools on PATH), and our nftables backend"
printf '%-7s | %-17s | %-17s | %-15s | %-17s | %-15s\n' "others" "ours legacy" "reference legacy" "ref/ours" "ours nftables" "ref(nft)/ours"
printf '%-7s | %-17s | %-17s | %-15s | %-17s | %-15s\n' "" "ADD      DEL" "ADD      DEL" "ADD     DEL" "ADD      DEL" "ADD     DEL"
for n in $SIZES; do
  printf '%-7s | %8s %8s | %8s %8s | %7s %7s | %8s %8s | %7s %7s\n' "$n" \
    "${ADD[legacy,$n]}" "${DEL[legacy,$n]}" "${ADD[reflegacy,$n]}" "${DEL[reflegacy,$n]}" \
    "$(ratio "${ADD[reflegacy,$n]}" "${ADD[legacy,$n]}")" "$(ratio "${DEL[reflegacy,$n]}" "${DEL[legacy,$n]}")" \
    "${ADD[nftables,$n]}" "${DEL[nftables,$n]}" \
    "$(ratio "${ADD[refnft,$n]}" "${ADD[nftables,$n]}")" "$(ratio "${DEL[refnft,$n]}" "${DEL[nftables,$n]}")"
done
if [ -n "$CT_SIZES" ]; then
  echo
  echo "udp/ct: one UDP mapping, ADD / DEL ms (nft mode unless named; TCP: the same call without any flush)"
  for ct in $CT_SIZES; do
    printf '  %6s conntrack entries: ours %s / %s, nftables %s / %s%s, reference %s / %s; TCP (no flush) %s / %s\n' \
      "$ct" "${ADD[udp-iptables,$ct]}" "${DEL[udp-iptables,$ct]}" "${ADD[udp-nftables,$ct]}" \
      "${DEL[udp-nftables,$ct]}" \
      "$([ -z "$OLD_PORTMAP" ] || echo ", OLD_PORTMAP ${ADD[udp-old,$ct]} / ${DEL[udp-old,$ct]}")" \
      "${ADD[udp-reference,$ct]}" "${DEL[udp-reference,$ct]}" "${ADD[tcp-iptables,$ct]}" "${DEL[tcp-iptables,$ct]}"
  done
fi
if [ "$MANY_PORTS" -gt 0 ]; then
  printf 'many ports: one pod with %s UDP host ports: ours nft mode %s / %s, legacy %s / %s, nftables %s / %s (ADD / DEL ms; the reference execs iptables once per rule, over 6,000 here, so it is not run)\n' \
    "$MANY_PORTS" "${ADD[many-nft]}" "${DEL[many-nft]}" "${ADD[many-legacy]}" "${DEL[many-legacy]}" \
    "${ADD[many-nftables]}" "${DEL[many-nftables]}"
  printf 'many ports: the ADD'"'"'s CPU time (user + system, median ms): nft mode %s, legacy %s, nftables %s\n' \
    "${CPU[many-nft]}" "${CPU[many-legacy]}" "${CPU[many-nftables]}"
fi
# The same figures as rows for docs/performance.md (bench/lib/results.sh).
for n in $SIZES; do
  bench_result portmap "ADD, iptables layout, nft mode, $n mappings" "${ADD[nft,$n]}" "${ADD[refnft,$n]}"
  bench_result portmap "DEL, iptables layout, nft mode, $n mappings" "${DEL[nft,$n]}" "${DEL[refnft,$n]}"
  bench_result portmap "floor on nft nodes (exec + one commit adding a jump), $n mappings" "${FLOOR_MS[$n]}"
  bench_result portmap "ADD back to back, nft mode, $n mappings" "${ADD[b2b,$n]}" "${ADD[refb2b,$n]}"
  bench_result portmap "ADD+DEL back to back, nft mode, $n mappings" "${PAIR[b2b,$n]}" "${PAIR[refb2b,$n]}"
  bench_result portmap "ADD, iptables layout, legacy mode, $n mappings" "${ADD[legacy,$n]}" "${ADD[reflegacy,$n]}"
  bench_result portmap "DEL, iptables layout, legacy mode, $n mappings" "${DEL[legacy,$n]}" "${DEL[reflegacy,$n]}"
  bench_result portmap "ADD, nftables backend (reference: nft mode), $n mappings" "${ADD[nftables,$n]}" "${ADD[refnft,$n]}"
done
for ct in $CT_SIZES; do
  bench_result portmap "UDP ADD, nft mode, $ct conntrack entries" "${ADD[udp-iptables,$ct]}" "${ADD[udp-reference,$ct]}"
  bench_result portmap "UDP ADD, nftables backend, $ct conntrack entries" "${ADD[udp-nftables,$ct]}" "${ADD[udp-reference,$ct]}"
done
if [ "$MANY_PORTS" -gt 0 ]; then
  for mode in nft legacy nftables; do
    bench_result portmap "one pod with $MANY_PORTS UDP host ports, ADD, $mode" "${ADD[many-$mode]}"
    bench_result portmap "one pod with $MANY_PORTS UDP host ports, DEL, $mode" "${DEL[many-$mode]}"
  done
fi
if [[ " $SIZES " == *" 1000 "* ]]; then
  bench_result portmap "ADD with hostPortConflicts reject, nft mode, 1000 mappings" "${ADD[nft-reject,1000]}"
  bench_result portmap "ADD with hostPortConflicts allow (the default), nft mode, 1000 mappings" "${ADD[nft-allow,1000]}"
fi
first=${SIZES%% *}; last=${SIZES##* }
echo
echo "growth from $first to $last other mappings (ADD): ours nft $(ratio "${ADD[nft,$last]}" "${ADD[nft,$first]}"), floor $(ratio "${FLOOR_MS[$last]}" "${FLOOR_MS[$first]}"), reference nft $(ratio "${ADD[refnft,$last]}" "${ADD[refnft,$first]}"), ours legacy $(ratio "${ADD[legacy,$last]}" "${ADD[legacy,$first]}"), ours nftables $(ratio "${ADD[nftables,$last]}" "${ADD[nftables,$first]}")"
echo "growth from $first to $last other mappings (DEL): ours nft $(ratio "${DEL[nft,$last]}" "${DEL[nft,$first]}"), reference nft $(ratio "${DEL[refnft,$last]}" "${DEL[refnft,$first]}"), ours legacy $(ratio "${DEL[legacy,$last]}" "${DEL[legacy,$first]}")"

# Targets (reported here, never asserted in tests).
target() {  # text condition-awk
  echo "target: $1: $(awk "BEGIN { print ($2) ? \"met\" : \"MISSED\" }")"
}
if [[ " $SIZES " == *" 1000 "* ]]; then
  target "nft ADD at least 20x faster than the reference at 1,000 mappings, back to back ($(ratio "${ADD[refb2b,1000]}" "${ADD[b2b,1000]}"); after a pause $(ratio "${ADD[refnft,1000]}" "${ADD[nft,1000]}"))" "${ADD[refb2b,1000]} >= 20 * ${ADD[b2b,1000]}"
fi
if [[ " $SIZES " == *" 1000 "* ]]; then
  for mode in nft nftables; do
    echo "$mode ADD at 1,000 mappings, hostPortConflicts reject / default (run alternately): ${ADD[$mode-reject,1000]} / ${ADD[$mode-allow,1000]}; the refusal's floor on this node, one dump of the 1,000 entry rules of CNI-HOSTPORT-DNAT: $(awk -v d="${DUMP_MS[1000]}" -v e="${DUMP_EXEC_MS[1000]}" 'BEGIN { printf "%.2f", d - e }') ms (exec excluded)"
    target "the refusal adds under 1 ms at 1,000 mappings ($mode)" "${ADD[$mode-reject,1000]} - ${ADD[$mode-allow,1000]} < 1"
  done
fi
if [[ " $SIZES " == *" 5000 "* ]]; then
  target "nft ADD at least 100x faster than the reference at 5,000 mappings ($(ratio "${ADD[refnft,5000]}" "${ADD[nft,5000]}"))" "${ADD[refnft,5000]} >= 100 * ${ADD[nft,5000]}"
fi
if [ "$MANY_PORTS" = 2000 ]; then
  for mode in nft legacy nftables; do
    target "$MANY_PORTS UDP ports ($mode) ADD and DEL under 100 ms (${ADD[many-$mode]} / ${DEL[many-$mode]})" \
      "${ADD[many-$mode]} < 100 && ${DEL[many-$mode]} < 100"
  done
fi
for n in $SIZES; do
  target "nft ADD within 2 ms of the floor at $n mappings, back to back (${ADD[b2b,$n]} vs ${FLOOR_MS[$n]}; after a pause ${ADD[nft,$n]})" "${ADD[b2b,$n]} <= ${FLOOR_MS[$n]} + 2"
done
exit 0
