#!/usr/bin/env bash
# make deb (scripts/deb.sh) from the built binaries, then the package itself:
#   1. control fields: name, the project's version, this machine's architecture, and a
#      Depends naming the package of every shared library the executables load (found here
#      independently, with readelf and dpkg -S);
#   2. the exact file list, with modes and root ownership; the manual page covers every
#      subcommand `nodegate --help` lists; the same inputs give the same bytes;
#   3. a real dpkg install into a temporary root with its own database (the host's packages
#      of the Depends copied into it): the installed nodegate and plugins run, `dpkg -V`
#      finds every file intact, removal leaves no file; without those packages in the
#      database dpkg refuses the install. The host's dpkg database is not touched.
set -euo pipefail
BIN="$(cd "${NODEGATE_BIN_DIR:-build/bin}" && pwd)"
SRC="$(cd "${NODEGATE_SOURCE_DIR:-.}" && pwd)"
# shellcheck source=../../scripts/lib/check.sh
source "$SRC/scripts/lib/check.sh"  # ok, fail, expect_eq, FAILED
# shellcheck source=../../scripts/lib/build_outputs.sh
source "$SRC/scripts/lib/build_outputs.sh"  # project_version

T="$(mktemp -d /tmp/ng-deb-test.XXXXXX)"
trap 'rm -rf "$T"' EXIT
# dpkg installs (into $T only) need root, or --force-not-root as another user.
DPKG_USER_FLAGS=()
[ "$(id -u)" -eq 0 ] || DPKG_USER_FLAGS=(--force-not-root)
HOST_STATUS_SUM="$(md5sum </var/lib/dpkg/status)"

VERSION="$(project_version "$SRC")"
ARCH="$(dpkg --print-architecture)"
DEB="$T/out/nodegate_${VERSION}_${ARCH}.deb"

echo "== build"
env -u DEB_BUILD_OPTIONS bash "$SRC/scripts/deb.sh" "$BIN" "$T/out" >"$T/build.log" 2>&1 ||
  { cat "$T/build.log" >&2; fail "scripts/deb.sh failed"; exit 1; }
[ -f "$DEB" ] && ok "built $(basename "$DEB")" || { fail "no $DEB: $(ls "$T/out")"; exit 1; }
grep -q warning "$T/build.log" && fail "warnings while building: $(grep warning "$T/build.log")"

echo "== 1. control fields"
field() { dpkg-deb -f "$DEB" "$1"; }
expect_eq nodegate "$(field Package)" "Package"
expect_eq "$VERSION" "$(field Version)" "Version (CMakeLists.txt)"
expect_eq "$ARCH" "$(field Architecture)" "Architecture"
[ -n "$(field Maintainer)" ] && ok "Maintainer: $(field Maintainer)" || fail "no Maintainer"
DEPENDS="$(field Depends)"
case ", $DEPENDS," in
  *", libc6 (>= "*) ok "Depends names libc6 with a version bound: $DEPENDS" ;;
  *) fail "Depends does not name libc6 (>= ...): '$DEPENDS'" ;;
esac
expect_eq containernetworking-plugins "$(field Recommends)" "Recommends"
# Every NEEDED library of every executable, resolved by the loader, belongs to a package the
# Depends names.
MULTIARCH="$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null)"
declare -A NEEDED_PKGS=()
for b in portmap bandwidth host-local nodegate; do
  for lib in $(readelf -d "$BIN/$b" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    pkg="$(dpkg -S "*/$lib" 2>/dev/null | grep -E ": .*/$MULTIARCH/$lib\$" | head -1 | cut -d: -f1 || true)"
    [ -n "$pkg" ] || { fail "$b: no package owns $lib"; continue; }
    NEEDED_PKGS[$pkg]=1
  done
done
[ "${#NEEDED_PKGS[@]}" -gt 0 ] || fail "no NEEDED library found"
for pkg in "${!NEEDED_PKGS[@]}"; do
  case ", $DEPENDS," in
    *", $pkg ("* | *", $pkg,"*) ok "Depends names $pkg (owns a library the executables load)" ;;
    *) fail "Depends '$DEPENDS' lacks $pkg" ;;
  esac
done

echo "== 2. contents"
{
  echo "drwxr-xr-x root/root ./"
  for d in opt opt/cni opt/cni/bin usr usr/bin usr/share usr/share/doc usr/share/doc/nodegate \
    usr/share/doc/nodegate/examples usr/share/man usr/share/man/man1; do
    echo "drwxr-xr-x root/root ./$d/"
  done
  for f in opt/cni/bin/host-local opt/cni/bin/portmap opt/cni/bin/bandwidth usr/bin/nodegate; do
    echo "-rwxr-xr-x root/root ./$f"
  done
  for f in usr/share/doc/nodegate/copyright usr/share/doc/nodegate/changelog.gz \
    usr/share/man/man1/nodegate.1.gz; do
    echo "-rw-r--r-- root/root ./$f"
  done
  for c in "$SRC"/conf/examples/*.conflist; do
    echo "-rw-r--r-- root/root ./usr/share/doc/nodegate/examples/$(basename "$c")"
  done
} | sort >"$T/want.txt"
dpkg-deb -c "$DEB" | awk '{print $1, $2, $6}' | sort >"$T/got.txt"
if diff -u "$T/want.txt" "$T/got.txt" >"$T/diff.txt"; then
  ok "file list, modes and owners exact ($(wc -l <"$T/got.txt") entries)"
else
  fail "file list differs (want/got):"
  cat "$T/diff.txt" >&2
fi

dpkg-deb -x "$DEB" "$T/x"
MAN="$(zcat "$T/x/usr/share/man/man1/nodegate.1.gz")"
case "$MAN" in
  *'.TH NODEGATE 1 "'[0-9]*"\" \"nodegate $VERSION\""*) ok "manual page: .TH with date and version" ;;
  *) fail "manual page header: $(echo "$MAN" | grep '^\.TH')" ;;
esac
case "$MAN" in *@*@*) fail "manual page has an unfilled placeholder" ;; esac
commands="$("$BIN/nodegate" --help 2>&1 | sed -n 's/^  \([a-z][a-z-]*\)  .*/\1/p')"
[ -n "$commands" ] || fail "no command in nodegate --help"
for c in $commands; do
  if grep -q "^\.B nodegate $c\b" <<<"$MAN"; then ok "manual page synopsis has nodegate $c"; else
    fail "manual page synopsis lacks nodegate $c"; fi
done
man_warnings="$(MANWIDTH=80 man --warnings -l "$T/x/usr/share/man/man1/nodegate.1.gz" 2>&1 >/dev/null)" ||
  fail "man -l failed: $man_warnings"
expect_eq "" "$man_warnings" "man --warnings renders the page without a warning"
expect_eq "nodegate ($VERSION) unstable; urgency=medium" \
  "$(zcat "$T/x/usr/share/doc/nodegate/changelog.gz" | head -1)" "changelog's first line"
grep -q 'LGPL-2.1' "$T/x/usr/share/doc/nodegate/copyright" && grep -q 'Niels Lohmann' \
  "$T/x/usr/share/doc/nodegate/copyright" && ok "copyright names libnl's licence and the compiled-in notices" ||
  fail "copyright lacks libnl's licence or nlohmann/json's notice"
for p in host-local portmap bandwidth; do
  f="$T/x/opt/cni/bin/$p"
  libs="$(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort | tr '\n' ' ')"
  expect_eq "ld-linux-x86-64.so.2 libc.so.6 " "$libs" "$p loads only the loader and libc"
  readelf -S "$f" | grep -q '\.debug_' && fail "$p is not stripped" || ok "$p stripped"
done
if [ "$ARCH" != amd64 ]; then echo "  (loader name checked for amd64 only)"; fi

env -u DEB_BUILD_OPTIONS bash "$SRC/scripts/deb.sh" "$BIN" "$T/again" >/dev/null 2>&1 ||
  fail "second build failed"
cmp -s "$DEB" "$T/again/$(basename "$DEB")" && ok "same inputs, same bytes" ||
  fail "two builds of the same tree differ"

echo "== 3. dpkg install into a temporary root"
# new_root DIR PKG...: an empty root whose dpkg database holds the host's entries of PKGs.
new_root() {
  local r=$1
  shift
  mkdir -p "$r/var/lib/dpkg/info" "$r/var/lib/dpkg/updates" "$r/var/log"
  : >"$r/var/lib/dpkg/status"
  for pkg in "$@"; do
    dpkg-query -s "$pkg" >>"$r/var/lib/dpkg/status"
    echo >>"$r/var/lib/dpkg/status"
  done
  : >"$r/var/lib/dpkg/available"
}
R="$T/root"
# shellcheck disable=SC2046  # package names are words
new_root "$R" $(echo "$DEPENDS" | tr ',' '\n' | sed 's/^ *//; s/[ :(].*//' | sort -u)
D() { dpkg "${DPKG_USER_FLAGS[@]}" --root="$R" --log="$R/var/log/dpkg.log" "$@"; }
if D -i "$DEB" >"$T/install.log" 2>&1; then
  ok "dpkg -i with the Depends met by this host's packages"
else
  fail "dpkg -i into $R: $(cat "$T/install.log")"
fi
expect_eq "install ok installed" "$(dpkg-query --admindir="$R/var/lib/dpkg" -W -f='${Status}' nodegate 2>&1)" \
  "package state in the temporary database"
verify="$(D -V nodegate 2>&1)" && [ -z "$verify" ] && ok "dpkg -V: every file matches its md5sum" ||
  fail "dpkg -V: $verify"
help="$("$R/usr/bin/nodegate" --help 2>&1)" || fail "installed nodegate --help exit status"
for c in admit guard ports cni conf; do
  grep -q "^  $c  " <<<"$help" || fail "installed nodegate --help lacks $c: $help"
done
case "$help" in "usage: nodegate <command>"*) ok "installed nodegate --help" ;; *) fail "help: $help" ;; esac
"$R/usr/bin/nodegate" conf validate --help >/dev/null 2>&1 && ok "installed nodegate conf validate --help" ||
  fail "installed nodegate conf validate --help"
for p in portmap bandwidth host-local; do
  out="$(CNI_COMMAND=VERSION "$R/opt/cni/bin/$p" </dev/null 2>&1)" || fail "$p VERSION exit status"
  case "$out" in
    *'"supportedVersions":['*'"1.1.0"'*) ok "installed $p answers VERSION" ;;
    *) fail "installed $p VERSION: $out" ;;
  esac
done
D -r nodegate >"$T/remove.log" 2>&1 || fail "dpkg -r: $(cat "$T/remove.log")"
left="$(cd "$R" && { find opt usr -type f 2>/dev/null || true; } | wc -l)"
expect_eq 0 "$left" "dpkg -r leaves no file of the package"

R="$T/bare"
new_root "$R"
if D -i "$DEB" >"$T/bare.log" 2>&1; then
  fail "dpkg -i succeeded in a root without libc6"
elif grep -q "depends on libc6" "$T/bare.log"; then
  ok "without libc6 in the database dpkg refuses: depends on libc6"
else
  fail "dpkg -i failed for another reason: $(cat "$T/bare.log")"
fi

expect_eq "$HOST_STATUS_SUM" "$(md5sum </var/lib/dpkg/status)" "the host's dpkg database is unchanged"

if [ "$FAILED" -ne 0 ]; then
  echo "deb test: FAILED" >&2
  exit 1
fi
echo "deb test passed"
