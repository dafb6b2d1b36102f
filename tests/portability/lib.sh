# Host-side helpers of the portability tier (sourced by its *_test.sh scripts).
#
# NODEGATE_BIN_DIR: the executables under test (CTest sets it; default build/bin).
# NODEGATE_CACHE_DIR: where root.sh keeps the Debian roots (default: beside the bin folder,
# <build dir>/cache).

PORT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SOURCE_DIR=${NODEGATE_SOURCE_DIR:-$(cd "$PORT_DIR/../.." && pwd)}
BIN_DIR=${NODEGATE_BIN_DIR:-$SOURCE_DIR/build/bin}
export NODEGATE_CACHE_DIR=${NODEGATE_CACHE_DIR:-$(cd "$BIN_DIR/.." && pwd)/cache}
EXECUTABLES=(portmap bandwidth host-local cluster-ipam bridge nodegate)

# Not root: the test is skipped (exit 77, seen as skipped; under CI a failure: scripts/run-test.py).
require_root() {
  if [ "$(id -u)" -ne 0 ]; then
    echo "SKIP: needs root (namespaces, chroot)"
    exit 77
  fi
}

# debian_root [root.sh ARGS]: the cache entry of the Debian root (built on first use).
debian_root() { bash "$PORT_DIR/root.sh" "$@"; }

# stage_ng DIR: what the tier puts at /ng on the node: bin/ (our executables), node/ (the
# checks), data/ (the admit fixtures: the project's seed scenario).
stage_ng() {
  local d=$1 e
  mkdir -p "$d/bin" "$d/data/admit/candidates"
  for e in "${EXECUTABLES[@]}"; do
    cp "$BIN_DIR/$e" "$d/bin/" || return 1
  done
  cp -r "$PORT_DIR/node" "$d/node"
  cp "$SOURCE_DIR/tests/admit/testdata/node.yaml" "$d/data/admit/"
  cp -r "$SOURCE_DIR/conf/manifests" "$d/data/admit/manifests"
  cp -r "$SOURCE_DIR/conf/manifests" "$d/data/admit/manifests-without-hostport"
  rm "$d/data/admit/manifests-without-hostport/hostport-web.yaml"
  cp "$SOURCE_DIR/conf/candidates/coredns-hostnetwork.yaml" "$d/data/admit/candidates/"
}

# in_root ROOT NG_DIR COMMAND...: COMMAND chrooted in ROOT, in network, mount and PID
# namespaces of its own (never the machine's network namespace). ROOT is not changed: it is
# the lower layer of an overlay whose writes go to a tmpfs. /proc, /sys, /run, /tmp and a
# minimal /dev are the namespace's own; NG_DIR is bound at /ng. Everything (mounts, network
# namespaces made inside, processes left running) ends with COMMAND: the mounts live only in
# the private mount namespace, the processes in the PID namespace whose init COMMAND's shell
# is, and --kill-child ends that shell when unshare itself is killed (a CTest timeout).
in_root() {
  local root=$1 ng=$2
  shift 2
  local scratch
  scratch=$(mktemp -d /tmp/ng-portability-root.XXXXXX)
  local rc=0
  unshare --net --mount --pid --fork --kill-child --propagation private bash -euc '
    root=$1 ng=$2 s=$3
    shift 3
    mount -t tmpfs -o mode=755 ng-overlay "$s"
    mkdir "$s/upper" "$s/work" "$s/merged"
    mount -t overlay overlay -o "lowerdir=$root,upperdir=$s/upper,workdir=$s/work" "$s/merged"
    m=$s/merged
    mount -t proc proc "$m/proc"
    mount -t sysfs sysfs "$m/sys"
    mount -t tmpfs -o mode=755 run "$m/run"
    mount -t tmpfs -o mode=1777 tmp "$m/tmp"
    mount -t tmpfs -o mode=755 dev "$m/dev"
    mknod -m 666 "$m/dev/null" c 1 3
    mknod -m 666 "$m/dev/zero" c 1 5
    mknod -m 666 "$m/dev/full" c 1 7
    mknod -m 666 "$m/dev/random" c 1 8
    mknod -m 666 "$m/dev/urandom" c 1 9
    ln -s /proc/self/fd "$m/dev/fd"
    for i in 0 1 2; do ln -s "/proc/self/fd/$i" "$m/dev/$(echo stdin stdout stderr | cut -d" " -f$((i + 1)))"; done
    mkdir -p "$m/ng"
    mount --bind "$ng" "$m/ng"
    ip link set lo up
    exec chroot "$m" "$@"
  ' in_root "$root" "$ng" "$scratch" "$@" || rc=$?
  rmdir "$scratch"
  return $rc
}

# static_problems FILE: why FILE cannot start where nothing but it is present (an ELF
# interpreter, DT_NEEDED libraries); nothing when it is self-contained.
static_problems() {
  local interp needed
  interp=$(readelf -l "$1" 2>/dev/null | sed -n 's/.*Requesting program interpreter: \(.*\)]/\1/p')
  needed=$(readelf -d "$1" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
  [ -z "$interp" ] || echo "interpreter $interp"
  [ -z "$needed" ] || echo "needs $needed"
}
