#!/bin/sh
# Entrypoint of the nodegate-cni image (busybox sh): copies the plugins bridge, host-local,
# cluster-ipam, portmap and bandwidth into the host's plugin folder, mounted at $CNI_BIN_DIR, and, when asked, one
# network configuration into the host's $CNI_CONF_DIR; prints what it did and exits 0 (an
# init container), or then waits until it is stopped (SLEEP=true).
#
# Every file is written under a temporary name in its target folder and renamed over the old
# one (the rule of scripts/install.sh): a plugin that a runtime is executing keeps its old
# inode, and no runtime ever executes or reads a half-written file. Plugins go in before the
# configuration, because runtimes pick up a new configuration at once.
#
#   CNI_BIN_DIR=/host/opt/cni/bin       where the host's plugin folder is mounted (must exist)
#   CNI_CONF_DIR=/host/etc/cni/net.d    where the host's configuration folder is mounted
#   CNI_CONF_NAME=                      a file of $CNI_CONF_SOURCE_DIR to install, e.g.
#                                       10-standard.conflist; empty: no configuration
#   CNI_CONF_SOURCE_DIR=/opt/nodegate/net.d   the examples of conf/examples; mount your own
#   CNI_CONF_OVERWRITE=false            true: replace an existing file of that name
#   KEEP_BRIDGE=false                   true: leave the host's bridge as it is (a node that keeps
#                                       the reference's bridge with our other plugins)
#   SLEEP=false                         true: after installing, wait until stopped
#
#   install-cni.sh sleep                only wait until stopped (the DaemonSet's main container)
set -eu

IMAGE_BIN=/opt/nodegate/bin
PLUGINS="bridge host-local cluster-ipam portmap bandwidth"
CNI_BIN_DIR="${CNI_BIN_DIR:-/host/opt/cni/bin}"
CNI_CONF_DIR="${CNI_CONF_DIR:-/host/etc/cni/net.d}"
CNI_CONF_NAME="${CNI_CONF_NAME:-}"
CNI_CONF_SOURCE_DIR="${CNI_CONF_SOURCE_DIR:-/opt/nodegate/net.d}"
CNI_CONF_OVERWRITE="${CNI_CONF_OVERWRITE:-false}"
KEEP_BRIDGE="${KEEP_BRIDGE:-false}"
SLEEP="${SLEEP:-false}"

say() { echo "nodegate-cni: $*"; }
die() {
  echo "nodegate-cni: $*" >&2
  exit 1
}

# SIGTERM (pod deletion) ends the wait at once: a shell that is PID 1 has no default action.
wait_forever() {
  trap 'exit 0' TERM INT
  while :; do
    sleep 3600 &
    wait $! || true
  done
}

case "${1:-}" in
  "") ;;
  sleep)
    say "waiting until stopped (nothing installed by this container)"
    wait_forever
    ;;
  *) die "usage: install-cni.sh [sleep] (settings come from the environment)" ;;
esac
case "$SLEEP" in true | false) ;; *) die "SLEEP must be true or false, not '$SLEEP'" ;; esac
case "$CNI_CONF_OVERWRITE" in
  true | false) ;;
  *) die "CNI_CONF_OVERWRITE must be true or false, not '$CNI_CONF_OVERWRITE'" ;;
esac
case "$KEEP_BRIDGE" in true | false) ;; *) die "KEEP_BRIDGE must be true or false, not '$KEEP_BRIDGE'" ;; esac
# Without the mount the files would land in this container's own file system and vanish.
[ -d "$CNI_BIN_DIR" ] || die "$CNI_BIN_DIR is not a folder: mount the host's /opt/cni/bin there"

TMP=""
trap '[ -z "$TMP" ] || rm -f "$TMP"' EXIT

# stage SRC DIR NAME MODE: a complete copy of SRC under a temporary name in DIR, in $TMP.
stage() {
  TMP="$2/.$3.nodegate-install.$$"
  cp "$1" "$TMP"
  chmod "$4" "$TMP"
  sync "$TMP" 2>/dev/null || true
}

for p in $PLUGINS; do
  dst="$CNI_BIN_DIR/$p"
  if [ "$p" = bridge ] && [ "$KEEP_BRIDGE" = true ]; then
    say "kept $dst (KEEP_BRIDGE=true)"
    continue
  fi
  if [ -f "$dst" ] && [ -x "$dst" ] && cmp -s "$IMAGE_BIN/$p" "$dst"; then
    say "unchanged $dst"
    continue
  fi
  stage "$IMAGE_BIN/$p" "$CNI_BIN_DIR" "$p" 0755
  mv -fT "$TMP" "$dst"
  TMP=""
  say "installed $dst"
done

if [ -z "$CNI_CONF_NAME" ]; then
  say "no network configuration installed (CNI_CONF_NAME names one of $CNI_CONF_SOURCE_DIR)"
else
  case "$CNI_CONF_NAME" in
    */* | .*) die "CNI_CONF_NAME must be a file name, not '$CNI_CONF_NAME'" ;;
  esac
  src="$CNI_CONF_SOURCE_DIR/$CNI_CONF_NAME"
  dst="$CNI_CONF_DIR/$CNI_CONF_NAME"
  [ -f "$src" ] || die "no $src; available: $(ls "$CNI_CONF_SOURCE_DIR" 2>/dev/null | tr '\n' ' ')"
  [ -d "$CNI_CONF_DIR" ] || die "$CNI_CONF_DIR is not a folder: mount the host's /etc/cni/net.d there"
  if [ -e "$dst" ] && cmp -s "$src" "$dst"; then
    say "unchanged $dst"
  elif [ "$CNI_CONF_OVERWRITE" = true ]; then
    stage "$src" "$CNI_CONF_DIR" "$CNI_CONF_NAME" 0644
    mv -fT "$TMP" "$dst"
    TMP=""
    say "installed $dst"
  else
    # A hard link never replaces an existing name: a file created meanwhile is kept too.
    stage "$src" "$CNI_CONF_DIR" "$CNI_CONF_NAME" 0644
    if ln "$TMP" "$dst" 2>/dev/null; then
      say "installed $dst"
    else
      say "kept existing $dst (CNI_CONF_OVERWRITE=true replaces it)"
    fi
    rm -f "$TMP"
    TMP=""
  fi
fi

if [ "$SLEEP" = true ]; then
  say "done; waiting until stopped (SLEEP=true)"
  wait_forever
fi
say "done"
