#!/usr/bin/env bash
# make image: the OCI image localhost/nodegate-cni:<version> (deploy/Containerfile), built with
# podman from the built plugins, Debian's static busybox and deploy/install-cni.sh; nothing is
# fetched (FROM scratch).
#
#   bash scripts/image.sh BUILD_BIN_DIR [TAG [ARCH]]
#
# TAG defaults to localhost/nodegate-cni:<project(nodegate VERSION ...)>, the name
# deploy/daemonset.yaml uses. ARCH (Debian's name, default this machine's) is the image's
# platform, linux/ARCH: the binaries must be of it, and the busybox is Debian's busybox-static
# of it (scripts/lib/arch.sh). Building needs no emulation: nothing runs in the image while it
# is built. make release (scripts/release.sh) joins the images of every architecture in one
# manifest list under that TAG. podman's own settings apply (CONTAINERS_STORAGE_CONF and
# CONTAINERS_CONF select another image store). The image's creation date and file dates are
# the source tree's last commit date (SOURCE_DATE_EPOCH when set).
set -euo pipefail
umask 022

BIN_DIR="${1:-build/bin}"
SRC="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=lib/build_outputs.sh
source "$SRC/scripts/lib/build_outputs.sh"
# shellcheck source=lib/arch.sh
source "$SRC/scripts/lib/arch.sh"
# shellcheck source=lib/oci_image.sh
source "$SRC/scripts/lib/oci_image.sh"
oci_image_args image "$SRC" localhost/nodegate-cni "${2:-}" "${3:-}"
PLUGINS=(bridge host-local cluster-ipam portmap bandwidth)
# The installer's shell and tools (busybox applets, as symbolic links).
APPLETS=(sh ls cat cp mv rm ln chmod cmp sleep sync mkdir stat tr echo test)

require_built image "$BIN_DIR" "${PLUGINS[@]}"
oci_image_epoch "$SRC" "$BIN_DIR/portmap"

CTX="$(mktemp -d /tmp/ng-image.XXXXXX)"
trap 'rm -rf "$CTX"' EXIT
R="$CTX/rootfs"
mkdir -p "$R/bin" "$R/opt/nodegate/bin" "$R/opt/nodegate/net.d"
arch_busybox "$ARCH" "$R/bin" || { echo "image: no busybox-static for $ARCH" >&2; exit 1; }
# The image has no libc: its busybox and plugins must be static, and all of ARCH.
for f in "$R/bin/busybox" "${PLUGINS[@]/#/$BIN_DIR/}"; do oci_image_require_static image "$f" "$f"; done
for a in "${APPLETS[@]}"; do ln -s busybox "$R/bin/$a"; done
for p in "${PLUGINS[@]}"; do cp "$BIN_DIR/$p" "$R/opt/nodegate/bin/$p"; done
cp "$SRC"/conf/examples/*.conflist "$R/opt/nodegate/net.d/"
cp "$SRC/deploy/install-cni.sh" "$R/opt/nodegate/install-cni.sh"
chmod 0755 "$R/bin/busybox" "$R"/opt/nodegate/bin/* "$R/opt/nodegate/install-cni.sh"
chmod 0644 "$R"/opt/nodegate/net.d/*
cp "$SRC/deploy/Containerfile" "$CTX/Containerfile"

oci_image_build "$CTX"
