#!/usr/bin/env bash
# make image, make release: the OCI image localhost/nodegate:<version>
# (deploy/webhook/Containerfile), the static nodegate executable alone, FROM scratch, run as
# user 65532, entrypoint nodegate: the image deploy/webhook/deployment.yaml names. Built with
# podman from the built executable, stripped as scripts/release.sh strips it; nothing is
# fetched.
#
#   bash scripts/webhook-image.sh BUILD_BIN_DIR [TAG [ARCH]]
#
# TAG defaults to localhost/nodegate:<project(nodegate VERSION ...)>. ARCH (Debian's name,
# default this machine's) is the image's platform, linux/ARCH: the executable must be static
# and of it. Building runs nothing of ARCH, so it needs no emulation. make release joins the
# images of every architecture in one manifest list under that TAG. podman's own settings apply
# (CONTAINERS_STORAGE_CONF, CONTAINERS_CONF). The image's creation date and file dates are the
# source tree's last commit date (SOURCE_DATE_EPOCH when set): the same inputs give the same
# image ID.
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
oci_image_args "webhook image" "$SRC" localhost/nodegate "${2:-}" "${3:-}"

require_built "webhook image" "$BIN_DIR" nodegate
STRIP="$(arch_tool "$ARCH" strip)"
command -v "$STRIP" >/dev/null ||
  { echo "webhook image: $STRIP not found (scripts/install-deps.sh --arch $ARCH)" >&2; exit 1; }
oci_image_epoch "$SRC" "$BIN_DIR/nodegate"

CTX="$(mktemp -d /tmp/ng-webhook-image.XXXXXX)"
trap 'rm -rf "$CTX"' EXIT
EXE="$CTX/rootfs/usr/bin/nodegate"
mkdir -p "$(dirname "$EXE")"
"$STRIP" --strip-unneeded --remove-section=.comment --remove-section=.note -o "$EXE" "$BIN_DIR/nodegate"
chmod 0755 "$EXE"
# The image has no libc: the executable must be static, and of ARCH.
oci_image_require_static "webhook image" "$EXE" "$BIN_DIR/nodegate"
cp "$SRC/deploy/webhook/Containerfile" "$CTX/Containerfile"

oci_image_build "$CTX"
