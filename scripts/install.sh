#!/usr/bin/env bash
# make install: the plugins into $DESTDIR$CNI_BIN_DIR (default /opt/cni/bin), `nodegate` into
# $DESTDIR$PREFIX/bin (default /usr/local/bin) with kubectl's plugin name beside it
# (kubectl-nodegate -> nodegate: `kubectl nodegate explain ...`), and the example network
# configurations into $DESTDIR$CNI_CONF_DIR (default /etc/cni/net.d) only when INSTALL_CONF=1.
#
# Each file is written under a temporary name in its target folder and renamed over the old
# one, as DaemonSet installers do: a plugin that a runtime is executing right now keeps its old
# inode (no "text file busy", no half-written binary is ever executed). Plugins go in before
# any configuration, because runtimes watch the configuration folder and use it at once.
# Existing configuration files are never replaced.
#
#   bash scripts/install.sh build/bin
#   DESTDIR=/tmp/root INSTALL_CONF=1 bash scripts/install.sh build/bin
set -euo pipefail

BIN_DIR="${1:-build/bin}"
SRC="$(cd "$(dirname "$0")/.." && pwd)"
DESTDIR="${DESTDIR:-}"
PREFIX="${PREFIX:-/usr/local}"
CNI_BIN_DIR="${CNI_BIN_DIR:-/opt/cni/bin}"
CNI_CONF_DIR="${CNI_CONF_DIR:-/etc/cni/net.d}"
INSTALL_CONF="${INSTALL_CONF:-0}"
PLUGINS=(host-local cluster-ipam portmap bandwidth)

# shellcheck source=lib/build_outputs.sh
source "$SRC/scripts/lib/build_outputs.sh"
require_built install "$BIN_DIR" "${PLUGINS[@]}" nodegate

# A temporary file is removed if anything fails before its rename.
CURRENT_TMP=""
trap 'rm -f "${CURRENT_TMP:-/nonexistent}"' EXIT

# install_atomic SRC DEST_DIR NAME MODE
install_atomic() {
  local src="$1" dir="$2" name="$3" mode="$4"
  mkdir -p "$dir"
  CURRENT_TMP="$dir/.$name.nodegate-install.$$"
  cp "$src" "$CURRENT_TMP"
  chmod "$mode" "$CURRENT_TMP"
  sync "$CURRENT_TMP" 2>/dev/null || true
  mv -fT "$CURRENT_TMP" "$dir/$name"
  CURRENT_TMP=""
  echo "installed $dir/$name"
}

for p in "${PLUGINS[@]}"; do
  install_atomic "$BIN_DIR/$p" "$DESTDIR$CNI_BIN_DIR" "$p" 0755
done
install_atomic "$BIN_DIR/nodegate" "$DESTDIR$PREFIX/bin" nodegate 0755
# kubectl runs an executable named kubectl-<name> found on PATH for `kubectl <name>`.
CURRENT_TMP="$DESTDIR$PREFIX/bin/.kubectl-nodegate.nodegate-install.$$"
ln -s nodegate "$CURRENT_TMP"
mv -fT "$CURRENT_TMP" "$DESTDIR$PREFIX/bin/kubectl-nodegate"
CURRENT_TMP=""
echo "installed $DESTDIR$PREFIX/bin/kubectl-nodegate -> nodegate"

if [ "$INSTALL_CONF" = 1 ]; then
  for c in "$SRC"/conf/examples/*.conflist; do
    name="$(basename "$c")"
    if [ -e "$DESTDIR$CNI_CONF_DIR/$name" ]; then
      echo "kept existing $DESTDIR$CNI_CONF_DIR/$name"
      continue
    fi
    install_atomic "$c" "$DESTDIR$CNI_CONF_DIR" "$name" 0644
  done
else
  echo "example configurations not installed (INSTALL_CONF=1 installs conf/examples into $CNI_CONF_DIR)"
fi
