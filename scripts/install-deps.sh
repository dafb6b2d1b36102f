#!/usr/bin/env bash
# Installs every Debian package nodegate needs to build, test, demo and benchmark.
# Idempotent: when everything is present it does nothing (no apt-get update).
set -euo pipefail

PACKAGES=(
  # build
  cmake ninja-build g++ make pkg-config git
  nlohmann-json3-dev libspdlog-dev libfmt-dev libgtest-dev libgmock-dev libbenchmark-dev
  libnl-3-dev libnl-route-3-dev libnl-nf-3-dev
  libyaml-dev libcli11-dev
  # nodegate webhook: Boost.Beast/Asio (header-only) for HTTPS serving and the API client,
  # OpenSSL from its static archives (webhook/README.md says why these)
  libboost1.81-dev libssl-dev
  # deploy/webhook/make-cert.sh (also run by tests/webhook)
  openssl
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
  # Debian's clang)
  clang
  # make format (checked by make test) and make tidy
  clang-format clang-tidy
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing packages (${missing[*]}); run as root" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
