# shellcheck shell=bash
# Sourced by bench/chain's scripts (bench.sh, trace-waits.sh, trace-destroy-work.sh): the work
# folder, node namespace and staged chain they share. The caller sets BUILD_DIR, SRC and PODS.

# chain_setup PREFIX: a work folder $T (/tmp/ng-PREFIX.XXXXXX) and the name $NODE of the node
# namespace, both removed when the script exits (with every "$NODE-c<i>" pod namespace).
chain_setup() {
  T="$(mktemp -d "/tmp/ng-$1.XXXXXX")"
  NODE="ng-$1-node-$$"
  trap chain_cleanup EXIT
}
chain_cleanup() {
  set +e
  local ns
  for ns in $(ip netns list | awk '{print $1}' | grep -- "^$NODE"); do ip netns del "$ns"; done
  rm -rf "$T"
}

# stage_plugins SET DIR: the chain's four plugins into DIR: ours copied in, as an installer
# copies them (bench/podstart/README.md: a file the linker has just written execs slower); the
# reference's linked to Debian's files.
stage_plugins() {
  local p
  mkdir -p "$2"
  for p in bridge host-local portmap bandwidth; do
    if [ "$1" = reference ]; then
      ln -s "/usr/lib/cni/$p" "$2/$p"
    else
      install -m 0755 "$BUILD_DIR/bin/$p" "$2/$p"
    fi
  done
}

# stage_chain: the floor's no-op ($T/noop), conf/examples/10-standard.conflist with its IPAM
# store in $T/ipam ($T/chain.conflist) and its nftables variant ($T/chain-nft.conflist), the
# node namespace with lo up and PODS pod namespaces.
stage_chain() {
  mkdir -p "$T/ipam"
  install -m 0755 "$BUILD_DIR/bench/startup_noop" "$T/noop"
  sed "s|\"type\": \"host-local\",|\"type\": \"host-local\", \"dataDir\": \"$T/ipam\",|" \
    "$SRC/conf/examples/10-standard.conflist" >"$T/chain.conflist"
  # The same chain with the nftables backends of bridge's ipMasq and of portmap (upstream's
  # ipMasqBackend and backend keys): no rule in iptables-nft's encoding, so no xt extension.
  /usr/bin/python3 -c '
import json, sys
chain = json.load(open(sys.argv[1]))
for plugin in chain["plugins"]:
    if plugin["type"] == "bridge":
        plugin["ipMasqBackend"] = "nftables"
    if plugin["type"] == "portmap":
        plugin["backend"] = "nftables"
json.dump(chain, open(sys.argv[2], "w"), indent=2)
' "$T/chain.conflist" "$T/chain-nft.conflist"
  ip netns add "$NODE"
  ip netns exec "$NODE" ip link set lo up
  local i
  for i in $(seq 0 $((PODS - 1))); do ip netns add "${NODE}-c$i"; done
}
