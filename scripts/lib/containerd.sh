# shellcheck shell=bash
# Sourced by tests/e2e/containerd_e2e.sh and bench/podstart/bench.sh: containerd 1.6 with its
# CRI plugin, every path of its own under a temp folder, so a test or bench run shares nothing
# with a containerd the machine may run. Needs scripts/lib/node.sh (node_busybox_rootfs) and
# the caller's `cri` (tests/e2e/cri_client.py on $SOCK).
#
# The functions read C (containerd's folder), SOCK (its gRPC socket), IMAGE (the sandbox
# image), T (the run's temp folder, whose plugins/ and net.d/ are the CNI bin and config
# folders), NODE (the node's network namespace) and, at teardown, CGROUP; containerd_start sets
# CTD_PID and MADE_RUN_DIRS for containerd_teardown.

# containerd_config: writes $C/config.toml.
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

# containerd_start: starts containerd in the node namespace $NODE, sets CTD_PID, and waits up
# to 10 s for its CRI to answer; returns non-zero (the log's tail on stderr) when it does not.
# nsenter, not `ip netns exec`, which remounts /sys and hides the cgroups from runc.
containerd_start() {
  # containerd 1.6 puts its shims' sockets in /run/containerd/s whatever its state folder is:
  # the folders that do not exist yet are the run's, removed by containerd_teardown.
  MADE_RUN_DIRS=""
  [ -d /run/containerd ] || MADE_RUN_DIRS="/run/containerd/s /run/containerd"
  [ -n "$MADE_RUN_DIRS" ] || [ -d /run/containerd/s ] || MADE_RUN_DIRS="/run/containerd/s"
  nsenter --net="/run/netns/$NODE" containerd --config "$C/config.toml" --log-level info \
    >"$C/containerd.log" 2>&1 &
  CTD_PID=$!  # nsenter execs containerd: this is containerd's PID
  local _
  for _ in $(seq 100); do
    [ -S "$SOCK" ] && cri version >/dev/null 2>&1 && return 0
    kill -0 "$CTD_PID" 2>/dev/null || break
    sleep 0.1
  done
  cri version >/dev/null 2>&1 && return 0
  ctr --address "$SOCK" plugins ls 2>&1 | grep -v ' ok$' >&2
  tail -20 "$C/containerd.log" >&2
  return 1
}

# containerd_pause_image: imports $IMAGE, a docker-archive image of busybox's httpd serving
# $T/img/www on port 8080 as its entrypoint: the sandbox ("pause") container then serves, and
# no other container is needed.
containerd_pause_image() {
  node_busybox_rootfs "sh httpd"
  mkdir -p "$T/img/www"
  echo hello-containerd >"$T/img/www/index.html"
  local d="$T/archive" diff
  rm -rf "$d" && mkdir -p "$d"
  tar -C "$T/img" -cf "$d/layer.tar" .
  diff="$(sha256sum "$d/layer.tar" | cut -d' ' -f1)"
  cat >"$d/config.json" <<EOF
{"architecture": "$(dpkg --print-architecture)", "os": "linux",
 "config": {"Env": ["PATH=/bin"], "Entrypoint": ["/bin/httpd", "-f", "-p", "8080", "-h", "/www"]},
 "rootfs": {"type": "layers", "diff_ids": ["sha256:$diff"]}}
EOF
  echo "[{\"Config\": \"config.json\", \"RepoTags\": [\"$IMAGE\"], \"Layers\": [\"layer.tar\"]}]" \
    >"$d/manifest.json"
  tar -C "$d" -cf "$T/pause.tar" manifest.json config.json layer.tar
  ctr --address "$SOCK" -n k8s.io images import --snapshotter native "$T/pause.tar" >/dev/null
}

# containerd_shim_pids: the PIDs of the shims this containerd started (they carry
# "-address $SOCK").
containerd_shim_pids() {
  local d
  for d in /proc/[0-9]*; do
    [ "$(cat "$d/comm" 2>/dev/null)" = containerd-shim ] || continue
    tr '\0' ' ' <"$d/cmdline" 2>/dev/null | grep -qF -- "-address $SOCK " && echo "${d#/proc/}"
  done
}

# containerd_teardown [SANDBOX_ID...]: what a kubelet does before it goes, then whatever is
# left. Every sandbox containerd lists is stopped and removed (CNI DEL), in parallel, and
# containerd is stopped; then the containers by runc's own state, the shims by PID and their
# sockets (named by a hash of containerd's address, namespace and sandbox ID), libcni's cache
# entries of the listed and the given sandboxes (a DEL that never ran: containerd 1.6 cannot
# move that cache), the folders made in /run/containerd and the pods' cgroups ($CGROUP, in
# every hierarchy).
containerd_teardown() {
  local ids="" stops=() left id pid _
  if [ -n "${CTD_PID:-}" ] && kill -0 "$CTD_PID" 2>/dev/null; then
    ids="$(cri list 2>/dev/null)"
    for id in $ids; do
      { cri stop "$id" >/dev/null 2>&1; cri remove "$id" >/dev/null 2>&1; } &
      stops+=("$!")
    done
    for pid in "${stops[@]}"; do wait "$pid"; done
    kill "$CTD_PID"
    for _ in $(seq 50); do kill -0 "$CTD_PID" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$CTD_PID" 2>/dev/null
  fi
  left="$(runc --root "$C/runc/k8s.io" list -q 2>/dev/null)"
  for id in $left; do runc --root "$C/runc/k8s.io" delete -f "$id" >/dev/null 2>&1; done
  for pid in $(containerd_shim_pids); do kill -9 "$pid" 2>/dev/null; done
  for id in $left $ids "$@"; do
    rm -f "/run/containerd/s/$(printf %s "$SOCK/k8s.io/$id" | sha256sum | cut -d' ' -f1)"
    rm -f /var/lib/cni/results/*-"$id"-*
  done
  # shellcheck disable=SC2086 # two folders, or one, or none
  [ -z "${MADE_RUN_DIRS:-}" ] || rmdir $MADE_RUN_DIRS 2>/dev/null
  find /sys/fs/cgroup -maxdepth 3 -depth -type d \( -path "*/$CGROUP" -o -path "*/$CGROUP/*" \) \
    -exec rmdir {} + 2>/dev/null
  return 0
}
