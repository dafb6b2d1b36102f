#!/usr/bin/env bash
# make install into a temporary root: files, modes, DESTDIR/PREFIX/CNI_BIN_DIR honoured,
# configurations only when asked and never overwritten, no temporary files left, and a plugin
# that is running while it is replaced keeps running (rename, not an in-place write).
set -euo pipefail
BIN="$(cd "${NODEGATE_BIN_DIR:-build/bin}" && pwd)"
SRC="$(cd "${NODEGATE_SOURCE_DIR:-.}" && pwd)"
ROOT="$(mktemp -d /tmp/ng-install.XXXXXX)"
BUSY_PID=""
cleanup() {
  [ -n "$BUSY_PID" ] && kill "$BUSY_PID" 2>/dev/null
  rm -rf "$ROOT"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# 1. Defaults below DESTDIR.
DESTDIR="$ROOT" bash "$SRC/scripts/install.sh" "$BIN" >/dev/null
for p in host-local cluster-ipam portmap bandwidth; do
  f="$ROOT/opt/cni/bin/$p"
  [ -x "$f" ] || fail "$f not installed"
  cmp -s "$f" "$BIN/$p" || fail "$f differs from the build"
  [ "$(stat -c %a "$f")" = 755 ] || fail "$f mode $(stat -c %a "$f")"
done
[ -x "$ROOT/usr/local/bin/nodegate" ] || fail "nodegate not in PREFIX/bin"
[ "$(readlink "$ROOT/usr/local/bin/kubectl-nodegate")" = nodegate ] ||
  fail "kubectl-nodegate is not a link to nodegate in PREFIX/bin"
"$ROOT/usr/local/bin/kubectl-nodegate" explain --help | grep -q "nodegate explain" ||
  fail "kubectl-nodegate explain --help"
[ ! -e "$ROOT/etc/cni/net.d" ] || fail "configurations installed without INSTALL_CONF=1"
# The installed plugin answers VERSION.
out="$(CNI_COMMAND=VERSION "$ROOT/opt/cni/bin/portmap" </dev/null)"
case "$out" in *supportedVersions*) ;; *) fail "installed portmap VERSION: $out" ;; esac

# 2. PREFIX, CNI_BIN_DIR and configurations; an existing configuration is kept.
mkdir -p "$ROOT/etc/cni/net.d"
echo '{"operator":"mine"}' >"$ROOT/etc/cni/net.d/10-standard.conflist"
DESTDIR="$ROOT" PREFIX=/usr CNI_BIN_DIR=/usr/libexec/cni INSTALL_CONF=1 \
  bash "$SRC/scripts/install.sh" "$BIN" >/dev/null
[ -x "$ROOT/usr/bin/nodegate" ] || fail "PREFIX=/usr not honoured"
[ -x "$ROOT/usr/libexec/cni/portmap" ] || fail "CNI_BIN_DIR not honoured"
grep -q operator "$ROOT/etc/cni/net.d/10-standard.conflist" || fail "existing configuration overwritten"
for c in "$SRC"/conf/examples/*.conflist; do
  n="$(basename "$c")"
  [ "$n" = 10-standard.conflist ] && continue
  cmp -s "$c" "$ROOT/etc/cni/net.d/$n" || fail "configuration $n not installed"
done

# 3. Replacing a plugin while it runs: the running process keeps the old inode.
cp /bin/sleep "$ROOT/opt/cni/bin/bandwidth"
"$ROOT/opt/cni/bin/bandwidth" 60 &
BUSY_PID=$!
before="$(stat -c %i "$ROOT/opt/cni/bin/bandwidth")"
DESTDIR="$ROOT" bash "$SRC/scripts/install.sh" "$BIN" >/dev/null || fail "install over a running plugin"
after="$(stat -c %i "$ROOT/opt/cni/bin/bandwidth")"
[ "$before" != "$after" ] || fail "plugin rewritten in place (same inode)"
cmp -s "$ROOT/opt/cni/bin/bandwidth" "$BIN/bandwidth" || fail "new plugin content wrong"
kill -0 "$BUSY_PID" || fail "the running plugin was disturbed"

leftovers="$(find "$ROOT" -name '*.nodegate-install.*' | wc -l)"
[ "$leftovers" = 0 ] || fail "$leftovers temporary files left"
# 4. A missing binary fails before anything is written.
mkdir -p "$ROOT/empty"
if bash "$SRC/scripts/install.sh" "$ROOT/empty" >/dev/null 2>&1; then fail "install from an empty build"; fi
echo "install test passed"
