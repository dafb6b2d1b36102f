#!/usr/bin/env bash
# make image (scripts/image.sh) and the installer it carries (deploy/install-cni.sh), run by
# podman as deploy/daemonset.yaml runs it, with a temporary folder as the node's /opt/cni/bin
# and /etc/cni/net.d. podman's images, containers and configuration all live in a temporary
# folder (private storage), removed on exit with everything else.
#   1. the image: the tag deploy/daemonset.yaml names, one layer (FROM scratch), same ID when
#      rebuilt from the same inputs;
#   2. the DaemonSet parses and has the shape a node-level CNI installer needs;
#   3. the init container, with the YAML's environment and security settings: the plugins
#      arrive byte-identical and executable, no configuration unless asked, nothing left over;
#   4. replacement is a rename: a plugin held open keeps its old content, one being executed
#      keeps running, an identical one is left alone;
#   5. a configuration is installed only when named, before it the plugins; an existing one is
#      kept unless CNI_CONF_OVERWRITE=true; a bad name or a missing mount fails;
#   6. SLEEP=true and the main container's `sleep` keep running and stop at once on SIGTERM.
# In a cross build (NODEGATE_ARCH, e.g. arm64) the image is that architecture's (linux/arm64,
# its busybox-static and plugins), and all of the above runs in a user namespace whose own
# binfmt_misc runs its executables under qemu-user (with_arch_binfmt, scripts/lib/arch.sh):
# the installer, its busybox applets and the installed plugins are arm64 code run as the
# DaemonSet would run them on an arm64 node. podman there gives runc --rootless (the namespace
# may not write the machine's cgroups).
set -euo pipefail
BIN="$(cd "${NODEGATE_BIN_DIR:-build/bin}" && pwd)"
SRC="$(cd "${NODEGATE_SOURCE_DIR:-.}" && pwd)"
# shellcheck source=../../scripts/lib/check.sh
source "$SRC/scripts/lib/check.sh"  # ok, fail, expect_eq, FAILED
# shellcheck source=../../scripts/lib/build_outputs.sh
source "$SRC/scripts/lib/build_outputs.sh"  # project_version
# shellcheck source=../../scripts/lib/arch.sh
source "$SRC/scripts/lib/arch.sh"  # HOST_ARCH, arch_test_reexec
# shellcheck source=../../scripts/lib/podman_store.sh
source "$SRC/scripts/lib/podman_store.sh"  # podman_store_init, podman_store, podman_store_remove
ARCH="${NODEGATE_ARCH:-$HOST_ARCH}"
arch_test_reexec "$ARCH" "$0" "$@"
RUNTIME_FLAGS=()
[ "$ARCH" = "$HOST_ARCH" ] || RUNTIME_FLAGS=(--runtime-flag rootless=true)
PY=/usr/bin/python3  # Debian's, with python3-yaml (a python3 earlier in PATH may lack it)

if [ "$(id -u)" -ne 0 ]; then
  echo "image test: needs root (runs podman)" >&2
  exit 1
fi
START=$SECONDS
T="$(mktemp -d /tmp/ng-image-test.XXXXXX)"
HOLD_PID=""
P() { podman_store "$T" "${RUNTIME_FLAGS[@]}" "$@"; }
cleanup() {
  set +e
  [ -n "$HOLD_PID" ] && kill "$HOLD_PID" 2>/dev/null
  exec 3<&- 2>/dev/null
  podman_store_remove "$T" "${RUNTIME_FLAGS[@]}"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

podman_store_init "$T"

VERSION="$(project_version "$SRC")"
TAG="localhost/nodegate-cni:$VERSION"
PLUGINS="bridge host-local cluster-ipam portmap bandwidth"

echo "== 1. the image"
out="$(CONTAINERS_CONF="$T/containers.conf" CONTAINERS_STORAGE_CONF="$T/storage.conf" \
  bash "$SRC/scripts/image.sh" "$BIN" "$TAG" "$ARCH" 2>&1)" || { fail "scripts/image.sh: $out"; exit 1; }
case "$out" in "built $TAG "*) ok "scripts/image.sh: $out" ;; *) fail "scripts/image.sh said: $out" ;; esac
ID1="$(P image inspect --format '{{.Id}}' "$TAG")" || { fail "no image $TAG"; exit 1; }
expect_eq "$VERSION" "$(P image inspect --format '{{index .Labels "org.opencontainers.image.version"}}' "$TAG")" \
  "version label"
expect_eq 1 "$(P image inspect --format '{{len .RootFS.Layers}}' "$TAG")" "one layer (FROM scratch)"
expect_eq "linux/$(arch_oci "$ARCH")" "$(P image inspect --format '{{.Os}}/{{.Architecture}}' "$TAG")" \
  "the image's platform"
expect_eq 1 "$(P images -q | wc -l)" "one image in the store (no intermediate images)"
CONTAINERS_CONF="$T/containers.conf" CONTAINERS_STORAGE_CONF="$T/storage.conf" \
  bash "$SRC/scripts/image.sh" "$BIN" "$TAG" "$ARCH" >/dev/null 2>&1 || fail "second build"
expect_eq "$ID1" "$(P image inspect --format '{{.Id}}' "$TAG")" "rebuilt from the same inputs: same image ID"

echo "== 2. deploy/daemonset.yaml"
"$PY" - "$SRC/deploy/daemonset.yaml" "$TAG" >"$T/ds.txt" 2>&1 <<'PYEOF' || true
import sys, yaml
path, tag = sys.argv[1], sys.argv[2]
docs = [d for d in yaml.safe_load_all(open(path)) if d is not None]
def check(cond, what):
    print(("ok " if cond else "fail ") + what)
check(len(docs) == 1, "one document")
ds = docs[0]
check(ds.get("apiVersion") == "apps/v1" and ds.get("kind") == "DaemonSet", "apps/v1 DaemonSet")
check(ds["metadata"].get("namespace") == "kube-system", "namespace kube-system")
tmpl = ds["spec"]["template"]
sel = ds["spec"]["selector"]["matchLabels"]
check(all(tmpl["metadata"]["labels"].get(k) == v for k, v in sel.items()), "selector matches the pod labels")
spec = tmpl["spec"]
check(spec.get("hostNetwork") is True, "hostNetwork")
check(spec.get("priorityClassName") == "system-node-critical", "priorityClassName system-node-critical")
check({"operator": "Exists"} in spec.get("tolerations", []), "tolerates every taint (operator Exists, no key)")
init, main = spec.get("initContainers", []), spec.get("containers", [])
check(len(init) == 1 and [c["name"] for c in main] == ["wait", "cluster-ipam-agent"],
      "one init container; main containers wait and cluster-ipam-agent")
check(all(c.get("image") == tag for c in init + main), "all run " + tag)
vols = {v["name"]: v.get("hostPath", {}).get("path") for v in spec.get("volumes", [])}
mounts = {m["mountPath"]: vols.get(m["name"]) for m in init[0].get("volumeMounts", [])}
check(mounts == {"/host/opt/cni/bin": "/opt/cni/bin", "/host/etc/cni/net.d": "/etc/cni/net.d"},
      "init container mounts host /opt/cni/bin and /etc/cni/net.d at the installer's defaults")
check(not init[0].get("args") and not init[0].get("command"), "init container runs the entrypoint")
check(main[0].get("args") == ["sleep"] and not main[0].get("volumeMounts"), "main container only waits")
agent = main[1] if len(main) > 1 else {}
check(agent.get("command", [])[:2] == ["/opt/nodegate/bin/cluster-ipam", "agent"] and
      agent.get("command", [])[2:] == ["--socket", "/run/nodegate/cluster-ipam.sock"],
      "cluster-ipam-agent runs the image's cluster-ipam in agent mode on the default socket")
agent_mounts = {m["mountPath"]: (vols.get(m["name"]), bool(m.get("readOnly")))
                for m in agent.get("volumeMounts", [])}
check(agent_mounts == {"/run/nodegate": ("/run/nodegate", False),
                       "/etc/nodegate/etcd": ("/etc/nodegate/etcd", True)},
      "cluster-ipam-agent mounts host /run/nodegate and /etc/nodegate/etcd (read-only) at their paths")
for c in init + main:
    sc = c.get("securityContext", {})
    print("podman %s %s" % (c["name"], " ".join(
        (["--read-only", "--read-only-tmpfs=false"] if sc.get("readOnlyRootFilesystem") else []) +
        (["--cap-drop=all"] if "ALL" in sc.get("capabilities", {}).get("drop", []) else []) +
        (["--security-opt=no-new-privileges"] if sc.get("allowPrivilegeEscalation") is False else []))))
for e in init[0].get("env", []):
    print("env %s=%s" % (e["name"], e.get("value", "")))
PYEOF
while read -r kind rest; do
  case "$kind" in
    ok) ok "$rest" ;;
    fail) fail "$rest" ;;
    podman | env) ;;
    *) fail "daemonset.yaml: $kind $rest" ;;
  esac
done <"$T/ds.txt"
read -r -a INIT_OPTS <<<"$(sed -n 's/^podman install-cni //p' "$T/ds.txt")"
read -r -a MAIN_OPTS <<<"$(sed -n 's/^podman wait //p' "$T/ds.txt")"
INIT_ENV=()
while read -r e; do INIT_ENV+=(-e "$e"); done < <(sed -n 's/^env //p' "$T/ds.txt")
[ "${#INIT_OPTS[@]}" -gt 0 ] && ok "init container options: ${INIT_OPTS[*]}" ||
  fail "no security settings read for the init container"

HB="$T/host/opt/cni/bin"
HC="$T/host/etc/cni/net.d"
mkdir -p "$HB" "$HC"
# install [ENV=VALUE...]: the init container as the DaemonSet runs it, then these variables.
install() {
  local env=("${INIT_ENV[@]}")
  for e in "$@"; do env+=(-e "$e"); done
  P run --rm --network none "${INIT_OPTS[@]}" "${env[@]}" \
    -v "$HB:/host/opt/cni/bin" -v "$HC:/host/etc/cni/net.d" "$TAG"
}

echo "== 3. first install"
if out="$(install 2>&1)"; then ok "init container exits 0"; else fail "init container: $out"; fi
for p in $PLUGINS; do
  grep -qx "nodegate-cni: installed /host/opt/cni/bin/$p" <<<"$out" || fail "no 'installed' line for $p: $out"
  cmp -s "$BIN/$p" "$HB/$p" && [ -x "$HB/$p" ] && ok "$p byte-identical and executable" ||
    fail "$p missing, different or not executable"
  expect_eq 755 "$(stat -c %a "$HB/$p")" "$p mode"
done
grep -q "no network configuration installed" <<<"$out" && ok "says no configuration was installed" ||
  fail "no word about the configuration: $out"
expect_eq 0 "$(find "$HC" -mindepth 1 | wc -l)" "no configuration without CNI_CONF_NAME"
expect_eq 5 "$(find "$HB" -mindepth 1 | wc -l)" "exactly the five plugins, no temporary file left"
out="$(CNI_COMMAND=VERSION "$HB/portmap" </dev/null 2>&1)" || true
case "$out" in *supportedVersions*) ok "the installed portmap answers VERSION on the host" ;; *) fail "VERSION: $out" ;; esac

echo "== 4. replacement by rename"
printf '#!/bin/sh\necho old portmap\n' >"$HB/portmap"
chmod 755 "$HB/portmap"
cp "$HB/portmap" "$T/old-portmap"
exec 3<"$HB/portmap"
portmap_inode="$(stat -c %i "$HB/portmap")"
cp /bin/sleep "$HB/bandwidth"
"$HB/bandwidth" 60 &
HOLD_PID=$!
host_local_inode="$(stat -c %i "$HB/host-local")"
out="$(install 2>&1)" || fail "install over old plugins: $out"
[ "$(stat -c %i "$HB/portmap")" != "$portmap_inode" ] && ok "portmap replaced by a new inode" ||
  fail "portmap rewritten in place"
cmp -s "$BIN/portmap" "$HB/portmap" && ok "new portmap content" || fail "portmap content after replacement"
cmp -s "/proc/$$/fd/3" "$T/old-portmap" && ok "the open old portmap still reads its old content" ||
  fail "the open old portmap changed under its reader"
exec 3<&-
kill -0 "$HOLD_PID" 2>/dev/null && ok "the executing old bandwidth keeps running" ||
  fail "the executing bandwidth was disturbed"
cmp -s "$BIN/bandwidth" "$HB/bandwidth" && ok "bandwidth replaced while executing" ||
  fail "bandwidth not replaced (text file busy?): $out"
kill "$HOLD_PID" 2>/dev/null
wait "$HOLD_PID" 2>/dev/null || true
HOLD_PID=""
expect_eq "$host_local_inode" "$(stat -c %i "$HB/host-local")" "identical host-local left alone"
grep -qx "nodegate-cni: unchanged /host/opt/cni/bin/host-local" <<<"$out" && ok "says host-local is unchanged" ||
  fail "no 'unchanged' line: $out"
expect_eq 5 "$(find "$HB" -mindepth 1 | wc -l)" "no temporary file left"
printf '#!/bin/sh\necho the node bridge\n' >"$HB/bridge"
chmod 755 "$HB/bridge"
cp "$HB/bridge" "$T/node-bridge"
out="$(install KEEP_BRIDGE=true 2>&1)" || fail "install with KEEP_BRIDGE=true: $out"
cmp -s "$T/node-bridge" "$HB/bridge" && ok "KEEP_BRIDGE=true leaves the node's bridge" ||
  fail "KEEP_BRIDGE=true replaced the node's bridge"
grep -qx "nodegate-cni: kept /host/opt/cni/bin/bridge (KEEP_BRIDGE=true)" <<<"$out" &&
  ok "says it kept the bridge" || fail "no 'kept' line for bridge: $out"
out="$(install 2>&1)" || fail "install after KEEP_BRIDGE: $out"
cmp -s "$BIN/bridge" "$HB/bridge" && ok "without KEEP_BRIDGE our bridge replaces it" ||
  fail "our bridge not installed over the node's: $out"

echo "== 5. configuration"
rm -f "$HB/portmap"
out="$(install CNI_CONF_NAME=10-standard.conflist 2>&1)" || fail "install with CNI_CONF_NAME: $out"
cmp -s "$SRC/conf/examples/10-standard.conflist" "$HC/10-standard.conflist" &&
  ok "10-standard.conflist installed as in conf/examples" || fail "configuration not installed: $out"
expect_eq 644 "$(stat -c %a "$HC/10-standard.conflist" 2>/dev/null)" "configuration mode"
plugin_line="$(grep -n 'installed /host/opt/cni/bin/portmap' <<<"$out" | cut -d: -f1 || true)"
conf_line="$(grep -n 'installed /host/etc/cni/net.d/' <<<"$out" | cut -d: -f1 || true)"
if [ -z "$plugin_line" ] || [ -z "$conf_line" ]; then
  fail "install lines missing: $out"
elif [ "$plugin_line" -lt "$conf_line" ]; then
  ok "plugins before the configuration"
else
  fail "configuration before the plugins: $out"
fi
echo '{"operator":"mine"}' >"$HC/30-nftables.conflist"
out="$(install CNI_CONF_NAME=30-nftables.conflist 2>&1)" || fail "install over an existing configuration: $out"
grep -q operator "$HC/30-nftables.conflist" && ok "existing configuration kept" ||
  fail "existing configuration replaced"
grep -q "kept existing /host/etc/cni/net.d/30-nftables.conflist" <<<"$out" && ok "says it kept it" ||
  fail "no 'kept existing' line: $out"
out="$(install CNI_CONF_NAME=30-nftables.conflist CNI_CONF_OVERWRITE=true 2>&1)" || fail "overwrite: $out"
cmp -s "$SRC/conf/examples/30-nftables.conflist" "$HC/30-nftables.conflist" &&
  ok "CNI_CONF_OVERWRITE=true replaces it" || fail "CNI_CONF_OVERWRITE=true did not replace: $out"
expect_eq 2 "$(find "$HC" -mindepth 1 | wc -l)" "no temporary configuration left"
if out="$(install CNI_CONF_NAME=99-none.conflist 2>&1)"; then
  fail "an unknown CNI_CONF_NAME succeeded"
else
  grep -q "available: .*10-standard.conflist" <<<"$out" && ok "unknown CNI_CONF_NAME fails, naming the choices" ||
    fail "unknown CNI_CONF_NAME: $out"
fi
if out="$(P run --rm --network none "${INIT_OPTS[@]}" "$TAG" 2>&1)"; then
  fail "install without the host mount succeeded"
else
  grep -q "mount the host's /opt/cni/bin" <<<"$out" && ok "without the mount it fails and says why" ||
    fail "without the mount: $out"
fi

echo "== 6. waiting containers"
rm -rf "$HB" && mkdir -p "$HB"
P run -d --name sleeper --network none "${INIT_OPTS[@]}" -e SLEEP=true \
  -v "$HB:/host/opt/cni/bin" "$TAG" >/dev/null
P run -d --name waiter --network none "${MAIN_OPTS[@]}" "$TAG" sleep >/dev/null
for _ in $(seq 50); do
  P logs sleeper 2>/dev/null | grep -q "waiting until stopped" && P logs waiter 2>/dev/null | grep -q waiting && break
  sleep 0.1
done
sleep 1
for c in sleeper waiter; do
  expect_eq running "$(P inspect -f '{{.State.Status}}' "$c")" "$c still running"
done
expect_eq 5 "$(find "$HB" -mindepth 1 | wc -l)" "SLEEP=true installed before waiting"
P logs waiter 2>&1 | grep -q "nodegate-cni: installed" && fail "the main container installed something" ||
  ok "the main container installs nothing"
for c in sleeper waiter; do
  t0=$(date +%s%N)
  P stop -t 10 "$c" >/dev/null
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  [ "$ms" -lt 5000 ] && ok "$c stops on SIGTERM in $ms ms" || fail "$c took $ms ms to stop (SIGTERM ignored)"
  expect_eq 0 "$(P inspect -f '{{.State.ExitCode}}' "$c")" "$c exit status"
done

echo "  ($((SECONDS - START)) s)"
if [ "$FAILED" -ne 0 ]; then
  echo "image test: FAILED" >&2
  exit 1
fi
echo "image test passed"
