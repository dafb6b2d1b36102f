# shellcheck shell=bash
# Sourced by scripts/demo.sh, tests/e2e/podman_e2e.sh and tests/e2e/containerd_e2e.sh: the
# throwaway node they build. A "node" and a "client" network namespace joined by a veth
# (198.51.100.1/24 on the node, .2 in the client), a CNI plugin folder, a busybox root file
# system, and a podman whose storage, configuration and events all live in the temp folder $T.
#
# The caller sets T (a temp folder), NODE and CLIENT (namespace names) before using these.

P() {  # podman, confined to $T, inside the node namespace
  CONTAINERS_CONF="$T/containers.conf" CONTAINERS_STORAGE_CONF="$T/storage.conf" \
    nsenter --net="/run/netns/$NODE" podman --root "$T/root" --runroot "$T/runroot" "$@"
}
in_node() { nsenter --net="/run/netns/$NODE" "$@"; }
in_client() { nsenter --net="/run/netns/$CLIENT" "$@"; }

# $T/plugins: Debian's loopback, and bridge, host-local, portmap and bandwidth from the folder
# $1 (ours, or /usr/lib/cni for the reference).
node_plugin_dir() {
  mkdir -p "$T/plugins"
  ln -s /usr/lib/cni/loopback "$T/plugins/loopback"
  for p in bridge host-local portmap bandwidth; do ln -s "$1/$p" "$T/plugins/$p"; done
}

# The node and client namespaces, the client reaching the node at 198.51.100.1. $1 names the
# node's end of the veth (unique per caller).
node_and_client() {
  ip netns add "$NODE"
  ip netns add "$CLIENT"
  in_node ip link set lo up
  in_client ip link set lo up
  ip link add "$1" type veth peer name eth0 netns "$CLIENT"
  ip link set "$1" netns "$NODE"
  in_node ip addr add 198.51.100.1/24 dev "$1"
  in_node ip link set "$1" up
  in_client ip addr add 198.51.100.2/24 dev eth0
  in_client ip link set eth0 up
}

# podman's configuration: CNI networks from $T/net.d with the plugins of $T/plugins, runc,
# vfs storage in $T. $1, when given, is the infra (pause) image.
node_podman_conf() {
  mkdir -p "$T/root" "$T/runroot" "$T/tmp"
  {
    echo '[containers]'
    echo 'default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]'
    echo '[network]'
    echo 'network_backend = "cni"'
    echo "network_config_dir = \"$T/net.d\""
    echo "cni_plugin_dirs = [\"$T/plugins\"]"
    echo '[engine]'
    echo 'runtime = "runc"'
    [ -n "${1:-}" ] && echo "infra_image = \"$1\""
    echo 'events_logger = "file"'
    echo "events_logfile_path = \"$T/events.log\""
    echo "tmp_dir = \"$T/tmp\""
  } >"$T/containers.conf"
  printf '[storage]\ndriver = "vfs"\ngraphroot = "%s"\nrunroot = "%s"\n' "$T/root" "$T/runroot" \
    >"$T/storage.conf"
}

# $T/img: a root file system of Debian's static busybox with the listed applets in /bin.
node_busybox_rootfs() {
  rm -rf "$T/img" && mkdir -p "$T/img/bin"
  cp /bin/busybox "$T/img/bin/busybox"
  for c in $1; do ln -s busybox "$T/img/bin/$c"; done
}

# A one-layer podman image of node_busybox_rootfs, with /bin on PATH:
#   node_busybox_image localhost/ngbox:1 "sh httpd sleep" [--change ...]
node_busybox_image() {
  local name=$1 applets=$2
  shift 2
  node_busybox_rootfs "$applets"
  tar -C "$T/img" -cf "$T/img.tar" .
  P import -q --change 'ENV PATH=/bin' "$@" "$T/img.tar" "$name" >/dev/null
}

# node_listening NETNS -t|-u PORT [SECONDS]: wait until a socket in the network namespace at
# path NETNS listens on TCP PORT (-t) or is bound to UDP PORT (-u), as the kernel reports it to
# `ss` (sock_diag): a server is ready when its socket is, however long a loaded machine takes
# to start it. Gives up after SECONDS (default 60) with status 1.
node_listening() {
  local deadline=$((SECONDS + ${4:-60}))
  while [ -z "$(nsenter --net="$1" ss -Hln "$2" "sport = :$3" 2>/dev/null)" ]; do
    [ "$SECONDS" -lt "$deadline" ] || return 1
    sleep 0.05
  done
}

# count_lines [-v] PATTERN COMMAND...: how many lines of COMMAND's standard output match PATTERN
# (a grep basic regex; with -v, do not match it). An absence check must be able to fail: when
# COMMAND fails, the probe could not look, and instead of a count it prints "could not look: ..."
# (with COMMAND's stderr) and returns 2, which no comparison with a number accepts.
count_lines() {
  local invert=() out err rc=0 n grep_rc=0
  [ "$1" != -v ] || { invert=(-v); shift; }
  local pattern=$1
  shift
  err="$(mktemp /tmp/ng-probe.XXXXXX)"
  out="$("$@" 2>"$err")" || rc=$?
  if [ "$rc" -ne 0 ]; then
    echo "could not look: '$*' exited $rc: $(tr '\n' ' ' <"$err")"
    rm -f "$err"
    return 2
  fi
  rm -f "$err"
  [ -n "$out" ] || { echo 0; return 0; }  # no line (a here-string would add an empty one)
  # grep -c prints 0 and exits 1 when no line matches; 2 is its own failure (a bad pattern).
  n="$(grep -c "${invert[@]}" -e "$pattern" <<<"$out")" || grep_rc=$?
  if [ "$grep_rc" -gt 1 ]; then
    echo "could not look: grep -e '$pattern' failed"
    return 2
  fi
  echo "$n"
}

# Every rule line matching a pattern (basic regex), in every table a plugin could have used in
# the node: iptables and ip6tables in both modes, and nft's ruleset.
node_rules_matching() {
  local total=0 n listing
  for listing in iptables-legacy-save ip6tables-legacy-save iptables-nft-save ip6tables-nft-save \
    "nft list ruleset"; do
    # shellcheck disable=SC2086 # the listing's words
    n="$(count_lines "$1" in_node $listing)" || { echo "$n"; return 2; }
    total=$((total + n))
  done
  echo "$total"
}
# Reservation files in the IPAM store $T/ipam. They are named after the address; other files
# (lock, last_reserved_ip.N, an implementation's index) are bookkeeping. No store yet: none.
node_reservations() {
  [ -e "$T/ipam" ] || { echo 0; return; }
  count_lines '^[0-9a-f.:]*[.:][0-9a-f.:]*$' find "$T/ipam" -type f -printf '%f\n'
}
# bwp (egress shaping) ifb devices in the node. DEL renames the ifb it takes out of service to
# bwpdel* and a helper deletes it moments later: count once those are gone (up to 5 s).
node_bwp_devices() {
  for _ in $(seq 50); do
    # (no `ip | grep -q`: under pipefail, ip's SIGPIPE after an early match reads as no match)
    case "$(in_node ip -o link show type ifb 2>/dev/null)" in *bwpdel*) sleep 0.1 ;; *) break ;; esac
  done
  count_lines bwp in_node ip -o link show type ifb
}

# Cleanup: podman's containers, pods and images, the namespaces, every mount under $T (podman
# mounts each container's shm under runroot), then $T itself.
node_remove() {
  if [ -f "$T/containers.conf" ]; then
    P pod rm -a -f -t 0 >/dev/null 2>&1
    P rm -a -f -t 0 >/dev/null 2>&1
    P rmi -a -f >/dev/null 2>&1
  fi
  ip netns del "$NODE" 2>/dev/null
  ip netns del "$CLIENT" 2>/dev/null
  grep -o " $T[^ ]*" /proc/mounts | sort -r | xargs -r -n1 umount -l 2>/dev/null
  rm -rf "$T"
}
