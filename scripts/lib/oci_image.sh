# shellcheck shell=bash
# What scripts/image.sh and scripts/webhook-image.sh share: their arguments, the check that what
# goes into an image without a libc is static and of the image's architecture, and the podman
# build that makes the same image ID from the same inputs. Needs build_outputs.sh and arch.sh.

# oci_image_args WHAT SRC DEFAULT_REPO [TAG [ARCH]]: sets VERSION, TAG (DEFAULT_REPO:VERSION when
# empty), ARCH (this machine's when empty) and READELF, or exits saying what is wrong.
oci_image_args() {
  local what="$1" src="$2" repo="$3"
  VERSION="$(project_version "$src")"
  [ -n "$VERSION" ] || { echo "$what: no project(nodegate VERSION ...) in CMakeLists.txt" >&2; exit 1; }
  TAG="${4:-$repo:$VERSION}"
  ARCH="${5:-$HOST_ARCH}"
  arch_triplet "$ARCH" >/dev/null || { echo "$what: unsupported architecture $ARCH" >&2; exit 1; }
  command -v podman >/dev/null || { echo "$what: podman not found (scripts/install-deps.sh)" >&2; exit 1; }
  READELF="$(arch_tool "$ARCH" readelf)"
}

# oci_image_epoch SRC FILE: SOURCE_DATE_EPOCH, when unset, becomes the source tree's last commit
# date (FILE's when the tree is not a git checkout): the image's creation and file dates.
oci_image_epoch() {
  if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
    SOURCE_DATE_EPOCH="$(git -C "$1" log -1 --format=%ct 2>/dev/null || stat -c %Y "$2")"
  fi
}

# oci_image_require_static WHAT FILE NAME: FILE must be a static executable of ARCH (the image has
# no libc); NAME is how the error names it.
oci_image_require_static() {
  case "$("$READELF" -lhdW "$2" 2>&1)" in
    *INTERP* | *NEEDED*) echo "$1: $3 is dynamically linked" >&2; exit 1 ;;
    *"Machine:"*"$(arch_elf_machine "$ARCH")"*) ;;
    *) echo "$1: $3 is not an executable of $ARCH" >&2; exit 1 ;;
  esac
}

# oci_image_build CONTEXT_DIR: podman builds CONTEXT_DIR/Containerfile as TAG for linux/ARCH,
# one layer, dated SOURCE_DATE_EPOCH, nothing pulled, and says the image's ID.
oci_image_build() {
  podman build --quiet --pull=never --layers=false --timestamp "$SOURCE_DATE_EPOCH" \
    --platform "linux/$(arch_oci "$ARCH")" --build-arg "VERSION=$VERSION" \
    -f "$1/Containerfile" -t "$TAG" "$1" >/dev/null
  echo "built $TAG ($(podman image inspect --format '{{.Id}}' "$TAG" | cut -c1-12))"
}
