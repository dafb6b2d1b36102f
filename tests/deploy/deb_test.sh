#!/usr/bin/env bash
# make deb (scripts/deb.sh) from the built binaries, then the package itself:
#   1. control fields: name, the project's version, this machine's architecture, and no
#      Depends: every packaged executable is static (no interpreter, no NEEDED entry);
#   2. the exact file list, with modes and root ownership; the manual page covers every
#      subcommand `nodegate --help` lists; the copyright file carries the notices of what is
#      linked in; the same inputs give the same bytes;
#   3. a real dpkg install into an empty temporary root with its own, empty database: it needs
#      no other package; the installed nodegate and plugins run, `dpkg -V` finds every file
#      intact, removal leaves no file. The host's dpkg database is not touched.
# In a cross build (NODEGATE_ARCH, e.g. arm64: cmake/NodegateHelpers.cmake) the package is that
# architecture's, and the test runs in a user namespace whose own binfmt_misc runs its
# executables under qemu-user (with_arch_binfmt, scripts/lib/arch.sh).
set -euo pipefail
BIN="$(cd "${NODEGATE_BIN_DIR:-build/bin}" && pwd)"
SRC="$(cd "${NODEGATE_SOURCE_DIR:-.}" && pwd)"
# shellcheck source=../../scripts/lib/check.sh
source "$SRC/scripts/lib/check.sh"  # ok, fail, expect_eq, FAILED
# shellcheck source=../../scripts/lib/build_outputs.sh
source "$SRC/scripts/lib/build_outputs.sh"  # project_version
# shellcheck source=../../scripts/lib/arch.sh
source "$SRC/scripts/lib/arch.sh"  # HOST_ARCH, arch_tool, arch_test_reexec
ARCH="${NODEGATE_ARCH:-$HOST_ARCH}"
arch_test_reexec "$ARCH" "$0" "$@"
READELF="$(arch_tool "$ARCH" readelf)"

T="$(mktemp -d /tmp/ng-deb-test.XXXXXX)"
trap 'rm -rf "$T"' EXIT
# dpkg installs (into $T only) need root, or --force-not-root as another user.
DPKG_USER_FLAGS=()
[ "$(id -u)" -eq 0 ] || DPKG_USER_FLAGS=(--force-not-root)
HOST_STATUS_SUM="$(md5sum </var/lib/dpkg/status)"

VERSION="$(project_version "$SRC")"
DEB="$T/out/nodegate_${VERSION}_${ARCH}.deb"

echo "== build"
env -u DEB_BUILD_OPTIONS bash "$SRC/scripts/deb.sh" "$BIN" "$T/out" "$ARCH" >"$T/build.log" 2>&1 ||
  { cat "$T/build.log" >&2; fail "scripts/deb.sh failed"; exit 1; }
[ -f "$DEB" ] && ok "built $(basename "$DEB")" || { fail "no $DEB: $(ls "$T/out")"; exit 1; }
grep -q warning "$T/build.log" && fail "warnings while building: $(grep warning "$T/build.log")"

echo "== 1. control fields"
field() { dpkg-deb -f "$DEB" "$1"; }
expect_eq nodegate "$(field Package)" "Package"
expect_eq "$VERSION" "$(field Version)" "Version (CMakeLists.txt)"
expect_eq "$ARCH" "$(field Architecture)" "Architecture"
[ -n "$(field Maintainer)" ] && ok "Maintainer: $(field Maintainer)" || fail "no Maintainer"
expect_eq "" "$(field Depends)" "no Depends (static executables)"
expect_eq "" "$(field Pre-Depends)" "no Pre-Depends"
expect_eq containernetworking-plugins "$(field Recommends)" "Recommends"

echo "== 2. contents"
{
  echo "drwxr-xr-x root/root ./"
  for d in opt opt/cni opt/cni/bin usr usr/bin usr/share usr/share/doc usr/share/doc/nodegate \
    usr/share/doc/nodegate/examples usr/share/man usr/share/man/man1 usr/share/bash-completion \
    usr/share/bash-completion/completions usr/share/zsh usr/share/zsh/vendor-completions; do
    echo "drwxr-xr-x root/root ./$d/"
  done
  for f in opt/cni/bin/host-local opt/cni/bin/cluster-ipam opt/cni/bin/portmap opt/cni/bin/bandwidth \
    opt/cni/bin/bridge usr/bin/nodegate; do
    echo "-rwxr-xr-x root/root ./$f"
  done
  echo "lrwxrwxrwx root/root ./usr/bin/kubectl-nodegate"
  echo "lrwxrwxrwx root/root ./usr/share/bash-completion/completions/kubectl-nodegate"
  for f in usr/share/doc/nodegate/copyright usr/share/doc/nodegate/changelog.gz \
    usr/share/man/man1/nodegate.1.gz usr/share/bash-completion/completions/nodegate \
    usr/share/zsh/vendor-completions/_nodegate; do
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
# The completions: the build's, which bash loads and which complete nodegate's commands.
expect_eq "$(cat "$BIN/../share/bash-completion/completions/nodegate")" \
  "$(cat "$T/x/usr/share/bash-completion/completions/nodegate")" "bash completion is the build's"
offered="$(bash -c "source '$T/x/usr/share/bash-completion/completions/nodegate'
  COMP_WORDS=(nodegate ex); COMP_CWORD=1; _nodegate; echo \"\${COMPREPLY[*]}\"")"
expect_eq explain "$offered" "bash completion completes 'nodegate ex' to explain"
grep -q '^#compdef nodegate' "$T/x/usr/share/zsh/vendor-completions/_nodegate" &&
  ok "zsh completion is a #compdef file" || fail "zsh completion lacks #compdef"
for flag in $("$BIN/nodegate" webhook --help | grep -o -- '--[a-z][a-z-]*' | sort -u); do
  grep -qF -- "\fB${flag//-/\\-}\fR" <<<"$MAN" || fail "manual page lacks webhook $flag"
done
ok "manual page has every flag of nodegate webhook --help"
man_warnings="$(MANWIDTH=80 man --warnings -l "$T/x/usr/share/man/man1/nodegate.1.gz" 2>&1 >/dev/null)" ||
  fail "man -l failed: $man_warnings"
expect_eq "" "$man_warnings" "man --warnings renders the page without a warning"
expect_eq "nodegate ($VERSION) unstable; urgency=medium" \
  "$(zcat "$T/x/usr/share/doc/nodegate/changelog.gz" | head -1)" "changelog's first line"
COPYRIGHT="$T/x/usr/share/doc/nodegate/copyright"
for notice in '==== libnl-3 ' '==== libyaml ' '==== libc6 ' '==== libstdc++-' 'Niels Lohmann' \
  'GNU Lesser General Public License' '==== iptables ' 'Upstream-Name: iptables'; do
  grep -qF -- "$notice" "$COPYRIGHT" && ok "copyright has '$notice'" || fail "copyright lacks '$notice'"
done
for f in opt/cni/bin/host-local opt/cni/bin/cluster-ipam opt/cni/bin/portmap opt/cni/bin/bandwidth \
  opt/cni/bin/bridge usr/bin/nodegate; do
  "$READELF" -lW "$T/x/$f" | grep -q INTERP && fail "$f has an ELF interpreter"
  expect_eq "$(arch_elf_machine "$ARCH")" "$("$READELF" -hW "$T/x/$f" | sed -n 's/^ *Machine: *//p')" \
    "$f is an executable of $ARCH"
  libs="$("$READELF" -dW "$T/x/$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')"
  expect_eq "" "$libs" "$f needs no shared library"
  "$READELF" -S "$T/x/$f" | grep -q '\.debug_' && fail "$f is not stripped" || ok "$f stripped"
done

env -u DEB_BUILD_OPTIONS bash "$SRC/scripts/deb.sh" "$BIN" "$T/again" "$ARCH" >/dev/null 2>&1 ||
  fail "second build failed"
cmp -s "$DEB" "$T/again/$(basename "$DEB")" && ok "same inputs, same bytes" ||
  fail "two builds of the same tree differ"

echo "== 3. dpkg install into a temporary root"
# An empty root with an empty dpkg database: no libc, no package.
R="$T/root"
mkdir -p "$R/var/lib/dpkg/info" "$R/var/lib/dpkg/updates" "$R/var/log"
: >"$R/var/lib/dpkg/status"
: >"$R/var/lib/dpkg/available"
# The root's dpkg accepts the package's architecture as the machine's dpkg does.
{ echo "$HOST_ARCH"; [ "$ARCH" = "$HOST_ARCH" ] || echo "$ARCH"; } >"$R/var/lib/dpkg/arch"
D() { dpkg "${DPKG_USER_FLAGS[@]}" --root="$R" --log="$R/var/log/dpkg.log" "$@"; }
if D -i "$DEB" >"$T/install.log" 2>&1; then
  ok "dpkg -i into a root whose database has no package"
else
  fail "dpkg -i into $R: $(cat "$T/install.log")"
fi
expect_eq "install ok installed" "$(dpkg-query --admindir="$R/var/lib/dpkg" -W -f='${Status}' nodegate 2>&1)" \
  "package state in the temporary database"
verify="$(D -V nodegate 2>&1)" && [ -z "$verify" ] && ok "dpkg -V: every file matches its md5sum" ||
  fail "dpkg -V: $verify"
# The installed files run inside that root, where there is no libc to load (as root: chroot).
in_root() { if [ "$(id -u)" -eq 0 ]; then chroot "$R" "$@"; else "$R$1" "${@:2}"; fi; }
help="$(in_root /usr/bin/nodegate --help 2>&1)" || fail "installed nodegate --help exit status"
for c in admit guard ports cni conf; do
  grep -q "^  $c  " <<<"$help" || fail "installed nodegate --help lacks $c: $help"
done
case "$help" in "usage: nodegate <command>"*) ok "installed nodegate --help" ;; *) fail "help: $help" ;; esac
in_root /usr/bin/nodegate conf validate --help >/dev/null 2>&1 && ok "installed nodegate conf validate --help" ||
  fail "installed nodegate conf validate --help"
expect_eq nodegate "$(readlink "$R/usr/bin/kubectl-nodegate")" "kubectl-nodegate links to nodegate"
in_root /usr/bin/kubectl-nodegate explain --help 2>&1 | grep -q "nodegate explain" &&
  ok "installed kubectl-nodegate explain --help" || fail "installed kubectl-nodegate explain --help"
for p in portmap bandwidth host-local cluster-ipam bridge; do
  out="$(CNI_COMMAND=VERSION in_root "/opt/cni/bin/$p" </dev/null 2>&1)" || fail "$p VERSION exit status"
  case "$out" in
    *'"supportedVersions":['*'"1.1.0"'*) ok "installed $p answers VERSION" ;;
    *) fail "installed $p VERSION: $out" ;;
  esac
done
D -r nodegate >"$T/remove.log" 2>&1 || fail "dpkg -r: $(cat "$T/remove.log")"
left="$(cd "$R" && { find opt usr -type f 2>/dev/null || true; } | wc -l)"
expect_eq 0 "$left" "dpkg -r leaves no file of the package"

expect_eq "$HOST_STATUS_SUM" "$(md5sum </var/lib/dpkg/status)" "the host's dpkg database is unchanged"

if [ "$FAILED" -ne 0 ]; then
  echo "deb test: FAILED" >&2
  exit 1
fi
echo "deb test passed"
