# shellcheck shell=bash
# Sourced by scripts/install-deps.sh, release.sh, image.sh and the arm64 tests: what differs
# between the architectures the project builds for (issue 33). Debian's names throughout
# (dpkg --print-architecture: amd64, arm64).

HOST_ARCH="$(dpkg --print-architecture)"

# arch_triplet ARCH: the GNU triplet of Debian's toolchain for ARCH (aarch64-linux-gnu).
arch_triplet() {
  case "$1" in
    amd64) echo x86_64-linux-gnu ;;
    arm64) echo aarch64-linux-gnu ;;
    *) return 1 ;;
  esac
}

# arch_elf_machine ARCH: the Machine field `readelf -h` prints for an executable of ARCH.
arch_elf_machine() {
  case "$1" in
    amd64) echo "Advanced Micro Devices X86-64" ;;
    arm64) echo AArch64 ;;
    *) return 1 ;;
  esac
}

# arch_oci ARCH: the OCI platform architecture of ARCH (the same words for these two).
arch_oci() { echo "$1"; }

# arch_qemu_user ARCH: how to run a static executable of ARCH here: nothing for the host's
# architecture, else Debian's qemu-user-static for it (called directly: no binfmt_misc entry
# is needed or registered).
arch_qemu_user() {
  [ "$1" = "$HOST_ARCH" ] && return 0
  case "$1" in
    arm64) echo /usr/bin/qemu-aarch64-static ;;
    *) return 1 ;;
  esac
}

# arch_tool ARCH TOOL: binutils' TOOL (readelf, objdump, nm, strip) for ARCH's executables.
# readelf is the host's for every ARCH: it reads any machine's ELF without BFD, so checking an
# executable's architecture needs no cross binutils (make test checks without them).
arch_tool() {
  if [ "$1" = "$HOST_ARCH" ] || [ "$2" = readelf ]; then
    echo "$2"
  else
    echo "$(arch_triplet "$1")-$2"
  fi
}

# deb_cache_dir: where foreign-architecture packages that cannot be installed beside the host's
# are kept as .deb files (NODEGATE_DEB_CACHE_DIR, else NODEGATE_CACHE_DIR/debs; default
# <source>/build/cache/debs).
deb_cache_dir() {
  local src
  src="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
  echo "${NODEGATE_DEB_CACHE_DIR:-${NODEGATE_CACHE_DIR:-$src/build/cache}/debs}"
}

# cached_deb PACKAGE ARCH: the path of PACKAGE's .deb for ARCH in deb_cache_dir, or nothing.
cached_deb() {
  local f
  for f in "$(deb_cache_dir)/$1"_*_"$2".deb; do
    [ -f "$f" ] && echo "$f" && return 0
  done
  return 0
}

# fetch_deb PACKAGE ARCH: apt-get download (which checks the file against the signed index)
# of the candidate version into deb_cache_dir; ARCH must be one of dpkg's architectures.
fetch_deb() {
  local dir
  dir="$(deb_cache_dir)"
  mkdir -p "$dir"
  echo "install-deps: apt-get download $1:$2 into $dir" >&2
  # (As root, apt's download sandbox user could not write there: download as root.)
  (cd "$dir" && apt-get download -qq -o APT::Sandbox::User=root "$1:$2" >&2)
}

# debian_kubectl: the path of Debian's kubectl (package kubernetes-client): /usr/bin/kubectl
# when the package is installed, else the one of its cached .deb (unpacked once beside it);
# nothing when neither is there (scripts/install-deps.sh gets one of them).
debian_kubectl() {
  local deb dir
  if dpkg-query -W -f='${Status}' kubernetes-client 2>/dev/null | grep -q "install ok installed"; then
    echo /usr/bin/kubectl
    return 0
  fi
  deb="$(cached_deb kubernetes-client "$HOST_ARCH")"
  [ -n "$deb" ] || return 0
  dir="${deb%.deb}"
  if [ ! -x "$dir/usr/bin/kubectl" ]; then
    mkdir -p "$dir.tmp$$"
    dpkg-deb -x "$deb" "$dir.tmp$$" && rm -rf "$dir" && mv "$dir.tmp$$" "$dir"
  fi
  echo "$dir/usr/bin/kubectl"
}

# arch_busybox ARCH DIR: a static busybox of ARCH, as DIR/busybox: the host's /bin/busybox
# (busybox-static) for the host's architecture, else the one of the cached .deb.
arch_busybox() {
  local arch=$1 dir=$2 deb
  if [ "$arch" = "$HOST_ARCH" ]; then
    cp /bin/busybox "$dir/busybox"
    return
  fi
  deb="$(cached_deb busybox-static "$arch")"
  [ -n "$deb" ] || {
    echo "no busybox-static .deb for $arch in $(deb_cache_dir) (scripts/install-deps.sh --arch $arch)" >&2
    return 1
  }
  dpkg-deb --fsys-tarfile "$deb" | tar -xO ./bin/busybox >"$dir/busybox"
  chmod 0755 "$dir/busybox"
}

# arch_binfmt_magic ARCH: binfmt_misc's magic:mask for ARCH's ELF executables (qemu's own
# values, as Debian's qemu-user-static registers them), in the register file's \x notation.
arch_binfmt_magic() {
  case "$1" in
    arm64)
      printf '%s' '\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00'
      printf ':%s' '\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff'
      ;;
    *) return 1 ;;
  esac
}

# with_arch_binfmt ARCH COMMAND...: COMMAND in a user and mount namespace of its own (the
# machine's users mapped as themselves) whose own binfmt_misc (Linux 6.7 and later mount one
# per user namespace) runs ARCH's executables under qemu-user-static, so that every exec of
# COMMAND and its children, containers included, runs them. The machine's binfmt_misc is
# neither read nor changed; the entry ends with the namespace.
with_arch_binfmt() {
  local arch=$1 qemu fifo pid rc=0
  shift
  qemu="$(arch_qemu_user "$arch")"
  [ -x "$qemu" ] || { echo "no qemu-user for $arch (scripts/install-deps.sh --arch $arch)" >&2; return 1; }
  fifo="$(mktemp -u /tmp/ng-binfmt.XXXXXX)"
  mkfifo "$fifo"
  # P: argv[0] as the caller gave it (busybox picks its applet by it); F: qemu opened now, so
  # it runs in any mount namespace or root below (containers).
  unshare --user --mount --propagation private --fork bash -c '
    read -r _ <"$1"
    mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc ||
      { echo "with_arch_binfmt: no binfmt_misc of its own in a user namespace (Linux 6.7 or later)" >&2; exit 1; }
    printf "%s" ":ng-$2:M::$3:$4:PF" >/proc/sys/fs/binfmt_misc/register || exit 1
    shift 4
    exec "$@"' with_arch_binfmt "$fifo" "$arch" "$(arch_binfmt_magic "$arch")" "$qemu" "$@" &
  pid=$!
  # The map can be written once unshare has made the namespace.
  while [ "$(readlink "/proc/$pid/ns/user" 2>/dev/null)" = "$(readlink /proc/self/ns/user)" ]; do
    sleep 0.01
  done
  echo "0 0 4294967295" >"/proc/$pid/uid_map" && echo "0 0 4294967295" >"/proc/$pid/gid_map" ||
    { kill "$pid"; rm -f "$fifo"; return 1; }
  echo go >"$fifo"
  rm -f "$fifo"
  wait "$pid" || rc=$?
  return $rc
}

# arch_test_reexec ARCH SCRIPT ARGS...: a test of ARCH's executables on another machine runs
# again, once, as `bash SCRIPT ARGS` inside with_arch_binfmt, and exits with its status. Returns
# at once when ARCH is this machine's or when already running inside.
arch_test_reexec() {
  local arch=$1
  shift
  [ "$arch" != "$HOST_ARCH" ] && [ -z "${NG_ARCH_BINFMT:-}" ] || return 0
  export NG_ARCH_BINFMT=1
  local rc=0
  with_arch_binfmt "$arch" bash "$@" || rc=$?
  exit "$rc"
}
