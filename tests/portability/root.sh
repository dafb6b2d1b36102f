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
# here and its second stage run under qemu-user in a user namespace whose own binfmt_misc
# (Linux 6.7 and later) runs the tree's executables (scripts/lib/arch.sh: with_arch_binfmt): no
# binfmt_misc entry is registered on the machine, and no maintainer script sees its network.
# The kernel package makes no initramfs there (initramfs-tools under emulation took ~25 min);
# a small one is made here from a static busybox and the root's own virtio and ext4 modules.
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
  amd64) kernel_pkg=linux-image-amd64 ;;
  arm64) kernel_pkg=linux-image-arm64 ;;
  *) echo "root.sh: unsupported architecture $arch" >&2; exit 2 ;;
esac
packages=(iptables nftables conntrack containernetworking-plugins iproute2 iperf3 busybox jq
  "$kernel_pkg" initramfs-tools)

# A foreign root's recipe differs (second stage under qemu-user, initramfs made here): its own
# line, so that the native roots' keys (and caches) stay as they were.
foreign=()
[ "$arch" = "$(dpkg --print-architecture)" ] || foreign=("foreign=qemu-user-2")
key=$(printf '%s\n' "recipe=$recipe" "suite=$suite" "arch=$arch" "${packages[@]}" "${foreign[@]}" | sort |
  sha256sum | cut -c1-12)
if [ "$print_key" = 1 ]; then
  echo "$suite-$arch-$key"
  exit 0
fi

here=$(cd "$(dirname "$0")" && pwd)
source_dir=$(cd "$here/../.." && pwd)
cache=${NODEGATE_CACHE_DIR:-${NODEGATE_BUILD_DIR:-$source_dir/build}/cache}
mirror=${NODEGATE_DEBIAN_MIRROR:-http://deb.debian.org/debian}
# arch.sh: qemu-user, with_arch_binfmt and the cached busybox-static (in $cache/debs).
export NODEGATE_CACHE_DIR=$cache
# shellcheck source=../../scripts/lib/arch.sh
. "$source_dir/scripts/lib/arch.sh"
entry="$cache/roots/$suite-$arch-$key"
mkdir -p "$cache/roots"

exec 9>"$entry.lock"
flock 9

log() { echo "root.sh: $*" >&2; }

# second_stage_user TREE: debootstrap's second stage of a foreign TREE, run here under
# qemu-user (scripts/lib/arch.sh: with_arch_binfmt): a user namespace whose own binfmt_misc
# sends TREE's executables to qemu-user-static, the machine's users mapped as themselves
# (so dpkg's chown gives the owners it would as root), and inside it PID and network
# namespaces of its own so that the second stage may mount /proc and /sys in TREE and no
# maintainer script reaches a network. The first stage (run as root here) made TREE's device
# nodes, which mknod could not in a user namespace. INITRD=No: the kernel's postinst hook
# makes no initramfs (under emulation it took ~25 min); make_initrd makes one here instead.
# container=lxc: debootstrap then skips its check that it may mknod in the target (a user
# namespace may not), and nothing else of what it does changes.
second_stage_user() {
  local tree=$1 qemu
  qemu=$(arch_qemu_user "$arch") && [ -x "$qemu" ] ||
    { log "no qemu-user for $arch (scripts/install-deps.sh --arch $arch)"; return 1; }
  log "second stage under $(basename "$qemu") in a user namespace (no binfmt_misc entry on the machine)"
  # The first stage, in a container here, left /proc a symlink to the machine's /proc.
  if [ -L "$tree/proc" ]; then rm "$tree/proc" && mkdir "$tree/proc"; fi
  local t0=$SECONDS rc=0
  with_arch_binfmt "$arch" unshare --pid --net --fork --kill-child --mount-proc="$tree/proc" \
    env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin INITRD=No LANG=C.UTF-8 container=lxc \
    chroot "$tree" /debootstrap/debootstrap --second-stage >>"$entry/debootstrap.log" 2>&1 || rc=$?
  log "the second stage ran for $((SECONDS - t0)) s (exit $rc)"
  [ "$rc" = 0 ] || { tail -30 "$entry/debootstrap.log" >&2; return 1; }
}

# make_initrd TREE: TREE's /boot/initrd.img-<version>, made here rather than by
# initramfs-tools under emulation: a static busybox of the architecture, the modules that
# mount the root disk (virtio over PCI and MMIO, virtio_blk, ext4 and the crc32c its metadata
# checksums need, with their dependencies from the kernel's modules.dep, loaded in order), and
# an /init that mounts root= (rw) and hands over to init= as the kernel command line says, the
# two parameters vm_test.sh passes.
make_initrd() {
  local tree=$1 kdir kver d
  kdir=$(ls -d "$tree"/lib/modules/* | sort -V | tail -1)
  kver=$(basename "$kdir")
  d=$(mktemp -d "$entry/initrd.XXXXXX")
  mkdir -p "$d/bin" "$d/dev" "$d/proc" "$d/sys" "$d/newroot" "$d/modules"
  arch_busybox "$arch" "$d/bin" || return 1
  # modules.dep: "path: deps...", the dependencies already transitive; loaded last first.
  local m line deps p n=0
  for m in virtio_mmio virtio_pci virtio_blk crc32c_generic ext4; do
    line=$(grep -E "/${m}\.ko(\.[a-z]+)?:" "$kdir/modules.dep") ||
      { grep -qE "/${m}\.ko" "$kdir/modules.builtin" || { log "no module $m in $kver"; return 1; }; continue; }
    deps=$(echo "${line#*:}" | tr ' ' '\n' | tac)
    for p in $deps "${line%%:*}"; do
      grep -qxF "$p" "$d/modules.order" 2>/dev/null && continue
      echo "$p" >>"$d/modules.order"
      n=$((n + 1))
      cp "$kdir/$p" "$d/modules/$(printf %02d $n)-$(basename "$p")"
    done
  done
  cat >"$d/init" <<'INIT'
#!/bin/busybox sh
# The initramfs of a root bootstrapped for another architecture (tests/portability/root.sh).
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
for m in /modules/*; do insmod "$m" 2>/dev/null; done
root=/dev/vda init=/sbin/init
for arg in $(cat /proc/cmdline); do
  case "$arg" in root=*) root=${arg#root=} ;; init=*) init=${arg#init=} ;; esac
done
i=0
while [ ! -b "$root" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
mount -t ext4 -o rw "$root" /newroot || { echo "initrd: cannot mount $root"; ls /dev; echo o >/proc/sysrq-trigger; sleep 10; }
umount /proc /sys
mount --move /dev /newroot/dev
# The root's PATH for its init, as initramfs-tools hands over (ours above has only /bin).
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
exec /bin/switch_root /newroot "$init"
INIT
  chmod 755 "$d/init"
  rm -f "$d/modules.order"
  (cd "$d" && find . | sort | cpio --quiet -o -H newc -R 0:0) | gzip -9n >"$tree/boot/initrd.img-$kver"
  rm -rf "$d"
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
    second_stage_user "$tmp" || return 1
    make_initrd "$tmp" || return 1
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
  # The kernel's postinst (a foreign root: make_initrd) made the initramfs; without it the VM
  # cannot mount its root disk.
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
  # mke2fs says "Creating regular file ..." on stdout even with -q; stdout is the entry's path.
  mke2fs -q -t ext4 -L ngroot -d "$entry/root" "$entry/root.ext4.tmp" "${size_mb}M" >&2
  mv "$entry/root.ext4.tmp" "$entry/root.ext4"
}

[ -d "$entry/root" ] || build_root
if [ "$want_image" = 1 ] && [ ! -f "$entry/root.ext4" ]; then
  build_image
fi
echo "$entry"
