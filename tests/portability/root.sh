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
# A foreign architecture (arm64 on amd64, issue 33) is bootstrapped with `debootstrap --foreign`
# here and its second stage run inside a VM of that architecture (qemu-system-<arch> under TCG,
# no network): the first stage's tree, packed as the VM's initramfs, boots the suite's own
# kernel (taken from the downloaded package) into a shell script that runs the second stage and
# writes the finished tree as a tar archive onto a raw disk the host reads back. No binfmt_misc
# entry is needed on the host, and none is registered.
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

# second_stage_in_vm TREE: debootstrap's second stage of a foreign TREE, run by TREE's own
# kernel in qemu-system-<arch> (TCG); TREE is replaced by the finished root.
second_stage_in_vm() {
  local tree=$1 vm="$entry/stage2" kdeb kernel
  local qemu=/usr/bin/qemu-system-$qemu_arch
  [ -x "$qemu" ] || { log "$qemu missing (scripts/install-deps.sh --arch $arch)"; return 1; }
  rm -rf "$vm"
  mkdir -p "$vm"
  kdeb=$(ls "$tree"/var/cache/apt/archives/linux-image-[0-9]*.deb 2>/dev/null | sort -V | tail -1)
  [ -n "$kdeb" ] || { log "no kernel package among the downloaded ones"; return 1; }
  dpkg-deb --fsys-tarfile "$kdeb" | tar -x -C "$vm" --wildcards './boot/vmlinuz-*'
  kernel=$(ls "$vm"/boot/vmlinuz-* | head -1)
  cat >"$tree/nodegate-stage2" <<'STAGE2'
#!/bin/sh
# PID 1 of the bootstrap VM (tests/portability/root.sh): the second stage, then the finished
# tree as a tar archive onto the raw disk /dev/vda, then power off.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
# debootstrap run inside a container leaves /proc a symlink to itself.
[ -L /proc ] && rm /proc && mkdir /proc
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
echo "stage2: second stage on $(uname -m), $(nproc) CPU(s)"
if /debootstrap/debootstrap --second-stage; then
  rm -f /var/cache/apt/archives/*.deb
  rm -rf /var/lib/apt/lists/*
  # No udev runs here: the disk's modules are loaded by name.
  for m in virtio_mmio virtio_pci virtio_blk; do modprobe "$m" 2>/dev/null; done
  for i in 1 2 3 4 5 6 7 8 9 10; do [ -b /dev/vda ] && break; sleep 1; done
  umount /proc /sys
  rm -f /nodegate-stage2
  tar --numeric-owner --one-file-system --exclude=./dev -C / -cf /dev/vda . &&
    echo "stage2: tree written" || echo "stage2: writing the tree failed"
  mount -t proc proc /proc
else
  echo "stage2: the second stage failed"
  tail -30 /debootstrap/debootstrap.log
fi
sync
echo o >/proc/sysrq-trigger
sleep 30
STAGE2
  chmod 755 "$tree/nodegate-stage2"
  log "second stage in a $arch VM (qemu-system-$qemu_arch, TCG, no network)"
  (cd "$tree" && find . -xdev | cpio --quiet -o -H newc) >"$vm/initramfs.cpio"
  local size_mb
  size_mb=$(( $(du -sm "$tree" | cut -f1) * 4 + 512 ))
  truncate -s "${size_mb}M" "$vm/tree.tar"
  local t0=$SECONDS rc=0
  timeout "${NG_STAGE2_TIMEOUT:-3600}" "$qemu" -M virt -cpu max -smp 2 -m 4096 -accel tcg \
    -display none -no-reboot -nic none -serial "file:$vm/console.log" -monitor none \
    -kernel "$kernel" -initrd "$vm/initramfs.cpio" \
    -append "console=ttyAMA0 rdinit=/nodegate-stage2 panic=-1" \
    -drive "file=$vm/tree.tar,format=raw,if=virtio" || rc=$?
  cat "$vm/console.log" >>"$entry/debootstrap.log"
  log "the bootstrap VM ran for $((SECONDS - t0)) s (qemu exit $rc)"
  grep -q "stage2: tree written" "$vm/console.log" ||
    { tail -30 "$vm/console.log" >&2; return 1; }
  rm -rf "$tree"
  mkdir -p "$tree"
  tar --numeric-owner -xpf "$vm/tree.tar" -C "$tree"
  mkdir -p "$tree/dev"
  rm -rf "$vm"
}

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
    debootstrap --foreign --variant=minbase --arch="$arch" --include="$include" \
      "$suite" "$tmp" "$mirror" >"$entry/debootstrap.log" 2>&1 ||
      { tail -20 "$entry/debootstrap.log" >&2; return 1; }
    second_stage_in_vm "$tmp" || return 1
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
  dpkg-query --admindir="$tmp/var/lib/dpkg" -W -f '${Package} ${Version}\n' >"$entry/packages.txt"
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
