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
arch_tool() {
  if [ "$1" = "$HOST_ARCH" ]; then echo "$2"; else echo "$(arch_triplet "$1")-$2"; fi
}

# deb_cache_dir: where foreign-architecture packages that cannot be installed beside the host's
# are kept as .deb files (NODEGATE_CACHE_DIR/debs; default <source>/build/cache/debs).
deb_cache_dir() {
  local src
  src="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
  echo "${NODEGATE_CACHE_DIR:-$src/build/cache}/debs"
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
