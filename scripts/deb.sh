#!/usr/bin/env bash
# make deb: a Debian package of the built binaries, made with dpkg-deb (nothing is fetched).
#
#   bash scripts/deb.sh BUILD_BIN_DIR OUT_DIR [ARCH]   -> OUT_DIR/nodegate_<version>_<arch>.deb
#
# Contents: the plugins host-local, cluster-ipam, portmap and bandwidth in /opt/cni/bin (where runtimes and
# network add-ons look; Debian's containernetworking-plugins uses /usr/lib/cni, so the two
# packages share no file), nodegate in /usr/bin, its manual page, the copyright notices and
# the example network configurations in /usr/share/doc/nodegate. No configuration is
# installed: /etc/cni/net.d is the operator's. /usr/bin/kubectl-nodegate links to nodegate, so
# kubectl finds it as a plugin. dpkg unpacks every file under a temporary name
# and renames it into place, so a plugin a runtime is executing keeps its old inode, as with
# `make install`.
#
# Version: project(nodegate VERSION ...) of CMakeLists.txt (a native package: no Debian
# revision). Architecture: ARCH, default dpkg --print-architecture; the binaries must be of it
# (a cross build's: make release, scripts/release.sh). No Depends: the executables are static
# (no interpreter, no DT_NEEDED; cmake/NodegateHelpers.cmake), and a binary that is not, or is
# of another architecture, is refused. Binaries are stripped unless DEB_BUILD_OPTIONS has nostrip.
# Maintainer: $DEB_MAINTAINER, else the author of the source tree's last commit; the changelog names
# the tree as $DEB_REVISION, else `git describe --always --dirty`. File dates
# and the changelog date are that commit's date (SOURCE_DATE_EPOCH when set; without git, the
# nodegate binary's mtime), so the same tree and binaries give the same package.
set -euo pipefail
umask 022

BIN_DIR="${1:-build/bin}"
OUT_DIR="${2:-build}"
SRC="$(cd "$(dirname "$0")/.." && pwd)"
PLUGINS=(host-local cluster-ipam portmap bandwidth)

# shellcheck source=lib/build_outputs.sh
source "$SRC/scripts/lib/build_outputs.sh"
# shellcheck source=lib/arch.sh
source "$SRC/scripts/lib/arch.sh"
ARCH="${3:-$HOST_ARCH}"
arch_triplet "$ARCH" >/dev/null || { echo "deb: unsupported architecture $ARCH" >&2; exit 1; }
READELF="$(arch_tool "$ARCH" readelf)"
STRIP="$(arch_tool "$ARCH" strip)"
CXX_OF_ARCH="$(arch_tool "$ARCH" g++)"
require_built deb "$BIN_DIR" "${PLUGINS[@]}" nodegate
for tool in dpkg-deb "$READELF" "$STRIP" "$CXX_OF_ARCH" gzip; do
  command -v "$tool" >/dev/null ||
    { echo "deb: $tool not found (scripts/install-deps.sh --arch $ARCH)" >&2; exit 1; }
done

# A package without Depends is right only for executables that need nothing of the node.
for b in "${PLUGINS[@]}" nodegate; do
  if "$READELF" -lW "$BIN_DIR/$b" | grep -q INTERP || "$READELF" -dW "$BIN_DIR/$b" | grep -q NEEDED; then
    echo "deb: $BIN_DIR/$b is not static (an ELF interpreter or NEEDED libraries)" >&2
    exit 1
  fi
  machine="$("$READELF" -hW "$BIN_DIR/$b" | sed -n 's/^ *Machine: *//p')"
  if [ "$machine" != "$(arch_elf_machine "$ARCH")" ]; then
    echo "deb: $BIN_DIR/$b is for $machine, not $ARCH" >&2
    exit 1
  fi
done

VERSION="$(project_version "$SRC")"
[ -n "$VERSION" ] || { echo "deb: no project(nodegate VERSION ...) in CMakeLists.txt" >&2; exit 1; }

git_src() { git -C "$SRC" "$@" 2>/dev/null; }
if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
  SOURCE_DATE_EPOCH="$(git_src log -1 --format=%ct || stat -c %Y "$BIN_DIR/nodegate")"
fi
export SOURCE_DATE_EPOCH
MAINTAINER="${DEB_MAINTAINER:-$(git_src log -1 --format='%an <%ae>' || true)}"
MAINTAINER="${MAINTAINER:-nodegate maintainers <root@localhost>}"
REVISION="${DEB_REVISION:-$(git_src describe --always --dirty || echo unknown)}"

WORK="$(mktemp -d /tmp/ng-deb.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
PKG="$WORK/debian/nodegate"
DOC="$PKG/usr/share/doc/nodegate"
mkdir -p "$PKG/DEBIAN" "$PKG/opt/cni/bin" "$PKG/usr/bin" "$PKG/usr/share/man/man1" "$DOC/examples"

# put_binary SRC DEST: stripped (Debian policy 10.1) unless nostrip, mode 0755.
put_binary() {
  case " ${DEB_BUILD_OPTIONS:-} " in
    *" nostrip "*) cp "$1" "$2" ;;
    *) "$STRIP" --strip-unneeded --remove-section=.comment --remove-section=.note -o "$2" "$1" ;;
  esac
  chmod 0755 "$2"
}
for p in "${PLUGINS[@]}"; do put_binary "$BIN_DIR/$p" "$PKG/opt/cni/bin/$p"; done
put_binary "$BIN_DIR/nodegate" "$PKG/usr/bin/nodegate"
# kubectl's plugin name: `kubectl nodegate explain ...` runs kubectl-nodegate from PATH.
ln -s nodegate "$PKG/usr/bin/kubectl-nodegate"

DATE_DAY="$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%d)"
sed -e "s/@VERSION@/$VERSION/g" -e "s/@DATE@/$DATE_DAY/g" "$SRC/deploy/debian/nodegate.1" |
  gzip -9n >"$PKG/usr/share/man/man1/nodegate.1.gz"

# The copyright file: ours, then the notices of what is compiled or statically linked in, from
# the Debian packages the binaries were built with: the header-only libraries, libnl, libyaml,
# glibc and GCC's runtime (libstdc++, libgcc); then those of what the build compiled from
# Debian's source packages (third_party/: libiptc), which it left in <build>/third_party/notices.
NOTICES="$BIN_DIR/../third_party/notices"
[ -f "$NOTICES/iptables" ] || { echo "deb: $NOTICES/iptables is missing (build first)" >&2; exit 1; }
GCC_RUNTIME="$(dpkg -S "$(readlink -f "$("$CXX_OF_ARCH" -print-file-name=libstdc++.a)")" | cut -d: -f1)"
{
  cat "$SRC/deploy/debian/copyright"
  for dev in libspdlog-dev libfmt-dev nlohmann-json3-dev libcli11-dev libnl-3-dev libyaml-dev \
    libc6-dev "$GCC_RUNTIME"; do
    f="/usr/share/doc/$dev/copyright"
    [ -f "$f" ] || { echo "deb: $f is missing (scripts/install-deps.sh)" >&2; exit 1; }
    printf '\n==== %s (from %s)\n\n' "${dev%-dev}" "$f"
    cat "$f"
  done
  for f in "$NOTICES"/*; do
    printf '\n==== %s (from its Debian source package, third_party/)\n\n' "$(basename "$f")"
    cat "$f"
  done
} >"$DOC/copyright"

# A native package's changelog is changelog.gz (changelog.Debian.gz is for non-native ones).
{
  echo "nodegate ($VERSION) unstable; urgency=medium"
  echo
  echo "  * Built from the nodegate source tree at $REVISION with make deb."
  echo
  echo " -- $MAINTAINER  $(LC_ALL=C date -u -R -d "@$SOURCE_DATE_EPOCH")"
} | gzip -9n >"$DOC/changelog.gz"
cp "$SRC"/conf/examples/*.conflist "$DOC/examples/"
chmod 0644 "$DOC/copyright" "$DOC/changelog.gz" "$DOC"/examples/* "$PKG/usr/share/man/man1/nodegate.1.gz"

INSTALLED_SIZE="$(du -sk --exclude=DEBIAN "$PKG" | cut -f1)"
cat >"$PKG/DEBIAN/control" <<CONTROL
Package: nodegate
Version: $VERSION
Architecture: $ARCH
Maintainer: $MAINTAINER
Installed-Size: $INSTALLED_SIZE
Recommends: containernetworking-plugins
Section: net
Priority: optional
Description: CNI plugins portmap, bandwidth, host-local, cluster-ipam and the nodegate tool
 Drop-in replacements for the reference containernetworking plugins portmap,
 bandwidth and host-local, installed into /opt/cni/bin: same type names,
 configuration keys, kernel objects and on-disk state, with the netfilter and
 traffic-control changes made in-process.
 .
 cluster-ipam allocates pods' addresses from one pool for the whole cluster,
 kept in etcd: blocks claimed per node, one transaction per ADD.
 .
 The nodegate command checks pods against the node as the kube-scheduler and
 the kubelet would (admit, guard), lists every host port with its owner
 (ports), runs and validates CNI network configurations (cni, conf validate),
 shows, checks and repairs cluster-ipam's pool (ipam), and explains from the
 cluster why a pod fits no node, naming who holds the port or uses up the
 resource (explain; also kubectl nodegate explain).
 .
 containernetworking-plugins provides bridge and loopback, which the example
 configurations in /usr/share/doc/nodegate/examples use.
CONTROL
(cd "$PKG" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z |
  xargs -0 md5sum) >"$PKG/DEBIAN/md5sums"
chmod 0644 "$PKG/DEBIAN/control" "$PKG/DEBIAN/md5sums"
find "$PKG" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +

mkdir -p "$OUT_DIR"
DEB="$OUT_DIR/nodegate_${VERSION}_${ARCH}.deb"
dpkg-deb --root-owner-group -Zxz --build "$PKG" "$WORK/out.deb" >/dev/null
mv -f "$WORK/out.deb" "$DEB"
echo "built $DEB"
