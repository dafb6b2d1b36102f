#!/usr/bin/env bash
# bandwidth benchmark: ADD and DEL latency of nodegate's plugin beside Debian's reference
# (/usr/lib/cni/bandwidth) in the same run, on a node with 0 and with 500 other shaped
# containers. Everything happens in throwaway namespaces; nothing touches the root namespace.
#
#   bash bench/bandwidth/bench.sh BUILD_DIR [ITERATIONS]
#
# Each "other container" is what a shaped pod leaves on a node: a veth pair with a root TBF,
# an ingress qdisc with a u32 redirect filter, and an ifb with its own TBF (created in bulk
# with `ip -batch` and `tc -batch`). The measured attachment is a real container namespace
# joined to the node; each iteration runs ADD then DEL with ingress and egress shaping, timed
# inside the node namespace with bash's EPOCHREALTIME (no fork per sample). Target: ours at
# least 5 times faster than the reference.
set -euo pipefail
# shellcheck source=bench/lib/results.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/results.sh"
BUILD_DIR="$(cd "${1:-build}" && pwd)"
ITER="${2:-${BANDWIDTH_BENCH_ITER:-30}}"
OURS="$BUILD_DIR/bin/bandwidth"
REF=/usr/lib/cni/bandwidth
for bin in "$OURS" "$REF"; do
  [ -x "$bin" ] || { echo "bandwidth bench: missing $bin" >&2; exit 1; }
done
command -v ip >/dev/null && command -v tc >/dev/null

NODE="ngbw-node-$$"
CTR="ngbw-ctr-$$"
WORK="$(mktemp -d)"
cleanup() {
  ip netns del "$NODE" 2>/dev/null || true
  ip netns del "$CTR" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

in_node() { nsenter --net="/run/netns/$NODE" "$@"; }

setup_node() {
  ip netns del "$NODE" 2>/dev/null || true
  ip netns del "$CTR" 2>/dev/null || true
  ip netns add "$NODE"
  ip netns add "$CTR"
  ip -n "$NODE" link add vbench type veth peer name eth0 netns "$CTR"
  ip -n "$NODE" link set vbench up
  ip -n "$CTR" link set eth0 up
}

# $1 other shaped containers, created in two batches.
add_others() {
  local n="$1"
  [ "$n" -gt 0 ] || return 0
  : >"$WORK/links"; : >"$WORK/up"; : >"$WORK/tc"
  for i in $(seq 1 "$n"); do
    printf 'link add vo%d type veth peer name vp%d\nlink add bwpother%05d type ifb\n' \
      "$i" "$i" "$i" >>"$WORK/links"
    printf 'link set vo%d up\nlink set vp%d up\nlink set bwpother%05d up\n' "$i" "$i" "$i" >>"$WORK/up"
    printf 'qdisc add dev vo%d root handle 1: tbf rate 1mbit burst 125000 latency 25ms\n' "$i" >>"$WORK/tc"
    printf 'qdisc add dev vo%d ingress\n' "$i" >>"$WORK/tc"
    printf 'filter add dev vo%d parent ffff: protocol all prio 1 u32 match u32 0 0 flowid 1:1 action mirred egress redirect dev bwpother%05d\n' "$i" "$i" >>"$WORK/tc"
    printf 'qdisc add dev bwpother%05d root handle 1: tbf rate 2mbit burst 62500 latency 25ms\n' "$i" >>"$WORK/tc"
  done
  in_node ip -batch "$WORK/links"
  in_node ip -batch "$WORK/up"
  in_node tc -batch "$WORK/tc"
}

CONF="$WORK/conf.json"
write_conf() {
  cat >"$CONF" <<JSON
{"cniVersion":"1.0.0","name":"benchnet","type":"bandwidth",
 "ingressRate":1000000,"ingressBurst":1000000,"egressRate":2000000,"egressBurst":500000,
 "prevResult":{"cniVersion":"1.0.0","interfaces":[{"name":"vbench"},{"name":"eth0","sandbox":"/run/netns/$CTR"}]}}
JSON
}

# Prints "add_median_ms del_median_ms add_cpu_ms del_cpu_ms" for binary $1 ($ITER ADD+DEL
# cycles). Wall time is the median; CPU is the mean user+sys of the plugin process (bash's
# `times`, read without forking), which a busy machine disturbs much less than wall time.
measure() {
  local bin="$1"
  in_node env -i PATH="$PATH" BIN="$bin" CONF="$CONF" CTR="$CTR" ITER="$ITER" TIMES="$WORK/times" bash -c '
    export CNI_CONTAINERID=benchctr CNI_NETNS=/run/netns/$CTR CNI_IFNAME=eth0 CNI_PATH=/usr/lib/cni
    # Children user+sys in ms, from the builtin `times` (no fork).
    cpu_ms() {
      local l1 l2 u s
      times >"$TIMES"
      { read -r l1; read -r u s; } <"$TIMES"
      local total=0 v m sec
      for v in "$u" "$s"; do
        v=${v%s}; m=${v%%m*}; sec=${v#*m}
        total=$((total + m * 60000 + 10#${sec%.*} * 1000 + 10#${sec#*.}))
      done
      CPU=$total
    }
    raw=()
    for ((i = 0; i < ITER; i++)); do
      cpu_ms; c0=$CPU
      t0=$EPOCHREALTIME
      CNI_COMMAND=ADD "$BIN" <"$CONF" >"$CONF.out" || { echo "ADD failed: $(cat "$CONF.out")" >&2; exit 1; }
      t1=$EPOCHREALTIME
      cpu_ms; c1=$CPU
      t1b=$EPOCHREALTIME
      CNI_COMMAND=DEL "$BIN" <"$CONF" >"$CONF.out" || { echo "DEL failed: $(cat "$CONF.out")" >&2; exit 1; }
      t2=$EPOCHREALTIME
      cpu_ms; c2=$CPU
      raw+=("$t0 $t1 $t1b $t2 $((c1 - c0)) $((c2 - c1))")
      # The reference DEL leaves its qdiscs on the veth (its next ADD would fail with "file
      # exists"): clear them, untimed, for both plugins.
      tc qdisc del dev vbench root 2>/dev/null; tc qdisc del dev vbench ingress 2>/dev/null
    done
    printf "%s\n" "${raw[@]}" | awk "
      { add[NR] = (\$2 - \$1) * 1000; del[NR] = (\$4 - \$3) * 1000; ca += \$5; cd += \$6 }
      function median(a, n,   i, j, t) {
        for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
      }
      END { printf \"%.2f %.2f %.2f %.2f\\n\", median(add, NR), median(del, NR), ca / NR, cd / NR }"
  '
}

printf '%-22s %-10s %10s %10s %10s %10s\n' "node" "plugin" "ADD ms" "DEL ms" "ADD cpu" "DEL cpu"
declare -A RES
for others in 0 500; do
  setup_node
  add_others "$others"
  write_conf
  # Warm up the page cache for both binaries.
  ITER=2 measure "$OURS" >/dev/null; ITER=2 measure "$REF" >/dev/null
  read -r oa od oca ocd < <(measure "$OURS")
  read -r ra rd rca rcd < <(measure "$REF")
  RES[$others]="$oa $od $ra $rd $oca $ocd $rca $rcd"
  bench_result bandwidth "ADD, $others other shaped containers" "$oa" "$ra"
  bench_result bandwidth "DEL, $others other shaped containers" "$od" "$rd"
  bench_result bandwidth "ADD CPU time (user + system), $others other shaped containers" "$oca" "$rca"
  printf '%-22s %-10s %10s %10s %10s %10s\n' "$others other containers" "nodegate" "$oa" "$od" "$oca" "$ocd"
  printf '%-22s %-10s %10s %10s %10s %10s\n' "$others other containers" "reference" "$ra" "$rd" "$rca" "$rcd"
  awk -v oa="$oa" -v od="$od" -v ra="$ra" -v rd="$rd" -v oca="$oca" -v ocd="$ocd" -v rca="$rca" -v rcd="$rcd" '
    function ratio(r, o) { return o > 0 ? sprintf("%.1fx", r / o) : "inf" }
    BEGIN { printf "%-22s %-10s %10s %10s %10s %10s\n", "", "speedup", ratio(ra, oa), ratio(rd, od), ratio(rca, oca), ratio(rcd, ocd) }'
done

read -r oa0 od0 ra0 rd0 _ <<<"${RES[0]}"
read -r oa5 od5 ra5 rd5 _ <<<"${RES[500]}"
awk -v oa0="$oa0" -v od0="$od0" -v ra0="$ra0" -v rd0="$rd0" \
    -v oa5="$oa5" -v od5="$od5" -v ra5="$ra5" -v rd5="$rd5" 'BEGIN{
  printf "growth 0 -> 500 others (wall): nodegate ADD %+.2f ms, DEL %+.2f ms; reference ADD %+.2f ms, DEL %+.2f ms\n",
    oa5-oa0, od5-od0, ra5-ra0, rd5-rd0
  worst = ra0/oa0; if (rd0/od0 < worst) worst = rd0/od0; if (ra5/oa5 < worst) worst = ra5/oa5; if (rd5/od5 < worst) worst = rd5/od5
  printf "target >= 5x faster than the reference (wall): %s (worst ratio %.1fx)\n", (worst >= 5 ? "met" : "NOT met"), worst
}'
uptime | sed 's/^/machine load: /'
