#!/usr/bin/env bash
# Installs every Debian package nodegate needs to build, test, demo and benchmark.
# Idempotent: when everything is present it does nothing (no apt-get update).
#
#   scripts/install-deps.sh [--arch ARCH]...
#
# --arch arm64 (make release, make test, make test-arm64 pass it) adds what a build for that
# architecture needs on this one (issue 33): Debian's cross toolchain, the :arm64 -dev packages
# of every library the executables link (dpkg --add-architecture first), qemu-user-static to
# run its executables and unit tests without a machine-wide binfmt_misc entry, qemu-system-arm
# to boot its kernel, cpio (the arm64 root's bootstrap VM boots from an initramfs:
# tests/portability/root.sh), and Debian's static busybox of that architecture for the
# install image. busybox-static is not co-installable across architectures, so that one is
# fetched with apt-get download into $NODEGATE_DEB_CACHE_DIR, else $NODEGATE_CACHE_DIR/debs
# (default build/cache/debs), and read from there (scripts/lib/arch.sh, deb_cache_dir).
set -euo pipefail

PACKAGES=(
  # build
  cmake ninja-build g++ make pkg-config git
  nlohmann-json3-dev libspdlog-dev libfmt-dev libgtest-dev libgmock-dev libbenchmark-dev
  libnl-3-dev libnl-route-3-dev
  libyaml-dev libcli11-dev
  # nodegate webhook: Boost.Beast/Asio (header-only) for HTTPS serving and the API client,
  # OpenSSL from its static archives (webhook/README.md says why these)
  libboost1.81-dev libssl-dev
  # deploy/webhook/make-cert.sh (also run by tests/webhook); the test CA of the etcd clusters
  openssl
  # cluster-ipam's datastore: the tests, the demo and the bench start their own members
  # (scripts/lib/etcd_cluster.sh); etcdctl reads the keys in tests and in ipam/cluster/README.md
  etcd-server etcd-client
  # kernel tools used by tests and the demo (inside private namespaces only)
  iproute2 iptables nftables conntrack iperf3 util-linux procps iputils-ping socat
  # message counts of a plugin call (tests/portmap/conntrack_netns_test.cc)
  strace
  # the reference plugins (oracle and main plugin in chains) and a real runtime
  containernetworking-plugins podman runc busybox-static
  # the CRI runtime of the containerd e2e test and its small gRPC client
  containerd python3-grpcio
  # make deb (dpkg-shlibdeps computes Depends) and the deploy tests (the DaemonSet's YAML)
  dpkg-dev python3-yaml
  # the portability tier (tests/portability): Debian roots of other releases, their kernel
  # booted in software emulation, the VM's disk images, JSON read in shell
  debootstrap qemu-system-x86 e2fsprogs jq
  # benchmarks (wrk: HTTPS load for bench/webhook; perf: each plugin's exec-to-exit under
  # containerd, from the scheduler's tracepoints, in bench/podstart)
  hyperfine wrk linux-perf
  # the sanitizer stage of make test and make fuzz (libFuzzer and the sanitizers come with
  # Debian's clang; LLVM's linker links their static test executables about 4x faster)
  clang lld
  # make format (checked by make test) and make tidy; the function-size check's parser
  clang-format clang-tidy universal-ctags
  # the shells whose completion scripts nodegate writes, to check them (tests/nodegate)
  bash-completion zsh
)

# Everything a cross build and its tests need, per architecture: the GNU triplet's toolchain,
# the libraries the executables link and the tests use, in that architecture.
cross_packages() {
  local a=$1
  printf '%s\n' "crossbuild-essential-$a" qemu-user-static qemu-system-arm cpio
  local dev
  for dev in libnl-3-dev libnl-route-3-dev \
    libyaml-dev libssl-dev libspdlog-dev libfmt-dev libboost1.81-dev libgtest-dev libgmock-dev; do
    echo "$dev:$a"
  done
}

ARCHES=()
while [ $# -gt 0 ]; do
  case "$1" in
    --arch)
      [ "${2:-}" = "$(dpkg --print-architecture)" ] || ARCHES+=("$2")
      shift 2
      ;;
    *) echo "install-deps: unknown argument $1 (usage: install-deps.sh [--arch ARCH]...)" >&2; exit 2 ;;
  esac
done
for a in "${ARCHES[@]}"; do
  case "$a" in
    arm64) ;;
    *) echo "install-deps: unsupported architecture $a (arm64 is)" >&2; exit 2 ;;
  esac
  mapfile -t more < <(cross_packages "$a")
  PACKAGES+=("${more[@]}")
done

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

SOURCE_DIR="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=lib/arch.sh
source "$SOURCE_DIR/scripts/lib/arch.sh"
missing_busybox=()
for a in "${ARCHES[@]}"; do
  [ -n "$(cached_deb busybox-static "$a")" ] || missing_busybox+=("$a")
done
# promtool checks and unit-tests deploy/webhook/monitoring.yaml's alerts
# (tests/webhook/manifests_test.py). It comes in Debian's prometheus package, kept as a .deb in
# the cache and read from there, never installed: installing it would set up and start a
# Prometheus server on the machine.
missing_promtool=0
[ -n "$(cached_deb prometheus "$HOST_ARCH")" ] || missing_promtool=1

# Debian's kubectl (package kubernetes-client): `kubectl nodegate ...` is tested through it
# (tests/explain). Where another package already owns /usr/bin/kubectl (Google's kubectl on
# some images), the two cannot be installed together: Debian's is kept as a .deb in the cache
# and unpacked from there (scripts/lib/arch.sh debian_kubectl).
kubectl_deb=0
if ! dpkg-query -W -f='${Status}' kubernetes-client 2>/dev/null | grep -q "install ok installed"; then
  if [ -n "$(dpkg-query -S /usr/bin/kubectl 2>/dev/null | cut -d: -f1)" ]; then
    [ -n "$(cached_deb kubernetes-client "$HOST_ARCH")" ] || kubectl_deb=1
  else
    missing+=(kubernetes-client)
  fi
fi

if [ "${#missing[@]}" -eq 0 ] && [ "${#missing_busybox[@]}" -eq 0 ] && [ "$kubectl_deb" = 0 ] &&
  [ "$missing_promtool" = 0 ]; then
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing packages (${missing[*]} ${missing_busybox[*]/#/busybox-static:}); run as root" >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
updated=0
for a in "${ARCHES[@]}"; do
  if ! dpkg --print-foreign-architectures | grep -qx "$a"; then
    echo "install-deps: dpkg --add-architecture $a" >&2
    dpkg --add-architecture "$a"
  fi
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}" >&2
  apt-get update -qq
  updated=1
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi
for a in "${missing_busybox[@]}"; do
  [ "$updated" = 1 ] || { apt-get update -qq; updated=1; }
  fetch_deb busybox-static "$a"
done
if [ "$kubectl_deb" = 1 ]; then
  [ "$updated" = 1 ] || { apt-get update -qq; updated=1; }
  fetch_deb kubernetes-client "$HOST_ARCH"
fi
if [ "$missing_promtool" = 1 ]; then
  [ "$updated" = 1 ] || { apt-get update -qq; updated=1; }
  fetch_deb prometheus "$HOST_ARCH"
fi
