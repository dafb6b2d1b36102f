# shellcheck shell=bash
# Sourced by tests/e2e/containerd_e2e.sh and bench/podstart/bench.sh: containerd 1.6 with its
# CRI plugin, every path of its own under a temp folder, so a test or bench run shares nothing
# with a containerd the machine may run.
#
# containerd_config: writes $C/config.toml. Reads C (containerd's folder), SOCK (its gRPC
# socket), IMAGE (the sandbox image) and T (whose plugins/ and net.d/ are the CNI bin and
# config folders).
containerd_config() {
  cat >"$C/config.toml" <<EOF
version = 2
root = "$C/root"
state = "$C/state"
temp = "$C/tmp"
[grpc]
  address = "$SOCK"
[ttrpc]
  address = "$SOCK.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$C/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$IMAGE"
  # these machines may refuse a lower oom_score_adj than containerd's own
  restrict_oom_score_adj = true
  # pod netns files under $C/state/io.containerd.grpc.v1.cri/netns, not /var/run/netns
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$T/plugins"
    conf_dir = "$T/net.d"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    # copies instead of overlay mounts: works on any file system $T is on
    snapshotter = "native"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        Root = "$C/runc"
EOF
}
