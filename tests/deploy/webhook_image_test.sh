#!/usr/bin/env bash
# The webhook's image (scripts/webhook-image.sh, make image) run by podman as
# deploy/webhook/deployment.yaml runs it. podman's images, containers and configuration all
# live in a temporary folder (private storage), removed on exit.
#   1. the image: built under the name deployment.yaml uses when no tag is given, one layer
#      (FROM scratch), its platform, user 65532, entrypoint nodegate, the same ID when rebuilt;
#   2. the executable in it: static, of the image's architecture, stripped;
#   3. `nodegate webhook --help` in it exits 0, with the Deployment's security settings;
#   4. the Deployment's container: its args (those this binary has), the downward-API env, the
#      TLS pair mounted read-only where the Secret goes, a read-only root, no capabilities, as
#      user 65532 in a network namespace of its own, with a kubeconfig whose API server does
#      not answer: /healthz answers 200 and /readyz 503 (never synced), from inside that
#      namespace; SIGTERM stops it with status 0 within the grace period.
# In a cross build (NODEGATE_ARCH) the image is that architecture's and all of the above runs
# in a user namespace whose own binfmt_misc runs it under qemu-user (with_arch_binfmt,
# scripts/lib/arch.sh), as tests/deploy/image_test.sh does.
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
PY=/usr/bin/python3  # Debian's, with python3-yaml

if [ "$(id -u)" -ne 0 ]; then
  echo "webhook image test: needs root (runs podman)" >&2
  exit 1
fi
START=$SECONDS
T="$(mktemp -d /tmp/ng-webhook-image-test.XXXXXX)"
P() { podman_store "$T" "${RUNTIME_FLAGS[@]}" "$@"; }
cleanup() {
  set +e
  podman_store_remove "$T" "${RUNTIME_FLAGS[@]}"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

podman_store_init "$T"
build() {
  CONTAINERS_CONF="$T/containers.conf" CONTAINERS_STORAGE_CONF="$T/storage.conf" \
    bash "$SRC/scripts/webhook-image.sh" "$BIN" "" "$ARCH" 2>&1
}

# What deployment.yaml says of the container, one "key value" line each.
"$PY" - "$SRC/deploy/webhook/deployment.yaml" >"$T/deploy.txt" <<'PYEOF'
import sys, yaml
[d] = [o for o in yaml.safe_load_all(open(sys.argv[1])) if o and o["kind"] == "Deployment"]
spec = d["spec"]["template"]["spec"]
[c] = spec["containers"]
print("image", c["image"])
print("user", spec["securityContext"]["runAsUser"])
print("grace", spec["terminationGracePeriodSeconds"])
print("mount", c["volumeMounts"][0]["mountPath"])
sc = c["securityContext"]
opts = []
if sc.get("readOnlyRootFilesystem"):
    opts += ["--read-only", "--read-only-tmpfs=false"]
if "ALL" in sc.get("capabilities", {}).get("drop", []):
    opts.append("--cap-drop=all")
if sc.get("allowPrivilegeEscalation") is False:
    opts.append("--security-opt=no-new-privileges")
print("opts", " ".join(opts))
for a in c["args"]:
    print("arg", a)
for p in c["ports"]:
    print("port", p["name"], p["containerPort"])
for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
    g = c[probe]["httpGet"]
    print("probe", probe, g["scheme"].lower(), g["port"], g["path"])
PYEOF
field() { sed -n "s/^$1 //p" "$T/deploy.txt"; }
VERSION="$(project_version "$SRC")"
TAG="$(field image)"
expect_eq "localhost/nodegate:$VERSION" "$TAG" "deployment.yaml names localhost/nodegate:<CMakeLists.txt's version>"

echo "== 1. the image"
out="$(build)" || { fail "scripts/webhook-image.sh: $out"; exit 1; }
case "$out" in "built $TAG "*) ok "scripts/webhook-image.sh without a tag: $out" ;; *) fail "scripts/webhook-image.sh said: $out" ;; esac
ID1="$(P image inspect --format '{{.Id}}' "$TAG")" || { fail "no image $TAG"; exit 1; }
expect_eq 1 "$(P image inspect --format '{{len .RootFS.Layers}}' "$TAG")" "one layer (FROM scratch)"
expect_eq "linux/$(arch_oci "$ARCH")" "$(P image inspect --format '{{.Os}}/{{.Architecture}}' "$TAG")" \
  "the image's platform"
expect_eq "$(field user):$(field user)" "$(P image inspect --format '{{.Config.User}}' "$TAG")" \
  "the image's user is the Deployment's runAsUser"
expect_eq "[/usr/bin/nodegate]" "$(P image inspect --format '{{.Config.Entrypoint}}' "$TAG")" "entrypoint"
expect_eq "$VERSION" "$(P image inspect --format '{{index .Labels "org.opencontainers.image.version"}}' "$TAG")" \
  "version label"
build >/dev/null || fail "second build"
expect_eq "$ID1" "$(P image inspect --format '{{.Id}}' "$TAG")" "rebuilt from the same inputs: same image ID"
expect_eq 1 "$(P images -q | wc -l)" "one image in the store (no intermediate images)"

echo "== 2. the executable in it"
cid="$(P create "$TAG")"
P cp "$cid:/usr/bin/nodegate" "$T/nodegate"
P rm "$cid" >/dev/null
headers="$(readelf -lhdW "$T/nodegate" 2>&1)"
case "$headers" in *INTERP* | *NEEDED*) fail "the image's nodegate is dynamically linked" ;; *) ok "static" ;; esac
case "$headers" in *"Machine:"*"$(arch_elf_machine "$ARCH")"*) ok "an executable of $ARCH" ;; *) fail "not of $ARCH" ;; esac
readelf -SW "$T/nodegate" | grep -q '\.debug_info' && fail "not stripped" || ok "stripped"
[ "$(stat -c %s "$T/nodegate")" -lt "$(stat -c %s "$BIN/nodegate")" ] && ok "smaller than the build's" ||
  fail "no smaller than the build's"

echo "== 3. nodegate webhook --help"
read -r -a OPTS <<<"$(field opts)"
[ "${#OPTS[@]}" -gt 0 ] && ok "the Deployment's container options: ${OPTS[*]}" || fail "no security settings read"
if help="$(P run --rm --network none "${OPTS[@]}" "$TAG" webhook --help 2>&1)"; then
  ok "nodegate webhook --help exits 0 in the image"
else
  fail "nodegate webhook --help: $help"
fi
grep -q -- "--tls-cert" <<<"$help" && ok "it lists --tls-cert" || fail "no --tls-cert in: $help"

echo "== 4. the Deployment's container"
mount="$(field mount)"
mkdir -p "$T/tls"
(cd "$T/tls" && EXTRA_SANS="IP:127.0.0.1" bash "$SRC/deploy/webhook/make-cert.sh" . >/dev/null 2>&1)
chmod 0644 "$T/tls/tls.key"  # as a Secret volume's files are (mode 0644 by default)
printf '%s\n' '{"apiVersion": "v1", "kind": "Config", "current-context": "c",' \
  '"contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],' \
  '"clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1", "certificate-authority": "/etc/kube/ca.crt"}}],' \
  '"users": [{"name": "u", "user": {"token": "t"}}]}' >"$T/kubeconfig"
mkdir -p "$T/kube" && cp "$T/kubeconfig" "$T/kube/config" && cp "$T/tls/ca.crt" "$T/kube/ca.crt"
ARGS=()
left_out=()
while read -r arg; do
  flag="${arg%%=*}"
  if [ "$flag" = webhook ] || grep -q -- "^ *\(-[a-z],\)\?$flag " <<<"$help"; then
    ARGS+=("$arg")
  else
    left_out+=("$flag")
  fi
done < <(field arg)
[ "${#left_out[@]}" -eq 0 ] || echo "  (flags this binary does not have yet, left out: ${left_out[*]})"
expect_eq webhook "${ARGS[0]}" "the first arg is the subcommand"
P run -d --name webhook --network none "${OPTS[@]}" \
  -e POD_NAMESPACE=nodegate -e POD_NAME=nodegate-webhook-5c9d7b8f4-x2x7q \
  -v "$T/tls:$mount:ro" -v "$T/kube:/etc/kube:ro" \
  "$TAG" "${ARGS[@]}" --kubeconfig=/etc/kube/config >/dev/null ||
  { fail "podman run"; P logs webhook >&2; exit 1; }
pid="$(P inspect -f '{{.State.Pid}}' webhook)"
# probe NAME: the HTTP status the kubelet's probe NAME gets, from inside the container's
# network namespace.
probe() {
  local scheme port path
  read -r scheme port path < <(sed -n "s/^probe $1 //p" "$T/deploy.txt")
  port="$(sed -n "s/^port $port //p" "$T/deploy.txt")"
  nsenter -t "$pid" -n curl -sk -o /dev/null -w '%{http_code}' --max-time 5 \
    "$scheme://127.0.0.1:$port$path" 2>/dev/null || true
}
for _ in $(seq 100); do
  [ "$(probe startupProbe)" = 200 ] && break
  [ "$(P inspect -f '{{.State.Status}}' webhook)" = running ] || break
  sleep 0.2
done
expect_eq 200 "$(probe startupProbe)" "startup probe"
expect_eq 200 "$(probe livenessProbe)" "liveness probe"
expect_eq 503 "$(probe readinessProbe)" "readiness probe: 503, the API server never answered"
expect_eq "$(field user)" "$(awk '/^Uid:/ {print $2}' "/proc/$pid/status")" "runs as the Deployment's user"
grace="$(field grace)"
t0=$(date +%s%N)
P stop -t "$grace" webhook >/dev/null
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
expect_eq 0 "$(P inspect -f '{{.State.ExitCode}}' webhook)" "exit status after SIGTERM"
[ "$ms" -lt $((grace * 1000)) ] && ok "stopped in $ms ms, within the ${grace}s grace period" ||
  fail "took $ms ms to stop (the grace period is ${grace}s)"
[ "$FAILED" -eq 0 ] || P logs webhook 2>&1 | tail -20 >&2

echo "  ($((SECONDS - START)) s)"
if [ "$FAILED" -ne 0 ]; then
  echo "webhook image test: FAILED" >&2
  exit 1
fi
echo "webhook image test passed"
