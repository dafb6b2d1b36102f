#!/usr/bin/env bash
# A cross build's executables run here under qemu-user (Debian's qemu-user-static, called
# directly: no binfmt_misc entry), as far as qemu's user mode lets them: it passes rtnetlink
# through but refuses the other netlink families (nf_tables, netfilter), so the kernel-facing
# verbs run in the arm64 VM instead (make test-arm64:
# tests/portability/vm_test.sh --arch arm64). Here:
#   - each plugin's about text and VERSION, as the node's runtime sees them;
#   - host-local ADD, CHECK, DEL, DEL again and STATUS on a data directory of the test's own
#     (host-local touches no kernel object), its reservation files as the amd64 build writes
#     them, and a bad config refused with a CNI error and nothing left behind;
#   - nodegate's usage, and `nodegate admit` on the project's seed scenario.
# CTest passes NODEGATE_EMULATOR and NODEGATE_ARCH in a cross build (cmake/NodegateHelpers.cmake).
set -euo pipefail
BIN="${NODEGATE_BIN_DIR:?set by CTest}"
SRC="${NODEGATE_SOURCE_DIR:?set by CTest}"
EMU="${NODEGATE_EMULATOR:?a cross build sets it (cmake/toolchains/debian-cross.cmake)}"
# shellcheck source=../../scripts/lib/check.sh
source "$SRC/scripts/lib/check.sh"  # ok, fail, expect_eq, FAILED
# shellcheck source=../../scripts/lib/build_outputs.sh
source "$SRC/scripts/lib/build_outputs.sh"  # project_version
VERSION="$(project_version "$SRC")"
T="$(mktemp -d /tmp/ng-qemu-user.XXXXXX)"
trap 'rm -rf "$T"' EXIT

# run VAR=VALUE... -- EXE [ARGS...]: EXE under qemu-user with only the given environment.
run() {
  local env=()
  while [ "$1" != -- ]; do env+=("$1"); shift; done
  shift
  env -i "${env[@]}" "$EMU" "$@"
}

echo "== the executables are of ${NODEGATE_ARCH:-the target}: $(file -b "$BIN/portmap" | cut -d, -f1-2)"
for p in portmap bandwidth host-local; do
  about="$(run -- "$BIN/$p" </dev/null 2>&1 >/dev/null)" || fail "$p about text exits non-zero"
  expect_eq "CNI $p plugin v$VERSION" "$(head -1 <<<"$about")" "$p about text"
  versions="$(run CNI_COMMAND=VERSION -- "$BIN/$p" </dev/null)" || fail "$p VERSION exits non-zero"
  jq -e '.supportedVersions | index("0.3.1") and index("0.4.0") and index("1.0.0") and index("1.1.0")' \
    <<<"$versions" >/dev/null 2>&1 && ok "$p VERSION: $(jq -c .supportedVersions <<<"$versions")" ||
    fail "$p VERSION: $versions"
done

echo "== host-local"
DATA="$T/data"
CONF='{"cniVersion":"1.1.0","name":"qnet","type":"host-local",
  "ipam":{"type":"host-local","dataDir":"'"$DATA"'",
    "ranges":[[{"subnet":"10.77.0.0/29"}],[{"subnet":"2001:db8:77::/125"}]],
    "routes":[{"dst":"0.0.0.0/0"}]}}'
hl() {  # hl VERB ID [CONF]: host-local VERB for container ID; stdout in $out, exit in $rc
  rc=0
  out="$(printf '%s' "${3:-$CONF}" | run CNI_COMMAND="$1" CNI_CONTAINERID="$2" \
    CNI_NETNS=/var/run/netns/none CNI_IFNAME=eth0 CNI_PATH="$BIN" -- "$BIN/host-local" \
    2>"$T/stderr")" || rc=$?
}
hl ADD ctr1
expect_eq 0 "$rc" "ADD exits 0 ($(cat "$T/stderr"))"
added="$out"
expect_eq "10.77.0.2/29 2001:db8:77::2/125" "$(jq -r '[.ips[].address] | join(" ")' <<<"$out" 2>&1)" \
  "ADD: the first address of each range"
expect_eq "$(printf 'ctr1\r\neth0')" "$(cat "$DATA/qnet/10.77.0.2" 2>&1)" \
  "the reservation file as the reference writes it"
hl ADD ctr2
expect_eq "10.77.0.3/29" "$(jq -r '.ips[0].address' <<<"$out" 2>&1)" "a second ADD takes the next address"
hl CHECK ctr1 "$(jq -c --argjson prev "$added" '. + {prevResult: $prev}' <<<"$CONF")"
expect_eq 0 "$rc" "CHECK of ctr1 exits 0 ($(cat "$T/stderr"))"
hl DEL ctr1
expect_eq 0 "$rc" "DEL exits 0"
[ ! -e "$DATA/qnet/10.77.0.2" ] && ok "DEL released 10.77.0.2" || fail "10.77.0.2 still reserved"
hl DEL ctr1
expect_eq 0 "$rc" "DEL again (idempotent)"
hl DEL ctr2
left="$(cd "$DATA/qnet" && ls | grep -v -e '^lock$' -e '^last_reserved_ip' -e '^\.nodegate$' || true)"
expect_eq "" "$left" "nothing reserved after every DEL"
rc=0
out="$(printf '%s' "$CONF" | run CNI_COMMAND=STATUS -- "$BIN/host-local" 2>"$T/stderr")" || rc=$?
expect_eq 0 "$rc" "STATUS exits 0 ($(cat "$T/stderr"))"
BAD='{"cniVersion":"1.1.0","name":"qbad","type":"host-local",
  "ipam":{"type":"host-local","dataDir":"'"$DATA"'","ranges":[[{"subnet":"10.78.0.0/33"}]]}}'
hl ADD ctr3 "$BAD"
[ "$rc" -ne 0 ] && ok "a bad subnet fails ADD (exit $rc)" || fail "a bad subnet was accepted"
jq -e '.code and .msg' <<<"$out" >/dev/null 2>&1 && ok "with a CNI error on stdout: $(jq -c . <<<"$out")" ||
  fail "no CNI error on stdout: $out"
[ ! -e "$DATA/qbad" ] || [ -z "$(ls "$DATA/qbad")" ] && ok "and nothing left behind" ||
  fail "the refused ADD left $(ls "$DATA/qbad")"

echo "== nodegate"
usage="$(run -- "$BIN/nodegate" --help 2>&1)" || fail "nodegate --help exits non-zero"
grep -q "usage: nodegate" <<<"$usage" && ok "nodegate --help" || fail "nodegate --help: $usage"
rc=0
out="$(run -- "$BIN/nodegate" admit -o json --node "$SRC/tests/admit/testdata/node.yaml" \
  --manifests "$SRC/conf/manifests" "$SRC/conf/candidates/coredns-hostnetwork.yaml" 2>"$T/stderr")" || rc=$?
expect_eq 1 "$rc" "admit refuses the DNS pod (exit 1)"
expect_eq NodePorts "$(jq -r '.pods[0].failures[0].plugin' <<<"$out" 2>&1)" "refused by NodePorts"

if [ "$FAILED" -ne 0 ]; then
  echo "qemu-user test: FAILED" >&2
  exit 1
fi
echo "qemu-user test passed"
