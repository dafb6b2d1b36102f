#!/usr/bin/env bash
# The static executables resolve names without glibc's NSS (lib/net/name_lookup.h), so a host
# whose /etc/nsswitch.conf names modules of another glibc cannot crash them. Inside a network
# namespace of its own (loopback only), with an HTTP server and a DNS server of its own on
# 127.0.0.1, `nodegate admit --manifest-url` runs chrooted in roots that hold only the binary,
# its input, an /etc/hosts, an /etc/resolv.conf naming that DNS server, an nsswitch.conf as
# Ubuntu or a systemd-resolved host writes it, and in place of every module it names a stand-in
# that stops any process loading it (nss_trap.c). In each root:
#   - the control, a static executable calling glibc's own getaddrinfo (nss_probe.c), is stopped
#     by a stand-in: the roots are hostile as intended;
#   - nodegate reaches the server by a name from the root's /etc/hosts and by a name only DNS
#     knows (the DNS server saw that query, and no query for the /etc/hosts name), and reports
#     a name nobody knows as an error (exit 2), never crashing.
set -euo pipefail
BIN="$(cd "${NODEGATE_BIN_DIR:?set by CTest}" && pwd)"
SRC="$(cd "${NODEGATE_SOURCE_DIR:?set by CTest}" && pwd)"
HELPERS="$BIN/../tests"
if [ -z "${NG_NAME_LOOKUP_INNER:-}" ]; then
  [ "$(id -u)" -eq 0 ] || { echo "name_lookup_netns_test: needs root" >&2; exit 1; }
  exec env NG_NAME_LOOKUP_INNER=1 unshare --net bash "$0" "$@"
fi
# shellcheck source=../../scripts/lib/check.sh
source "$SRC/scripts/lib/check.sh"  # ok, fail, expect_eq, FAILED

ip link set lo up
T="$(mktemp -d /tmp/ng-name-lookup.XXXXXX)"
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$T"
}
trap cleanup EXIT

for f in "$BIN/nodegate" "$HELPERS/nss_probe" "$HELPERS/nss_trap.so"; do
  [ -e "$f" ] || { echo "missing $f (build first)" >&2; exit 1; }
done

# The manifest server: the kubelet's HTTP pod source, one pod holding host port 9000.
mkdir -p "$T/www"
cp "$SRC/tests/admit/testdata/control-plane/http-pods.yaml" "$T/www/pods"
python3 -m http.server --bind 127.0.0.1 8080 --directory "$T/www" >"$T/http.log" 2>&1 &
PIDS+=($!)

# The DNS server: A 127.0.0.1 for dns-only.example, no AAAA, NXDOMAIN for anything else; every
# question it gets goes to dns.log.
python3 - "$T/dns.log" >"$T/dns.out" 2>&1 <<'PY' &
import socket, struct, sys
log = open(sys.argv[1], "a", buffering=1)
known = {"dns-only.example": "127.0.0.1"}
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 53))
while True:
    query, peer = s.recvfrom(4096)
    qid = struct.unpack(">H", query[:2])[0]
    i, labels = 12, []
    while query[i]:
        labels.append(query[i + 1:i + 1 + query[i]].decode())
        i += 1 + query[i]
    qtype = struct.unpack(">H", query[i + 1:i + 3])[0]
    question = query[12:i + 5]
    name = ".".join(labels).lower()
    log.write("%s %d\n" % (name, qtype))
    answer, rcode = b"", 0
    if name not in known:
        rcode = 3
    elif qtype == 1:
        answer = b"\xc0\x0c" + struct.pack(">HHIH", 1, 1, 60, 4) + socket.inet_aton(known[name])
    header = struct.pack(">HHHHHH", qid, 0x8180 | rcode, 1, 1 if answer else 0, 0, 0)
    s.sendto(header + question + answer, peer)
PY
PIDS+=($!)

for _ in $(seq 100); do
  (exec 3<>/dev/tcp/127.0.0.1/8080) 2>/dev/null && break
  sleep 0.1
done

MULTIARCH="$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)"

# make_root DIR NSSWITCH_HOSTS_LINE
make_root() {
  local r=$1
  mkdir -p "$r/etc" "$r/data"
  cp "$BIN/nodegate" "$HELPERS/nss_probe" "$r/"
  cp "$SRC/tests/admit/testdata/node.yaml" "$SRC/tests/admit/testdata/candidates/wants-9000.yaml" \
    "$r/data/"
  printf '127.0.0.1\tlocalhost\n127.0.0.1\tmanifests.example\n' >"$r/etc/hosts"
  printf 'nameserver 127.0.0.1\noptions timeout:2 attempts:2\n' >"$r/etc/resolv.conf"
  printf 'passwd: files systemd\ngroup: files systemd\nhosts: %s\nnetworks: files\n' "$2" \
    >"$r/etc/nsswitch.conf"
  # Wherever a static glibc of any architecture looks for them.
  for dir in lib lib64 usr/lib usr/lib64 "lib/$MULTIARCH" "usr/lib/$MULTIARCH"; do
    mkdir -p "$r/$dir"
    for module in mdns4_minimal mdns4 mdns resolve myhostname mymachines systemd sss; do
      cp "$HELPERS/nss_trap.so" "$r/$dir/libnss_$module.so.2"
    done
  done
}

admit() {  # ROOT HOST: nodegate admit with the manifest URL on HOST; sets OUT and CODE
  set +e
  OUT="$(chroot "$1" /nodegate admit --profile kubelet --node /data/node.yaml \
    --manifest-url "http://$2:8080/pods" --manifest-url-timeout 10 /data/wants-9000.yaml 2>&1)"
  CODE=$?
  set -e
}

check_root() {  # NAME ROOT CONTROL_NAME: the control name is one the stand-ins stop glibc for
  local name=$1 r=$2 control=$3
  echo "== $name"
  set +e
  chroot "$r" /nss_probe "$control" >"$T/probe.out" 2>&1
  local probe=$?
  set -e
  [ "$probe" -ge 128 ] && ok "control: glibc's getaddrinfo of $control loads a stand-in and is stopped ($probe)" ||
    fail "control: glibc's getaddrinfo of $control was not stopped (exit $probe: $(cat "$T/probe.out"))"

  : >"$T/dns.log"
  admit "$r" manifests.example
  [ "$CODE" = 1 ] && ok "nodegate admit via manifests.example (/etc/hosts): exit 1, the pod does not fit" ||
    fail "nodegate admit via manifests.example: exit $CODE: $OUT"
  grep -q 'log-agent-worker-1' <<<"$OUT" && ok "the served pod is on the node" ||
    fail "the served pod is not in the report: $OUT"
  grep -q 'manifests.example' "$T/dns.log" && fail "manifests.example was asked of DNS" ||
    ok "/etc/hosts answered: no DNS query for manifests.example"

  admit "$r" dns-only.example
  [ "$CODE" = 1 ] && ok "nodegate admit via dns-only.example (DNS): exit 1, the pod does not fit" ||
    fail "nodegate admit via dns-only.example: exit $CODE: $OUT"
  grep -q 'log-agent-worker-1' <<<"$OUT" && ok "the served pod is on the node" ||
    fail "the served pod is not in the report: $OUT"
  grep -q '^dns-only.example 1$' "$T/dns.log" && ok "the DNS server was asked for dns-only.example" ||
    fail "no A query for dns-only.example: $(cat "$T/dns.log")"

  admit "$r" nowhere.example
  # 3: what it needs could not be reached (the one exit status of every command).
  [ "$CODE" = 3 ] && ok "nodegate admit via nowhere.example: exit 3" ||
    fail "nodegate admit via nowhere.example: exit $CODE: $OUT"
  grep -q 'cannot resolve nowhere.example' <<<"$OUT" && ok "the unknown name is reported: $(grep -o 'cannot resolve[^(]*' <<<"$OUT" | head -1)" ||
    fail "no resolution error: $OUT"
}

# Ubuntu's default: files first, so glibc loads a module only for names not in /etc/hosts.
make_root "$T/ubuntu" "files mdns4_minimal [NOTFOUND=return] dns myhostname"
check_root "an Ubuntu nsswitch.conf" "$T/ubuntu" dns-only.example
# systemd-resolved's: modules before files, so glibc loads one for every name.
make_root "$T/resolved" "mymachines resolve [!UNAVAIL=return] files myhostname dns"
check_root "a systemd-resolved nsswitch.conf" "$T/resolved" manifests.example

if [ "$FAILED" -ne 0 ]; then
  echo "name_lookup_netns_test: FAILED" >&2
  exit 1
fi
echo "name_lookup_netns_test passed"
