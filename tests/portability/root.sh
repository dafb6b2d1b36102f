#!/usr/bin/env bash
# Builds once, and prints the path of, a Debian root of another release than the build
# machine's: the userland (and, for the VM, the kernel) of the nodes the portability tier runs
# the plugins on.
#
#   tests/portability/root.sh [--suite bullseye] [--arch amd64|arm64] [--image] [--key]
#
# The cache entry, `$NODEGATE_CACHE_DIR/roots/<suite>-<arch>-<key>/`, holds `root/` (the tree),
# `packages.txt` (what dpkg installed there, for the record), `debootstrap.log`, and with
# `--image` also `root.ext4` (the tree as an ext4 image, for qemu). Its key is a hash of what
# the root contains: suite, architecture, package list and recipe version, so a change to any
# of them builds a new entry beside the old one. Concurrent callers wait on one lock per entry;
# a root is complete once `root/` exists (it is renamed into place as the last step).
#
# NODEGATE_CACHE_DIR defaults to $NODEGATE_BUILD_DIR/cache, else <source>/build/cache.
# NODEGATE_DEBIAN_MIRROR defaults to http://deb.debian.org/debian.
# A foreign architecture (arm64 on amd64) is bootstrapped with `debootstrap --foreign` and its
# second stage run under qemu-user-static, which needs the host's binfmt_misc entry for it.
set -euo pipefail

suite=bullseye
arch=$(dpkg --print-architecture)
want_image=0
print_key=0
while [ $# -gt 0 ]; do
  case "$1" in
    --suite) suite=$2; shift 2 ;;
    --arch) arch=$2; shift 2 ;;
    --image) want_image=1; shift ;;
    --key) print_key=1; shift ;;
    *) echo "root.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

# Bump when the recipe below changes what a root contains without changing the package list.
recipe=1
# What the tier runs in the root: the node's netfilter tools and reference plugins (the
# oracle), iproute2, iperf3 (rates through bandwidth), busybox (httpd, wget: traffic through
# portmap), jq (reading JSON without a Python); and what the VM boots: the suite's kernel and
# an initramfs that mounts the root disk.
case "$arch" in
  amd64) kernel_pkg=linux-image-amd64 qemu_arch=x86_64 ;;
  arm64) kernel_pkg=linux-image-arm64 qemu_arch=aarch64 ;;
  *) echo "root.sh: unsupported architecture $arch" >&2; exit 2 ;;
esac
packages=(iptables nftables containernetworking-plugins iproute2 iperf3 busybox jq
  "$kernel_pkg" initramfs-tools)

key=$(printf '%s\n' "recipe=$recipe" "suite=$suite" "arch=$arch" "${packages[@]}" | sort |
  sha256sum | cut -c1-12)
if [ "$print_key" = 1 ]; then
  echo "$suite-$arch-$key"
  exit 0
fi

here=$(cd "$(dirname "$0")" && pwd)
source_dir=$(cd "$here/../.." && pwd)
cache=${NODEGATE_CACHE_DIR:-${NODEGATE_BUILD_DIR:-$source_dir/build}/cache}
mirror=${NODEGATE_DEBIAN_MIRROR:-http://deb.debian.org/debian}
entry="$cache/roots/$suite-$arch-$key"
mkdir -p "$cache/roots"

exec 9>"$entry.lock"
flock 9

log() { echo "root.sh: $*" >&2; }

build_root() {
  local tmp="$entry/root.tmp"
  rm -rf "$tmp"
  mkdir -p "$entry"
  local t0=$SECONDS
  log "building $suite/$arch in $entry (debootstrap from $mirror)"
  local include
  include=$(IFS=,; echo "${packages[*]}")
  local host_arch
  host_arch=$(dpkg --print-architecture)
  if [ "$arch" = "$host_arch" ]; then
    debootstrap --variant=minbase --arch="$arch" --include="$include" \
      "$suite" "$tmp" "$mirror" >"$entry/debootstrap.log" 2>&1 ||
      { tail -20 "$entry/debootstrap.log" >&2; return 1; }
  else
    local qemu="/usr/bin/qemu-$qemu_arch-static"
    [ -x "$qemu" ] || { log "$qemu missing (qemu-user-static)"; return 1; }
    [ -e "/proc/sys/fs/binfmt_misc/qemu-$qemu_arch" ] ||
      { log "no binfmt_misc entry qemu-$qemu_arch: the second stage cannot run"; return 1; }
    debootstrap --foreign --variant=minbase --arch="$arch" --include="$include" \
      "$suite" "$tmp" "$mirror" >"$entry/debootstrap.log" 2>&1 ||
      { tail -20 "$entry/debootstrap.log" >&2; return 1; }
    cp "$qemu" "$tmp/usr/bin/"
    chroot "$tmp" /debootstrap/debootstrap --second-stage >>"$entry/debootstrap.log" 2>&1 ||
      { tail -20 "$entry/debootstrap.log" >&2; return 1; }
    rm -f "$tmp/usr/bin/qemu-$qemu_arch-static"
  fi
  # /ng: where the tier puts our binaries and scripts (a bind mount in the chroot, the second
  # disk in the VM). The VM's PID 1 only mounts that disk and hands over to the smoke's own
  # init on it, so the cached root does not change when the smoke does.
  mkdir -p "$tmp/ng"
  cat >"$tmp/sbin/nodegate-vm-init" <<'INIT'
#!/bin/sh
mountpoint -q /proc || mount -t proc proc /proc
mountpoint -q /sys || mount -t sysfs sysfs /sys
mountpoint -q /dev || mount -t devtmpfs devtmpfs /dev
mount -t ext4 /dev/vdb /ng && exec /bin/sh /ng/init
echo "nodegate-vm-init: no smoke disk" >/dev/console
echo o >/proc/sysrq-trigger
INIT
  chmod 755 "$tmp/sbin/nodegate-vm-init"
  # The kernel's postinst makes the initramfs; without it the VM cannot mount its root disk.
  ls "$tmp"/boot/vmlinuz-* "$tmp"/boot/initrd.img-* >/dev/null ||
    { log "no kernel or initramfs in $tmp/boot"; return 1; }
  # The downloaded packages are a third of the tree and nothing reads them again.
  rm -rf "$tmp"/var/cache/apt/archives/*.deb "$tmp"/var/lib/apt/lists/*
  chroot "$tmp" dpkg-query -W -f '${Package} ${Version}\n' >"$entry/packages.txt"
  mv "$tmp" "$entry/root"
  log "built in $((SECONDS - t0)) s"
}

# The root as an ext4 image, owners and modes kept (mke2fs -d), with room for the guest's
# writes (it is booted with snapshot=on: they go to a temporary overlay, never to the image).
build_image() {
  local size_mb
  size_mb=$(( $(du -sm "$entry/root" | cut -f1) * 5 / 4 + 256 ))
  rm -f "$entry/root.ext4.tmp"
  mke2fs -q -t ext4 -L ngroot -d "$entry/root" "$entry/root.ext4.tmp" "${size_mb}M"
  mv "$entry/root.ext4.tmp" "$entry/root.ext4"
}

[ -d "$entry/root" ] || build_root
if [ "$want_image" = 1 ] && [ ! -f "$entry/root.ext4" ]; then
  build_image
fi
echo "$entry"
