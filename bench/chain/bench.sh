#!/usr/bin/env bash
# The pod network's whole CNI chain, without a runtime: conf/examples/10-standard.conflist
# (bridge with ipMasq and host-local, portmap, bandwidth), every plugin exec'd as libcni execs
# it (bench/chain/driver.py), all four ours ("ours") or all four Debian's ("reference"), and
# ours again with the nftables backends of bridge's ipMasq and of portmap ("oursnft": no rule
# in iptables-nft's encoding, whose xt extensions wait for the previous pod's deletions).
#
# Per node size (OTHERS, default "0 1000": other mappings in the reference portmap's iptables
# layout in nf_tables, bench/lib/node.sh) and rhythm, PODS pods (default 20) each ADD then DEL:
#   - back to back: the next chain starts as soon as the last one ends, as on a node starting
#     and stopping many pods; what one call leaves to the kernel (an RCU grace period, an
#     nf_tables destroy work) lands on the next. The targets judge this rhythm.
#   - paused: PAUSE_MS (default 50) before each ADD chain and each DEL chain, the calls' own
#     cost.
# Sets alternate (ours, reference, oursnft, then oursnft, reference, ours, ...) for ROUNDS
# rounds (default 2).
# The floor of a call: a static no-op exec'd by the driver before each ADD chain, the same way
# as the plugins; for bridge also the kernel's cost of making and of deleting a veth pair
# (20 pairs by one `ip -batch` each, before each set).
#
# Everything lives in a node namespace and PODS container namespaces made here and removed at
# the end, also on failure; the IPAM store is in a temp folder.
#
#   bash bench/chain/bench.sh BUILD_DIR     (root; PODS=N ROUNDS=N OTHERS="0 1000" PAUSE_MS=50)
set -euo pipefail
BUILD_DIR="$(cd "${1:-build}" && pwd)"
SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PODS="${PODS:-20}"
ROUNDS="${ROUNDS:-2}"
OTHERS="${OTHERS:-0 1000}"
PAUSE_MS="${PAUSE_MS:-50}"
PY=/usr/bin/python3

[ "$(id -u)" = 0 ] || { echo "chain bench needs root (namespaces)" >&2; exit 1; }
for f in "$BUILD_DIR"/bin/{bridge,host-local,portmap,bandwidth} "$BUILD_DIR/bench/startup_noop" \
  /usr/lib/cni/{bridge,host-local,portmap,bandwidth}; do
  [ -x "$f" ] || { echo "missing $f (build first; containernetworking-plugins)" >&2; exit 1; }
done

# shellcheck source=lib.sh
source "$SRC/bench/chain/lib.sh"  # chain_setup, stage_plugins, stage_chain
chain_setup ch
in_node() { nsenter --net="/run/netns/$NODE" "$@"; }
trap 'exit 130' INT TERM
# shellcheck source=../lib/node.sh
source "$SRC/bench/lib/node.sh"  # settle, iptables_population, veth_pair_cost

stage_plugins ours "$T/ours"
stage_plugins reference "$T/reference"
mkdir -p "$T/sets"
stage_chain

# One line "OTHERS ADD_NS DEL_NS" per set into $T/veth.floor (bench/lib/node.sh).
veth_floor() { echo "$1 $(veth_pair_cost "$T")" >>"$T/veth.floor"; }

# "oursnft": our plugins with the nftables backends ($T/chain-nft.conflist).
sets=(ours reference oursnft)
port=30000
for others in $OTHERS; do
  iptables_population "$others" nodegate >"$T/population.rules"
  in_node iptables-nft-restore <"$T/population.rules"
  for round in $(seq "$ROUNDS"); do
    order=("${sets[@]}")
    [ $((round % 2)) -eq 1 ] || order=(oursnft reference ours)
    for set in "${order[@]}"; do
      for rhythm in back-to-back paused; do
        pause=0
        [ "$rhythm" = back-to-back ] || pause="$PAUSE_MS"
        rm -rf "$T/ipam" && mkdir -p "$T/ipam"
        settle
        veth_floor "$others"
        out="$T/sets/$set-$others-$rhythm-$round.json"
        plugins="$T/$set" conflist="$T/chain.conflist"
        [ "$set" != oursnft ] || { plugins="$T/ours"; conflist="$T/chain-nft.conflist"; }
        if ! in_node "$PY" "$SRC/bench/chain/driver.py" "$plugins" "$conflist" "${NODE}-c" \
          "$PODS" "$port" "$pause" "$out" "$T/noop"; then
          echo "chain: the $set set ($rhythm) at $others other mappings failed" >&2
          exit 1
        fi
        port=$((port + PODS))
        echo "  $set, $others other mappings, $rhythm, round $round: $PODS pods" >&2
      done
    done
  done
  # Nothing of the pods may be left: no rule naming a bench port, no pod veth on the bridge.
  rules="$(in_node iptables-nft-save -t nat | grep -c -E 'dport (3[0-9]{4})' || true)"
  [ "$rules" = 0 ] || { echo "chain: $rules rules of bench ports left" >&2; exit 1; }
  elements="$(in_node nft list ruleset 2>/dev/null | grep -c -E '(^|[^0-9])3[0-9]{4} \. ' || true)"
  [ "$elements" = 0 ] || { echo "chain: $elements nftables elements of bench ports left" >&2; exit 1; }
  # (our bridge's DEL leaves the pair's deletion to a detached child: give it 2 s)
  for _ in $(seq 20); do
    veths="$(in_node ip -o link show type veth | grep -c . || true)"
    [ "$veths" = 0 ] && break
    sleep 0.1
  done
  [ "$veths" = 0 ] || { echo "chain: $veths veths left on the node" >&2; exit 1; }
done

"$PY" "$SRC/bench/chain/report.py" "$T/sets" "$T/veth.floor" "$OTHERS"
