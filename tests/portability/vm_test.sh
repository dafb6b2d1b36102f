#!/usr/bin/env bash
# The portability tier in a Debian 11 VM: bullseye's own kernel (5.10) and userland, booted
# in qemu's software emulation (KVM does not boot guests on these machines), no network of the
# machine's (-nic none). Disks: the cached root's image, read-only (snapshot=on: the guest's
# writes go to a temporary overlay), and a small one made here holding our executables and the
# checks (/ng, ext2: no journal to replay before the host reads it), onto which the guest
# writes its results. The guest's PID 1
# (/sbin/nodegate-vm-init in the root) mounts it and runs /ng/init (node/vm-init).
#
#   vm_test.sh [--arch ARCH --suite SUITE] [CHECK...]    (default: the smoke below)
#   NG_VM_KEEP=1 vm_test.sh  keeps the work folder (console.log, smoke.ext4) and prints it
#
# --arch arm64 --suite bookworm (make test-arm64, issue 33): Debian 12's arm64 kernel and root
# (root.sh bootstraps it under qemu-user) in qemu-system-aarch64 -M virt -cpu max, also TCG;
# NODEGATE_BIN_DIR must then hold arm64 executables (build-arm64/bin).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
require_root

arch=$(dpkg --print-architecture)
suite=bullseye
while [ $# -gt 0 ]; do
  case "$1" in
    --arch) arch=$2; shift 2 ;;
    --suite) suite=$2; shift 2 ;;
    *) break ;;
  esac
done
case "$arch" in
  amd64) qemu=(qemu-system-x86_64) cpu=max console=ttyS0 ;;
  # virt: the generic Arm board; max: every feature TCG emulates (e.g. pointer authentication),
  # with pauth-impdef: pointer authentication by qemu's cheaper implementation-defined
  # algorithm rather than the architected QARMA one, which qemu documents as much slower.
  arm64) qemu=(qemu-system-aarch64 -M virt) cpu=max,pauth-impdef=on console=ttyAMA0 ;;
  *) echo "vm_test.sh: unsupported architecture $arch" >&2; exit 2 ;;
esac
checks=("$@")
if [ ${#checks[@]} -eq 0 ]; then
  # legacy_first_use first: it needs a kernel where nothing has loaded ip_tables yet.
  checks=(legacy_first_use version host_local portmap_iptables:nft portmap_iptables:legacy
    portmap_conntrack portmap_nftables portmap_nftables_masqall bandwidth bridge:nft bridge_vlan)
fi
entry=$(debian_root --suite "$suite" --arch "$arch" --image)
kernel=$(ls "$entry"/root/boot/vmlinuz-* | sort -V | tail -1)
initrd=$(ls "$entry"/root/boot/initrd.img-* | sort -V | tail -1)
tmp=$(mktemp -d /tmp/ng-portability-vm.XXXXXX)
if [ "${NG_VM_KEEP:-0}" = 1 ]; then
  trap 'echo "kept: $tmp"' EXIT
else
  trap 'rm -rf "$tmp"' EXIT
fi

stage_ng "$tmp/ng"
cp "$PORT_DIR/node/vm-init" "$tmp/ng/init"
echo "${checks[*]}" >"$tmp/ng/checks"
for var in BW_RATE BW_SECONDS; do
  [ -z "${!var:-}" ] || echo "export $var=${!var}" >>"$tmp/ng/env"
done
mke2fs -q -t ext2 -L ngsmoke -d "$tmp/ng" "$tmp/smoke.ext4" 256M

# TCG: the guest runs several times slower than this machine; the smoke takes a few minutes.
# BW rates are measured inside the guest against its own clock, so they hold at that speed.
echo "booting $(basename "$kernel") under TCG"
start=$SECONDS
rc=0
timeout "${NG_VM_TIMEOUT:-1200}" "${qemu[@]}" -accel tcg -cpu "$cpu" -smp 2 -m 1024 \
  -display none -no-reboot -nic none -serial "file:$tmp/console.log" -monitor none \
  -kernel "$kernel" -initrd "$initrd" \
  -append "console=$console root=/dev/vda rw quiet panic=-1 init=/sbin/nodegate-vm-init" \
  -drive "file=$entry/root.ext4,format=raw,if=virtio,snapshot=on" \
  -drive "file=$tmp/smoke.ext4,format=raw,if=virtio" || rc=$?
echo "the VM ran for $((SECONDS - start)) s (qemu exit $rc)"

results=$(debugfs -R "cat /results.txt" "$tmp/smoke.ext4" 2>/dev/null || true)
if [ -z "$results" ]; then
  echo "no results from the VM; its console:"
  tail -50 "$tmp/console.log"
  exit 1
fi
echo "$results"
# The guest's last line: "exit STATUS after N s" (node/vm-init).
last=$(tail -1 <<<"$results")
[ "$rc" -eq 0 ] && [[ "$last" == "exit 0 after"* ]]
