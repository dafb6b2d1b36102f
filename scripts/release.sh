#!/usr/bin/env bash
# make release: what an operator downloads, for every architecture built (issue 33), in the
# reference's shape.
#
#   bash scripts/release.sh [--no-image] OUT_DIR ARCH=BIN_DIR...
#   e.g. scripts/release.sh build/release amd64=build/bin arm64=build-arm64/bin
#
# OUT_DIR (emptied first) receives, for each ARCH and the project's VERSION:
#   nodegate-cni-plugins-linux-ARCH-vVERSION.tgz   host-local, cluster-ipam, portmap, bandwidth,
#                                                  flat (./NAME)
#   nodegate-linux-ARCH-vVERSION                   the nodegate executable
#   kubectl-nodegate-linux-ARCH-vVERSION.tar.gz    the same executable as kubectl's plugin
#                                                  (./kubectl-nodegate) and ./copyright, for krew
#   nodegate_VERSION_ARCH.deb                      scripts/deb.sh
# each with .sha256 and .sha512 beside it (sha256sum's and sha512sum's own lines, so
# `sha256sum -c FILE.sha256` checks it), and, unless --no-image,
#   nodegate-cni-vVERSION.oci.tar                  the install image as a multi-architecture
#                                                  OCI index (one image per ARCH, scripts/image.sh)
#   nodegate-vVERSION.oci.tar                      the webhook's image likewise
#                                                  (scripts/webhook-image.sh)
# and the same manifest lists in the local podman store as localhost/nodegate-cni:VERSION and
# localhost/nodegate:VERSION, the names deploy/daemonset.yaml and deploy/webhook/deployment.yaml
# use on every architecture. The webhook image's executable is checked as the others are, and
# must be the released nodegate-linux-ARCH-vVERSION byte for byte. Always, nodegate.yaml: the krew
# manifest (deploy/krew/nodegate.yaml) with the version, NODEGATE_RELEASE_URL (where the archives
# will be downloaded from; a placeholder under .invalid by default) and each archive's sha256
# filled in, checked field by field against the archives (krew-index wants linux/amd64 and
# linux/arm64).
#
# Reproducible: the executables carry no path of the build machine (-ffile-prefix-map,
# CMakeLists.txt); they are stripped as the package strips them; the tarballs list their files
# in name order with owner root, mode 0755 and the source tree's last commit date
# (SOURCE_DATE_EPOCH when set), compressed with gzip -n. The same tree gives the same bytes
# (tests/release/reproducible_test.sh builds it twice in different folders).
#
# Fails before writing anything when CHANGELOG.md has no section for VERSION (scripts/lib/
# changelog.sh; NODEGATE_CHANGELOG names another file, for the test).
# Fails, removing nothing it checked, when an executable is not static (an ELF interpreter or a
# DT_NEEDED entry), is not of its ARCH (readelf -h), or a checksum file does not verify.
set -euo pipefail
umask 022

WITH_IMAGE=1
if [ "${1:-}" = --no-image ]; then
  WITH_IMAGE=0
  shift
fi
[ $# -ge 2 ] || { echo "usage: release.sh [--no-image] OUT_DIR ARCH=BIN_DIR..." >&2; exit 2; }
OUT="$1"
shift
SRC="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=lib/build_outputs.sh
source "$SRC/scripts/lib/build_outputs.sh"
# shellcheck source=lib/arch.sh
source "$SRC/scripts/lib/arch.sh"
PLUGINS=(host-local cluster-ipam portmap bandwidth)
VERSION="$(project_version "$SRC")"
[ -n "$VERSION" ] || { echo "release: no project(nodegate VERSION ...) in CMakeLists.txt" >&2; exit 1; }
# shellcheck source=lib/changelog.sh
source "$SRC/scripts/lib/changelog.sh"
CHANGELOG="${NODEGATE_CHANGELOG:-$SRC/CHANGELOG.md}"
changelog_has_version "$CHANGELOG" "$VERSION" ||
  { echo "release: $CHANGELOG has no section for $VERSION (## [$VERSION] - DATE)" >&2; exit 1; }
if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
  SOURCE_DATE_EPOCH="$(git -C "$SRC" log -1 --format=%ct 2>/dev/null || echo 0)"
fi
export SOURCE_DATE_EPOCH
IMAGE="localhost/nodegate-cni:$VERSION"
WEBHOOK_IMAGE="localhost/nodegate:$VERSION"

die() {
  echo "release: $*" >&2
  exit 1
}

# check_executable FILE ARCH: static and of ARCH, else the release fails.
check_executable() {
  local readelf machine
  readelf="$(arch_tool "$2" readelf)"
  machine="$("$readelf" -hW "$1" | sed -n 's/^ *Machine: *//p')"
  [ "$machine" = "$(arch_elf_machine "$2")" ] || die "$1 is for '$machine', not $2"
  "$readelf" -lW "$1" | grep -q INTERP && die "$1 has an ELF interpreter (not static)"
  "$readelf" -dW "$1" | grep -q NEEDED && die "$1 needs shared libraries (not static)"
  return 0
}

# check_image_executable IMAGE PATH ARCH SAME_AS: PATH in IMAGE is static, of ARCH, and the
# same bytes as the file SAME_AS.
check_image_executable() {
  local cid out="$WORK/from-image"
  cid="$(podman create --platform "linux/$(arch_oci "$3")" "$1")"
  podman cp "$cid:$2" "$out" || { podman rm "$cid" >/dev/null; die "$1 holds no $2"; }
  podman rm "$cid" >/dev/null
  check_executable "$out" "$3"
  cmp -s "$out" "$4" || die "$1's $2 is not $(basename "$4")"
  rm -f "$out"
}

# manifest_list IMAGE OCI_FILE: IMAGE-ARCH of every ARCH joined in one manifest list IMAGE in
# the local store, and written with its images as the OCI archive OUT/OCI_FILE.
manifest_list() {
  local image=$1 oci="$OUT/$2" arch listed want
  echo "== $image: one manifest list for ${ARCHES[*]}"
  # The name may hold a manifest list of an earlier release or a single image (make image).
  podman manifest rm "$image" >/dev/null 2>&1 || podman rmi -f "$image" >/dev/null 2>&1 || true
  podman manifest create "$image" >/dev/null
  for arch in "${ARCHES[@]}"; do
    podman manifest add "$image" "containers-storage:$image-$arch" >/dev/null
  done
  listed="$(podman manifest inspect "$image" |
    python3 -c 'import json,sys; print(" ".join(sorted(m["platform"]["os"] + "/" + m["platform"]["architecture"] for m in json.load(sys.stdin)["manifests"])))')"
  want="$(for arch in "${ARCHES[@]}"; do echo "linux/$(arch_oci "$arch")"; done | sort | tr '\n' ' ')"
  [ "$listed" = "${want% }" ] || die "$image lists '$listed', not '${want% }'"
  # The index is named with the whole image name, which ctr images import takes as it is.
  podman manifest push --quiet --all --format oci "$image" "oci-archive:$oci:$image" >/dev/null
  checksums "$oci"
  echo "  $(basename "$oci") ($listed)"
}

# put_executable SRC DEST ARCH: stripped as scripts/deb.sh strips, mode 0755, checked.
put_executable() {
  "$(arch_tool "$3" strip)" --strip-unneeded --remove-section=.comment --remove-section=.note \
    -o "$2" "$1"
  chmod 0755 "$2"
  touch -d "@$SOURCE_DATE_EPOCH" "$2"
  check_executable "$2" "$3"
}

# checksums FILE: FILE.sha256 and FILE.sha512, each verified as a user would verify it.
checksums() {
  local dir name sum
  dir="$(dirname "$1")"
  name="$(basename "$1")"
  for sum in sha256 sha512; do
    (cd "$dir" && "${sum}sum" "$name" >"$name.$sum" && "${sum}sum" --quiet -c "$name.$sum") ||
      die "$1.$sum does not verify"
  done
}

ARCHES=()
declare -A BIN_OF
for spec in "$@"; do
  arch="${spec%%=*}"
  bin="${spec#*=}"
  arch_triplet "$arch" >/dev/null || die "unsupported architecture $arch"
  require_built release "$bin" "${PLUGINS[@]}" nodegate
  ARCHES+=("$arch")
  BIN_OF[$arch]="$(cd "$bin" && pwd)"
done

rm -rf "$OUT"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
WORK="$(mktemp -d /tmp/ng-release.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT

for arch in "${ARCHES[@]}"; do
  bin="${BIN_OF[$arch]}"
  echo "== linux/$arch from $bin"
  for p in "${PLUGINS[@]}" nodegate; do check_executable "$bin/$p" "$arch"; done

  stage="$WORK/plugins-$arch"
  mkdir -p "$stage"
  for p in "${PLUGINS[@]}"; do put_executable "$bin/$p" "$stage/$p" "$arch"; done
  tgz="$OUT/nodegate-cni-plugins-linux-$arch-v$VERSION.tgz"
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$SOURCE_DATE_EPOCH" \
    --format=gnu -C "$stage" -cf - $(printf './%s\n' "${PLUGINS[@]}" | sort) | gzip -9n >"$tgz"
  checksums "$tgz"
  echo "  $(basename "$tgz")"

  exe="$OUT/nodegate-linux-$arch-v$VERSION"
  put_executable "$bin/nodegate" "$exe" "$arch"
  checksums "$exe"
  echo "  $(basename "$exe")"

  # kubectl's plugin: the executable named kubectl-nodegate (a copy, not a link: krew unpacks
  # regular files) with the copyright notices the .deb carries.
  plugin="$WORK/plugin-$arch"
  mkdir -p "$plugin"
  cp "$exe" "$plugin/kubectl-nodegate"
  cp "$SRC/deploy/debian/copyright" "$plugin/copyright"
  chmod 0644 "$plugin/copyright"
  touch -d "@$SOURCE_DATE_EPOCH" "$plugin/kubectl-nodegate" "$plugin/copyright"
  ptgz="$OUT/kubectl-nodegate-linux-$arch-v$VERSION.tar.gz"
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$SOURCE_DATE_EPOCH" \
    --format=gnu -C "$plugin" -cf - ./copyright ./kubectl-nodegate | gzip -9n >"$ptgz"
  checksums "$ptgz"
  echo "  $(basename "$ptgz")"

  bash "$SRC/scripts/deb.sh" "$bin" "$WORK/deb-$arch" "$arch" >/dev/null
  deb="$OUT/nodegate_${VERSION}_$arch.deb"
  mv "$WORK/deb-$arch/nodegate_${VERSION}_$arch.deb" "$deb"
  [ "$(dpkg-deb -f "$deb" Architecture)" = "$arch" ] || die "$deb: Architecture is not $arch"
  dpkg-deb -x "$deb" "$WORK/deb-$arch/x"
  for f in opt/cni/bin/host-local opt/cni/bin/cluster-ipam opt/cni/bin/portmap \
    opt/cni/bin/bandwidth usr/bin/nodegate; do
    check_executable "$WORK/deb-$arch/x/$f" "$arch"
  done
  checksums "$deb"
  echo "  $(basename "$deb")"

  if [ "$WITH_IMAGE" = 1 ]; then
    bash "$SRC/scripts/image.sh" "$bin" "$IMAGE-$arch" "$arch" | sed 's/^/  /'
    bash "$SRC/scripts/webhook-image.sh" "$bin" "$WEBHOOK_IMAGE-$arch" "$arch" | sed 's/^/  /'
    check_image_executable "$WEBHOOK_IMAGE-$arch" /usr/bin/nodegate "$arch" "$exe"
  fi
done

if [ "$WITH_IMAGE" = 1 ]; then
  manifest_list "$IMAGE" "nodegate-cni-v$VERSION.oci.tar"
  manifest_list "$WEBHOOK_IMAGE" "nodegate-v$VERSION.oci.tar"
fi

# The krew manifest: the template filled in from the archives just built, then read back and
# every platform checked against them.
KREW="$OUT/nodegate.yaml"
# RFC 2606's .invalid until a publisher says where (the same bytes wherever the release is made).
RELEASE_URL="${NODEGATE_RELEASE_URL:-https://nodegate.invalid/releases/v$VERSION}"
python3 - "$SRC/deploy/krew/nodegate.yaml" "$KREW" "$VERSION" "$RELEASE_URL" "$OUT" "${ARCHES[@]}" <<'PY' ||
import hashlib, os, sys, yaml
template, out, version, url, folder, arches = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6:]
def archive(arch):
    return os.path.join(folder, "kubectl-nodegate-linux-%s-v%s.tar.gz" % (arch, version))
def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()
text = open(template).read().replace("@VERSION@", version).replace("@URL@", url.rstrip("/"))
text = text.replace("@HOMEPAGE@", os.environ.get("NODEGATE_HOMEPAGE", url.rstrip("/")))
for arch in ("amd64", "arm64"):
    path = archive(arch)
    # A platform not built in this release keeps no checksum: the manifest is then incomplete.
    text = text.replace("@SHA256_LINUX_%s@" % arch.upper(), sha256(path) if os.path.exists(path) else "NOT-BUILT")
open(out, "w").write(text)
m = yaml.safe_load(open(out))
assert m["kind"] == "Plugin" and m["metadata"]["name"] == "nodegate", "not the nodegate plugin"
assert m["spec"]["version"] == "v" + version, "version"
platforms = {(p["selector"]["matchLabels"]["os"], p["selector"]["matchLabels"]["arch"]): p for p in m["spec"]["platforms"]}
assert set(platforms) == {("linux", "amd64"), ("linux", "arm64")}, "platforms: %s" % sorted(platforms)
for arch in arches:
    p = platforms[("linux", arch)]
    assert p["uri"].endswith("/" + os.path.basename(archive(arch))), "uri of %s: %s" % (arch, p["uri"])
    assert p["sha256"] == sha256(archive(arch)), "sha256 of %s" % arch
    assert p["bin"] == "kubectl-nodegate", "bin of %s" % arch
print("  nodegate.yaml (krew manifest: %s)" % ", ".join("linux/" + a for a in arches))
PY
  die "the krew manifest does not match the archives"
checksums "$KREW"

# Everything once more, as a downloader checks it.
(cd "$OUT" && for f in *.sha256; do sha256sum --quiet -c "$f"; done &&
  for f in *.sha512; do sha512sum --quiet -c "$f"; done) || die "a checksum file does not verify"
echo "release: $OUT ($(find "$OUT" -maxdepth 1 -type f ! -name '*.sha*' | wc -l) artifacts, each with .sha256 and .sha512)"
