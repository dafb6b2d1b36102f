#!/usr/bin/env bash
# End-to-end through the runtime a kubelet talks to: Debian's containerd 1.6 with its CRI
# plugin, started by hand inside a throwaway node namespace, driven over the CRI (gRPC) by
# tests/e2e/cri_client.py as a kubelet would drive it. The pod network is Debian's loopback
# with OUR bridge, host-local, portmap and bandwidth (conf/examples/10-standard.conflist).
# Everything (containerd's root, state, socket, runc root, pod netns files, CNI config, IPAM
# store) lives in a temp folder or namespace made here and is removed on exit, also on failure
# or Ctrl-C; containerd and its shims are stopped by PID.
#
#   E2E_PLUGINS=reference bash tests/e2e/containerd_e2e.sh   # Debian's plugins instead of ours
#   E2E_RECORD=DIR bash tests/e2e/containerd_e2e.sh          # also save containerd's
#       host-local, portmap and bandwidth calls for the first sandbox (CNI_* environment and
#       stdin) as DIR/NN-PHASE-PLUGIN-COMMAND.json, with temp paths and random IDs normalised
#       (tests/e2e/cni_record.py; tests/testdata/containerd/README.md)
#
# host-local, portmap and bandwidth are always small wrappers that save each call's CNI_*
# environment, stdin, exit status and end time under $T/calls around the plugin (its stdout
# and stderr untouched): the test prints and checks what containerd passed.
#
# Checks:
#   1. RunPodSandbox with port mappings TCP 18080->8080 and UDP 18053->53 without hostIP,
#      TCP 18081->8080 and UDP 18054->53 with hostIP 198.51.100.1, and the
#      kubernetes.io/ingress-bandwidth and egress-bandwidth annotations (10M): the sandbox is
#      READY with an address from our host-local range, its netns is under the temp folder;
#   2. what containerd passed, printed for the ADD of host-local, portmap and bandwidth
#      (CNI_ARGS, runtimeConfig): each CNI_ARGS has IgnoreUnknown, K8S_POD_NAMESPACE,
#      K8S_POD_NAME, K8S_POD_UID and K8S_POD_INFRA_CONTAINER_ID; portmap got the 4 mappings
#      (with their host IPs) in runtimeConfig.portMappings, bandwidth the rates in
#      runtimeConfig.bandwidth;
#   3. the pod's httpd is reached from a client namespace through 198.51.100.1:18080 and
#      :18081 and from the node through 127.0.0.1:18080; a UDP echo in the pod through
#      198.51.100.1:18053 and :18054 and 127.0.0.1:18053; the hostIP mappings are NOT reached
#      through 127.0.0.1 (their DNAT matches only 198.51.100.1); the rule of 18081 names it;
#   4. from containerd's libcni cache (/var/lib/cni/results): `nodegate ports --port 18080`
#      names the mapping's pod default/web and the sandbox ID, the full listing shows the
#      hostIP mappings under 198.51.100.1; `nodegate cni check` of the network passes with
#      containerd's cached result as prevResult (not with E2E_PLUGINS=reference: Debian's
#      portmap and bandwidth CHECK are broken);
#   5. iperf3 into and out of the pod runs at about 10 Mbit/s (between 3 and 15) once the
#      burst containerd asks for is used up;
#   6. StopPodSandbox and RemovePodSandbox leave no rule mentioning the ports or the sandbox,
#      no reservation, no tbf qdisc, no bwp ifb, no veth, no pod netns and no libcni cache
#      entry; every call of host-local, portmap and bandwidth so far exited 0;
#   7. 20 sandboxes created in parallel (TCP 19000+i -> 8080, bandwidth annotations on the
#      even ones): all READY, 20 distinct addresses, each host port reached from the client and
#      named by `nodegate ports` with its pod and address, 2 tbf qdiscs and a bwp ifb per
#      shaped pod; then stopped and removed in parallel, leaving nothing as in 6; every plugin
#      call exited 0. The parallel parts are timed;
#   8. every plugin (bridge, host-local, portmap, bandwidth) swapped between ours and Debian's
#      while pods run: a pod made by each is reached through its host port and from the other
#      pod, each is removed by the other implementation, and nothing is left.
set -euo pipefail

BIN="$(cd "${NODEGATE_BIN_DIR:-build/bin}" && pwd)"
SRC="$(cd "${NODEGATE_SOURCE_DIR:-.}" && pwd)"
PLUGINS_FROM="${E2E_PLUGINS:-ours}"
RECORD="${E2E_RECORD:-}"

if [ "$(id -u)" -ne 0 ]; then
  echo "e2e: needs root (creates network namespaces and runs containerd)" >&2
  exit 1
fi
[ -z "$RECORD" ] || RECORD="$(mkdir -p "$RECORD" && cd "$RECORD" && pwd)"

T="$(mktemp -d /tmp/ng-ctd.XXXXXX)"
NODE="ng-ctd-node-$$"
CLIENT="ng-ctd-cli-$$"
C="$T/containerd"             # containerd's root, state, socket, runc root, log
SOCK="$C/containerd.sock"
IMAGE="localhost/ngpause:1"
CTD_PID=""
HELPERS=()                    # PIDs of iperf3/socat servers started in the pod's netns
SANDBOX=""
# The first sandbox's port mappings, as cri_client.py's --port takes them
PORTS=(tcp:18080:8080 udp:18053:53 tcp:18081:8080@198.51.100.1 udp:18054:53@198.51.100.1)
POD_UID=7c4c5c40-0000-4000-8000-00000000e2e0
PAR_N=20                      # step 7: sandboxes created in parallel, host ports 19000 + i
PAR_JOBS=()                   # step 7: PIDs of the CRI calls (and wgets) running in parallel
CGROUP="nodegate-e2e-$$"     # the pod's cgroup parent, in every hierarchy

# shellcheck source=../../scripts/lib/node.sh
source "$SRC/scripts/lib/node.sh"  # in_node, in_client, node_* set-up, checks and removal
# shellcheck source=../../scripts/lib/check.sh
source "$SRC/scripts/lib/check.sh"  # ok, fail, expect_eq, FAILED
# shellcheck source=../../scripts/lib/containerd.sh
source "$SRC/scripts/lib/containerd.sh"  # containerd_config, _start, _pause_image, _teardown

# Debian's python, the one python3-grpcio is installed for (a python3 earlier in PATH may not
# have grpc).
PY=/usr/bin/python3
cri() { timeout 120 "$PY" "$SRC/tests/e2e/cri_client.py" "$SOCK" "$@"; }

cleanup() {
  set +e
  for pid in "${HELPERS[@]}"; do kill "$pid" 2>/dev/null; done
  # Step 7's calls still running (an interrupt, a failed check) end first (each within
  # `cri`'s timeout): a sandbox they create after the teardown's listing would be left.
  for pid in "${PAR_JOBS[@]}"; do wait "$pid" 2>/dev/null; done
  # (step 7's IDs from its files: containerd may be gone, or a RunPodSandbox not answered)
  # shellcheck disable=SC2046 # one ID per word
  containerd_teardown $SANDBOX $(cat "$T"/par/*.id 2>/dev/null)
  [ -z "$RECORD" ] || record_normalise
  node_remove  # the namespaces, every mount under $T (pod netns, rootfs), $T itself
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# $T/plugins as for podman, with host-local, portmap and bandwidth behind wrappers that save
# each call's CNI_* environment and stdin as $T/calls/NANOSECONDS.PID.PLUGIN.{env,stdin} and,
# once the plugin exited, its exit status and the time as .rc. The plugin reads the saved
# stdin and writes to the wrapper's stdout and stderr, so the runtime sees exactly what the
# plugin wrote; the wrapper exits with the plugin's status. (Not exec: the status has to be
# saved.) The PID in the name keeps the parallel calls of step 7 apart.
# Each plugin runs through the link $T/impl/PLUGIN, which step 8 points at the other
# implementation while pods run (bridge is not wrapped: its calls are not recorded).
plugin_dir() {
  if [ "$PLUGINS_FROM" = reference ]; then node_plugin_dir /usr/lib/cni; else node_plugin_dir "$BIN"; fi
  mkdir -p "$T/calls" "$T/impl"
  ln -s "$(readlink -f "$T/plugins/bridge")" "$T/impl/bridge"
  ln -sfn "$T/impl/bridge" "$T/plugins/bridge"
  for p in host-local portmap bandwidth; do
    ln -s "$(readlink -f "$T/plugins/$p")" "$T/impl/$p"
    rm "$T/plugins/$p"
    cat >"$T/plugins/$p" <<EOF
#!/bin/sh
f="$T/calls/\$(date +%s%N).\$\$.$p"
env | grep '^CNI_' >"\$f.env"
cat >"\$f.stdin"
"$T/impl/$p" <"\$f.stdin"
rc=\$?
echo "\$rc \$(date +%s%N)" >"\$f.rc"
exit \$rc
EOF
    chmod +x "$T/plugins/$p"
  done
}

# E2E_RECORD: containerd's calls for the first sandbox as golden inputs
# (tests/e2e/cni_record.py), also after a failure. Neither step 4's CHECK (nodegate's, not
# containerd's) nor step 7's sandboxes belong there.
record_normalise() {
  local id="$SANDBOX" f all=("$T"/calls/*.env)
  # RunPodSandbox failed before it returned the ID: the first call's container (the names
  # start with equally long timestamps: the glob's order is the calls')
  [ -n "$id" ] || id="$(sed -n 's/^CNI_CONTAINERID=//p' "${all[0]}" 2>/dev/null)"
  mkdir -p "$T/record"
  cp "$T"/calls/*.phase "$T/record/" 2>/dev/null
  for f in "${all[@]}"; do
    grep -qx "CNI_CONTAINERID=$id" "$f" && ! grep -qx CNI_COMMAND=CHECK "$f" &&
      cp "$f" "${f%.env}.stdin" "$T/record/"
  done
  "$PY" "$SRC/tests/e2e/cni_record.py" "$T/record" "$T" "$SANDBOX" "$RECORD"
}
record_phase() {  # record_phase NAME: the calls after this belong to the CRI call NAME
  [ -z "$RECORD" ] || echo "$1" >"$T/calls/$(date +%s%N).phase"
}
recorded() {  # recorded COMMAND: how many calls of that command the wrappers saw so far
  local envs=("$T"/calls/*.env)
  [ -e "${envs[0]}" ] || { echo 0; return; }  # no call yet
  count_lines "^CNI_COMMAND=$1\$" cat "${envs[@]}"
}

# calls QUERY [ID]: what the wrappers saved under $T/calls, in call order.
#   log ID     for the ADD of each plugin to sandbox ID: its exit status, CNI_ARGS (sorted,
#              the sandbox ID shortened) and runtimeConfig (compact JSON, keys sorted)
#   facts ID   KEY<TAB>VALUE lines for those ADDs: PLUGIN.args (CNI_ARGS sorted, ';'-joined),
#              PLUGIN.runtime (runtimeConfig's keys, ','-joined), portmap.mappings
#              (runtimeConfig.portMappings as cri_client.py's --port, sorted), bandwidth.rates
#   times NS   per plugin and command, the calls that began since NS (date +%s%N): how many,
#              median and longest duration
#   failed     one line per call that did not exit 0 or saved no status
#   count      how many calls
calls() {
  "$PY" - "$T/calls" "$@" <<'EOF'
import glob, json, os, sys
root, query, sandbox = sys.argv[1], sys.argv[2], (sys.argv[3:] or [""])[0]
calls = []
for env_file in sorted(glob.glob(os.path.join(root, "*.env"))):
    base = env_file[:-len(".env")]
    env = dict(l.rstrip("\n").split("=", 1) for l in open(env_file) if "=" in l)
    try:
        rc, end = open(base + ".rc").read().split()
    except (OSError, ValueError):
        rc, end = "none", 0  # killed, or still running
    begin = int(os.path.basename(base).split(".")[0])
    try:
        stdin = json.load(open(base + ".stdin"))
    except (OSError, ValueError):
        stdin = {}
    args = sorted(a for a in env.get("CNI_ARGS", "").split(";") if a)
    calls.append({"plugin": base.rsplit(".", 1)[1], "command": env.get("CNI_COMMAND", ""),
                  "id": env.get("CNI_CONTAINERID", ""), "rc": rc, "args": args,
                  "begin": begin, "ms": (int(end) - begin) / 1e6 if end else None,
                  "runtime": stdin.get("runtimeConfig", {}) if isinstance(stdin, dict) else {}})
adds = {}
for c in calls:
    if c["id"] == sandbox and c["command"] == "ADD":
        adds.setdefault(c["plugin"], c)


def get(d, name):  # containerd sends Go field names (HostPort), the conventions camelCase
    return d.get(name, d.get(name[0].lower() + name[1:], ""))


if query == "count":
    print(len(calls))
elif query == "failed":
    for c in calls:
        if c["rc"] != "0":
            print("%s %s %s exit %s" % (c["plugin"], c["command"], c["id"][:12], c["rc"]))
elif query == "times":  # sandbox is a start time here: the calls that began since
    by = {}
    for c in calls:
        if c["begin"] >= int(sandbox or 0) and c["ms"] is not None:
            by.setdefault((c["plugin"], c["command"]), []).append(c["ms"])
    for (plugin, command), ms in sorted(by.items()):
        ms.sort()
        print("    %s %s: %d calls, median %d ms, max %d ms" % (plugin, command, len(ms),
                                                             ms[len(ms) // 2], ms[-1]))
elif query == "log":
    for plugin in ("host-local", "portmap", "bandwidth"):
        c = adds.get(plugin)
        if not c:
            print("  %s ADD: not called" % plugin)
            continue
        print("  %s ADD (exit %s)" % (plugin, c["rc"]))
        print("    CNI_ARGS: " + " ".join(a.replace(sandbox, sandbox[:12] + "...") for a in c["args"]))
        print("    runtimeConfig: " + (json.dumps(c["runtime"], sort_keys=True, separators=(",", ":"))
                                       if c["runtime"] else "(none)"))
elif query == "facts":
    for plugin, c in adds.items():
        print("%s.args\t%s" % (plugin, ";".join(c["args"])))
        print("%s.runtime\t%s" % (plugin, ",".join(sorted(c["runtime"]))))
    pm = adds.get("portmap", {"runtime": {}})["runtime"].get("portMappings") or []
    print("portmap.mappings\t" + " ".join(sorted(
        "%s:%s:%s%s" % (str(get(m, "Protocol")).lower(), get(m, "HostPort"), get(m, "ContainerPort"),
                        "@" + get(m, "HostIP") if get(m, "HostIP") else "") for m in pm)))
    bw = adds.get("bandwidth", {"runtime": {}})["runtime"].get("bandwidth") or {}
    print("bandwidth.rates\t" + " ".join(
        "%s=%s" % (k, get(bw, k)) for k in ("IngressRate", "EgressRate") if get(bw, k) != ""))
EOF
}

# pod_listening -t|-u PORT: wait until a server in the pod's netns is bound to PORT (a failure
# when it never is).
pod_listening() {
  node_listening "$NETNS" "$1" "$2" || fail "nothing listens on $1 $2 in the pod's netns"
}

# RATE: whole Mbit/s the receiver got in the last 2 s of 5 s of iperf3 from the node to the pod,
# or with $1 = -R from the pod to the node; 0 when iperf3 failed. containerd asks for a burst of
# 2^32-1 bits, which the bandwidth plugin turns into a bucket of about 190 MB that lets the
# first seconds through at full speed: only the last 2 s show the shaped rate.
rate_mbit() {
  local pid
  nsenter --net="$NETNS" iperf3 -s -1 -J -i 0.5 -p 5201 >/dev/null 2>&1 &
  pid=$!
  HELPERS+=("$pid")
  pod_listening -t 5201
  RATE="$(in_node timeout 30 iperf3 -c "$IP" -p 5201 -t 5 -i 0.5 -J --get-server-output "$@" \
    2>/dev/null | "$PY" -c '
import json, sys
r = json.load(sys.stdin)
# the receiving side: the server, or the client with -R
side = r if r["start"]["test_start"]["reverse"] else r["server_output_json"]
last = [i["sum"] for i in side["intervals"] if i["sum"]["start"] >= 2.99]
print(round(sum(s["bytes"] for s in last) * 8 / sum(s["seconds"] for s in last) / 1e6))' \
    2>/dev/null || echo 0)"
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

echo "== setup: node namespace $NODE, client $CLIENT, plugins: $PLUGINS_FROM"
mkdir -p "$T"/{net.d,ipam} "$C"
plugin_dir
sed "s|\"type\": \"host-local\",|\"type\": \"host-local\", \"dataDir\": \"$T/ipam\",|" \
  "$SRC/conf/examples/10-standard.conflist" >"$T/net.d/10-standard.conflist"
containerd_config
node_and_client "ngk$$"
start=$SECONDS
if containerd_start; then
  ok "containerd up, CRI: $(cri version 2>&1)"
else
  fail "containerd's CRI did not come up"
  exit 1
fi
containerd_pause_image
# (the list first: `ctr | grep -q` fails under pipefail when grep stops reading early)
IMAGES="$(ctr --address "$SOCK" -n k8s.io images ls -q)"
grep -qx "$IMAGE" <<<"$IMAGES" && ok "pause image $IMAGE imported" ||
  fail "pause image $IMAGE not in containerd's k8s.io namespace: $IMAGES"

# 2. What containerd passed to our plugins for the sandbox's ADD: printed, then checked.
check_calls() {
  calls log "$SANDBOX"
  local -A F=()
  local k v p want missing
  while IFS=$'\t' read -r k v; do F[$k]="$v"; done < <(calls facts "$SANDBOX")
  for p in host-local portmap bandwidth; do
    if [ -z "${F[$p.args]+set}" ]; then
      fail "$p: no ADD for the sandbox recorded"
      continue
    fi
    missing=""
    for want in IgnoreUnknown=1 K8S_POD_NAMESPACE=default K8S_POD_NAME=web \
      "K8S_POD_UID=$POD_UID" "K8S_POD_INFRA_CONTAINER_ID=$SANDBOX"; do
      case ";${F[$p.args]};" in *";$want;"*) ;; *) missing+=" $want" ;; esac
    done
    [ -z "$missing" ] && ok "$p ADD: CNI_ARGS names the pod (namespace, name, UID, sandbox)" ||
      fail "$p ADD: CNI_ARGS lacks$missing: ${F[$p.args]}"
  done
  # libcni hands a capability only to the plugins that declare it in the list
  expect_eq portMappings "${F[portmap.runtime]-}" "portmap ADD: runtimeConfig has portMappings only"
  expect_eq "$(printf '%s\n' "${PORTS[@]}" | LC_ALL=C sort | paste -sd' ')" "${F[portmap.mappings]-}" \
    "portmap ADD: runtimeConfig.portMappings are the sandbox's, host IPs included"
  expect_eq bandwidth "${F[bandwidth.runtime]-}" "bandwidth ADD: runtimeConfig has bandwidth only"
  expect_eq "IngressRate=10000000 EgressRate=10000000" "${F[bandwidth.rates]-}" \
    "bandwidth ADD: runtimeConfig.bandwidth has the annotations' rates in bit/s"
}

# 3. The pod's httpd and a UDP echo through the host ports; the rules and qdiscs behind them.
check_traffic() {
  local got
  pod_listening -t 8080  # the pod's httpd
  expect_eq hello-containerd "$(in_client timeout 5 busybox wget -qO- http://198.51.100.1:18080/ 2>&1 || true)" \
    "TCP client -> node 198.51.100.1:18080"
  expect_eq hello-containerd "$(in_node timeout 5 busybox wget -qO- http://127.0.0.1:18080/ 2>&1 || true)" \
    "TCP node -> 127.0.0.1:18080"
  expect_eq hello-containerd "$(in_client timeout 5 busybox wget -qO- http://198.51.100.1:18081/ 2>&1 || true)" \
    "TCP client -> node 198.51.100.1:18081 (hostIP 198.51.100.1)"
  # busybox has no UDP server: a socat echo in the pod's netns answers on port 53.
  nsenter --net="$NETNS" socat UDP4-RECVFROM:53,fork PIPE &
  HELPERS+=("$!")
  pod_listening -u 53
  expect_eq ping-udp "$(echo ping-udp | in_client timeout 5 socat -T2 - UDP4:198.51.100.1:18053 2>&1 || true)" \
    "UDP client -> node 198.51.100.1:18053"
  expect_eq ping-udp "$(echo ping-udp | in_node timeout 5 socat -T2 - UDP4:127.0.0.1:18053 2>&1 || true)" \
    "UDP node -> 127.0.0.1:18053"
  expect_eq ping-udp "$(echo ping-udp | in_client timeout 5 socat -T2 - UDP4:198.51.100.1:18054 2>&1 || true)" \
    "UDP client -> node 198.51.100.1:18054 (hostIP 198.51.100.1)"
  # With a hostIP the DNAT matches that destination only: 127.0.0.1 is the node's as well, and
  # reaches the pod for 18080/18053 above, but for 18081/18054 it reaches the node itself,
  # where nothing listens.
  got="$(in_node timeout 5 busybox wget -qO- http://127.0.0.1:18081/ 2>&1 || true)"
  [ "$got" != hello-containerd ] && ok "TCP node -> 127.0.0.1:18081 not forwarded (hostIP): $got" ||
    fail "TCP node -> 127.0.0.1:18081 reached the pod although the mapping's hostIP is 198.51.100.1"
  got="$(echo ping-udp | in_node timeout 5 socat -T1 - UDP4:127.0.0.1:18054 2>&1 || true)"
  [ "$got" != ping-udp ] && ok "UDP node -> 127.0.0.1:18054 not forwarded (hostIP): ${got:-no answer}" ||
    fail "UDP node -> 127.0.0.1:18054 reached the pod although the mapping's hostIP is 198.51.100.1"
  [ "$(node_rules_matching 18080)" -gt 0 ] && [ "$(node_rules_matching 18053)" -gt 0 ] &&
    ok "rules for 18080 and 18053 present" || fail "no rules for 18080 or 18053"
  [ "$(node_rules_matching "-d 198.51.100.1/32 .*--dport 18081 -j DNAT")" -gt 0 ] &&
    ok "the DNAT rule of 18081 matches destination 198.51.100.1 only" ||
    fail "no DNAT rule for 18081 with -d 198.51.100.1/32"
  [ "$(count_lines tbf in_node tc qdisc show)" -ge 2 ] && ok "tbf qdiscs present" ||
    fail "fewer than 2 tbf qdiscs: $(in_node tc qdisc show | tr '\n' ';')"
}

# mapped_claims: from `nodegate ports -o json` on stdin, one line per mapped claim, sorted:
# HOSTIP PROTOCOL PORT CONTAINERID POD TARGET ("-" for a pod the cache does not name).
mapped_claims() {
  "$PY" -c '
import json, sys
rows = json.load(sys.stdin)["ports"]
print("\n".join(sorted("%s %s %s %s %s %s" % (r["hostIP"], r["protocol"], r["port"], m["containerID"],
                                              m["pod"] or "-", m["target"])
                       for r in rows for m in r["mapped"])))'
}

# 4. nodegate reads containerd's libcni cache. containerd 1.6 always caches in
# /var/lib/cni/results (libcni's default; not configurable), on the host, as the node shares
# the host's mount namespace. `nodegate ports --cni-cache` takes that results folder itself
# (given the root /var/lib/cni it names no pod: "pod": null); `nodegate cni --cache-dir` the
# root, as libcni.
check_nodegate() {
  local out want
  if out="$(in_node "$BIN/nodegate" ports --cni-cache /var/lib/cni/results --port 18080 -o json 2>&1)"; then
    expect_eq "0.0.0.0 TCP 18080 $SANDBOX default/web $IP:8080" "$(mapped_claims <<<"$out" 2>&1)" \
      "nodegate ports --port 18080: the mapping names pod default/web and the sandbox"
  else
    fail "nodegate ports --port 18080: $out"
  fi
  want="$(printf '%s\n' "0.0.0.0 TCP 18080" "0.0.0.0 UDP 18053" "198.51.100.1 TCP 18081" \
    "198.51.100.1 UDP 18054" | sed "s|\$| $SANDBOX default/web|" | LC_ALL=C sort)"
  if out="$(in_node "$BIN/nodegate" ports --cni-cache /var/lib/cni/results -o json 2>&1)"; then
    expect_eq "$want" "$(mapped_claims <<<"$out" 2>&1 | grep -F " $SANDBOX " | cut -d' ' -f1-5)" \
      "nodegate ports: the sandbox's 4 mappings, the hostIP ones under 198.51.100.1"
  else
    fail "nodegate ports: $out"
  fi
  # CHECK of the whole list, as containerd would run it: prevResult, CNI_ARGS and
  # portMappings/bandwidth come from containerd's cache entry nodegate-<sandbox>-eth0.
  if [ "$PLUGINS_FROM" = reference ]; then
    echo "  nodegate cni check skipped: Debian's portmap 1.1.1 CHECK looks for the IPv4 rules with"
    echo "  ip6tables too and fails, its bandwidth CHECK panics (runtime/README.md)"
    return 0
  fi
  local before
  before="$(recorded CHECK)"
  if out="$(in_node "$BIN/nodegate" cni check nodegate "$NETNS" --conf-dir "$T/net.d" \
    --cni-path "$T/plugins" --cache-dir /var/lib/cni --container-id "$SANDBOX" --ifname eth0 2>&1)"; then
    ok "nodegate cni check nodegate (containerd's cached result): $out"
  else
    fail "nodegate cni check nodegate: $out"
  fi
  # bridge runs host-local's CHECK: all three of ours were asked
  expect_eq 3 "$(($(recorded CHECK) - before))" "CHECK reached host-local, portmap and bandwidth"
}

# 5. iperf3 both ways against the 10M annotations.
check_shaping() {
  rate_mbit
  [ "$RATE" -gt 3 ] && [ "$RATE" -lt 15 ] && ok "ingress (node -> pod) $RATE Mbit/s" ||
    fail "ingress (node -> pod) $RATE Mbit/s, want 3-15"
  rate_mbit -R
  [ "$RATE" -gt 3 ] && [ "$RATE" -lt 15 ] && ok "egress (pod -> node) $RATE Mbit/s" ||
    fail "egress (pod -> node) $RATE Mbit/s, want 3-15"
  for pid in "${HELPERS[@]}"; do kill "$pid" 2>/dev/null || true; done
  HELPERS=()
}

# 6. and 7.: nothing of the sandboxes is left. $1: what the ports are called, $2: a grep
# pattern of their numbers, $3: a file of the sandbox IDs, one a line.
nothing_left() {
  local ids
  ids="$(paste -sd'|' "$3" | sed 's/|/\\|/g')"  # basic regex alternation
  expect_eq "" "$(cri list 2>&1)" "no sandbox left"
  expect_eq 0 "$(node_rules_matching "$2")" "no rule mentions $1"
  expect_eq 0 "$(node_rules_matching "${ids:-no-sandbox}")" "no rule mentions a sandbox ID"
  expect_eq 0 "$(node_reservations)" "no address reserved"
  expect_eq 0 "$(count_lines tbf in_node tc qdisc show)" "no tbf qdisc"
  expect_eq 0 "$(node_bwp_devices)" "no bwp device"
  expect_eq 0 "$(count_lines -v "ngk$$" in_node ip -o link show type veth)" "no pod veth"
  expect_eq 0 "$(count_lines " $C/state/[^ ]*netns" cat /proc/mounts)" "no pod netns mounted"
  # (no results folder: libcni never cached anything here)
  expect_eq 0 "$([ ! -d /var/lib/cni/results ] && echo 0 ||
    count_lines "${ids:-no-sandbox}" find /var/lib/cni/results -type f)" \
    "no libcni cache entry (/var/lib/cni/results) for a sandbox"
}
# no_failed_calls WHAT: every call of host-local, portmap and bandwidth so far exited 0.
no_failed_calls() {
  local failed
  failed="$(calls failed)"
  [ -z "$failed" ] && ok "all $(calls count) plugin calls $1 exited 0" ||
    fail "plugin calls that did not exit 0: $(tr '\n' ';' <<<"$failed")"
}
ms_since() { echo $((($(date +%s%N) - $1) / 1000000)); }

echo "== 1. RunPodSandbox with port mappings and bandwidth annotations"
port_args=()
for p in "${PORTS[@]}"; do port_args+=(--port "$p"); done
if SANDBOX="$(cri run --name web --uid "$POD_UID" --namespace default \
  --cgroup-parent "/$CGROUP" "${port_args[@]}" \
  --annotation kubernetes.io/ingress-bandwidth=10M --annotation kubernetes.io/egress-bandwidth=10M \
  2>"$T/run.err")"; then
  echo "  sandbox ${SANDBOX:0:12}"
  STATUS="$(cri status "$SANDBOX")"
  field() { "$PY" -c "import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])" "$STATUS" "$1"; }
  IP="$(field ip)"
  NETNS="$(field netns)"
  expect_eq SANDBOX_READY "$(field state)" "PodSandboxStatus: READY"
  case "$IP" in 10.88.*) ok "address $IP from the host-local range" ;; *) fail "address '$IP'" ;; esac
  [ -f "$T/ipam/nodegate/$IP" ] && ok "reservation file for $IP" || fail "no reservation file for $IP"
  case "$NETNS" in "$C"/*) ok "pod netns under the temp folder" ;; *) fail "pod netns at '$NETNS'" ;; esac
  echo "== 2. what containerd passed to the plugins (ADD)"
  check_calls
  echo "== 3. traffic through the host ports"
  check_traffic
  echo "== 4. nodegate ports and nodegate cni check from containerd's libcni cache"
  check_nodegate
  echo "== 5. shaping: 10M each way"
  check_shaping
else
  # containerd keeps a sandbox whose network it could not tear down (SANDBOX_UNKNOWN): still
  # stop and remove it below, as a kubelet would, and see what is left.
  fail "RunPodSandbox: $(cat "$T/run.err")"
  SANDBOX="$(cri list 2>/dev/null | head -1 || true)"
  echo "== 2. to 5. skipped: no sandbox running"
fi

echo "== 6. StopPodSandbox and RemovePodSandbox leave nothing behind"
if [ -n "$SANDBOX" ]; then
  [ -z "$RECORD" ] || echo "  before stop: $(recorded DEL) DEL calls recorded"
  record_phase stop
  cri stop "$SANDBOX" 2>"$T/stop.err" && ok "StopPodSandbox" || fail "StopPodSandbox: $(cat "$T/stop.err")"
  [ -z "$RECORD" ] || echo "  after stop: $(recorded DEL) DEL calls recorded"
  record_phase remove
  cri remove "$SANDBOX" 2>"$T/rm.err" && ok "RemovePodSandbox" || fail "RemovePodSandbox: $(cat "$T/rm.err")"
  [ -z "$RECORD" ] || echo "  after remove: $(recorded DEL) DEL calls recorded"
fi
echo "${SANDBOX:-no-sandbox}" >"$T/sandbox.ids"
nothing_left "18080, 18053, 18081 or 18054" '1808[01]\|1805[34]' "$T/sandbox.ids"
no_failed_calls "for the sandbox"
echo "  its plugin calls (step 4's CHECK included):"
calls times 0
echo "  ($((SECONDS - start)) s from containerd's start)"

echo "== 7. $PAR_N sandboxes in parallel"
# As a kubelet starting a node's pods: every RunPodSandbox at once, each sandbox with its own
# host port; the even ones shaped, so that bandwidth's ADD and DEL run concurrently too.
mkdir -p "$T/par"
PAR_JOBS=()
t0="$(date +%s%N)"
for i in $(seq 0 $((PAR_N - 1))); do
  shaped=()
  [ $((i % 2)) -ne 0 ] ||
    shaped=(--annotation kubernetes.io/ingress-bandwidth=10M --annotation kubernetes.io/egress-bandwidth=10M)
  cri run --name "p$i" --uid "$(printf '7c4c5c40-0000-4000-8000-0000000100%02d' "$i")" \
    --namespace default --cgroup-parent "/$CGROUP" --port "tcp:$((19000 + i)):8080" "${shaped[@]}" \
    >"$T/par/$i.id" 2>"$T/par/$i.err" &
  PAR_JOBS+=("$!")
done
nfailed=0
for pid in "${PAR_JOBS[@]}"; do wait "$pid" || nfailed=$((nfailed + 1)); done  # not `wait`: containerd is a job
expect_eq 0 "$nfailed" "$PAR_N RunPodSandbox in parallel ($(ms_since "$t0") ms)$(
  [ "$nfailed" -eq 0 ] || echo ": $(cat "$T"/par/*.err | sort | uniq -c | tr '\n' ';')")"
echo "  their plugin calls:"
calls times "$t0"
PAR_IDS=()
for i in $(seq 0 $((PAR_N - 1))); do PAR_IDS+=("$(cat "$T/par/$i.id")"); done
grep -h . "$T"/par/*.id >"$T/par.ids" || true
# One line per sandbox, in index order: STATE IP NETNS
PAR_STATUS="$(cri status "${PAR_IDS[@]}" 2>&1 | "$PY" -c '
import json, sys
for line in sys.stdin:
    try:
        s = json.loads(line)
        print(s["state"], s["ip"] or "-", s["netns"] or "-")
    except ValueError:
        print("ERROR", "-", "-", line.strip())' || true)"
expect_eq "$PAR_N" "$(grep -c '^SANDBOX_READY ' <<<"$PAR_STATUS" || true)" "all $PAR_N READY"
expect_eq "$PAR_N" "$(awk '$2 ~ /^10\.88\./ {print $2}' <<<"$PAR_STATUS" | sort -u | wc -l)" \
  "$PAR_N distinct addresses from the host-local range"
expect_eq "$PAR_N" "$(node_reservations)" "$PAR_N reservation files"
mapfile -t PAR_IPS < <(awk '{print $2}' <<<"$PAR_STATUS")

# Each pod's httpd listening first (a loaded node can take seconds to start them all), then
# each host port from the client, all at once, each tried for up to 5 s.
while read -r _ _ netns _; do
  [ -e "$netns" ] || continue
  node_listening "$netns" -t 8080 || fail "nothing listens on 8080 in the pod netns $netns"
done <<<"$PAR_STATUS"
PAR_JOBS=()
t0="$(date +%s%N)"
for i in $(seq 0 $((PAR_N - 1))); do
  {
    for _ in $(seq 25); do
      page="$(in_client timeout 2 busybox wget -qO- "http://198.51.100.1:$((19000 + i))/" 2>/dev/null || true)"
      [ "$page" = hello-containerd ] && break
      sleep 0.2
    done
    echo "$page" >"$T/par/$i.page"
  } &
  PAR_JOBS+=("$!")
done
for pid in "${PAR_JOBS[@]}"; do wait "$pid" || true; done
unreached=""
for i in $(seq 0 $((PAR_N - 1))); do
  [ "$(cat "$T/par/$i.page")" = hello-containerd ] || unreached+=" $((19000 + i))"
done
[ -z "$unreached" ] && ok "$PAR_N host ports reached from the client through 198.51.100.1 ($(ms_since "$t0") ms)" ||
  fail "host ports not reached from the client:$unreached"
# Which port goes where: nodegate ports names each mapping's pod, sandbox and address.
want=""
for i in $(seq 0 $((PAR_N - 1))); do
  want+="0.0.0.0 TCP $((19000 + i)) ${PAR_IDS[$i]} default/p$i ${PAR_IPS[$i]:-?}:8080"$'\n'
done
if out="$(in_node "$BIN/nodegate" ports --cni-cache /var/lib/cni/results -o json 2>&1)"; then
  expect_eq "$(LC_ALL=C sort <<<"${want%$'\n'}")" "$(mapped_claims <<<"$out" 2>&1 | grep ' TCP 190' || true)" \
    "nodegate ports: port 19000+i -> pod default/pi, its sandbox and address, for all $PAR_N"
else
  fail "nodegate ports: $out"
fi
shaped_n=$(((PAR_N + 1) / 2))
expect_eq $((2 * shaped_n)) "$(count_lines tbf in_node tc qdisc show)" \
  "2 tbf qdiscs for each of the $shaped_n shaped sandboxes"
expect_eq "$shaped_n" "$(node_bwp_devices)" "a bwp ifb for each of the $shaped_n shaped sandboxes"

PAR_JOBS=()
t0="$(date +%s%N)"
for id in "${PAR_IDS[@]}"; do
  { cri stop "$id" && cri remove "$id"; } >"$T/par/$id.rm" 2>&1 &
  PAR_JOBS+=("$!")
done
nfailed=0
for pid in "${PAR_JOBS[@]}"; do wait "$pid" || nfailed=$((nfailed + 1)); done
expect_eq 0 "$nfailed" "$PAR_N StopPodSandbox + RemovePodSandbox in parallel ($(ms_since "$t0") ms)$(
  [ "$nfailed" -eq 0 ] || echo ": $(cat "$T"/par/*.rm | sort | uniq -c | tr '\n' ';')")"
echo "  their plugin calls:"
calls times "$t0"
nothing_left "the ports 19000+i" "$(seq -s '\|' 19000 $((19000 + PAR_N - 1)))" "$T/par.ids"
no_failed_calls "in all"
echo "  ($((SECONDS - start)) s from containerd's start)"

echo "== 8. every plugin swapped between ours and the reference while pods run"
# As an operator replacing the binaries in /opt/cni/bin on a running node: pod s0 is made by
# ours, the plugins are swapped to Debian's, s1 is made by those; the two pods reach each other
# and are reached through their host ports; s0 is then removed by the reference, the plugins
# are swapped back, s1 is removed by ours, and nothing is left.
swap_plugins() { for p in bridge host-local portmap bandwidth; do ln -sfn "$1/$p" "$T/impl/$p"; done; }
if [ "$PLUGINS_FROM" = ours ]; then
  SWAP_IDS=()
  swap_run() {  # INDEX: a sandbox with host port 19500+INDEX; its ID appended to SWAP_IDS
    local id
    if id="$(cri run --name "s$1" --uid "7c4c5c40-0000-4000-8000-0000000200$1" --namespace default \
      --cgroup-parent "/$CGROUP" --port "tcp:$((19500 + $1)):8080" 2>"$T/swap.err")"; then
      SWAP_IDS+=("$id")
      echo "$id" >>"$T/swap.ids"
      ok "RunPodSandbox s$1 by $2"
    else
      fail "RunPodSandbox s$1 by $2: $(cat "$T/swap.err")"
    fi
  }
  swap_field() { cri status "$1" | "$PY" -c "import json,sys; print(json.load(sys.stdin)[sys.argv[1]])" "$2"; }
  : >"$T/swap.ids"
  swap_run 0 ours
  swap_plugins /usr/lib/cni
  swap_run 1 "the reference"
  if [ "${#SWAP_IDS[@]}" -eq 2 ]; then
    for i in 0 1; do
      NETNS="$(swap_field "${SWAP_IDS[$i]}" netns)"
      pod_listening -t 8080
      expect_eq hello-containerd \
        "$(in_client timeout 5 busybox wget -qO- "http://198.51.100.1:$((19500 + i))/" 2>&1 || true)" \
        "s$i reached through host port $((19500 + i))"
    done
    ip1="$(swap_field "${SWAP_IDS[1]}" ip)"
    expect_eq hello-containerd \
      "$(nsenter --net="$(swap_field "${SWAP_IDS[0]}" netns)" timeout 5 busybox wget -qO- "http://$ip1:8080/" 2>&1 || true)" \
      "s0 (ours) reaches s1 (the reference's) across the bridge"
    expect_eq 2 "$(count_lines . in_node ip -o link show master ng0)" "both pods' veths on bridge ng0"
  fi
  if [ "${#SWAP_IDS[@]}" -ge 1 ]; then
    { cri stop "${SWAP_IDS[0]}" && cri remove "${SWAP_IDS[0]}"; } 2>"$T/swap.err" &&
      ok "s0 (made by ours) stopped and removed by the reference" || fail "s0's removal: $(cat "$T/swap.err")"
  fi
  swap_plugins "$BIN"
  if [ "${#SWAP_IDS[@]}" -ge 2 ]; then
    { cri stop "${SWAP_IDS[1]}" && cri remove "${SWAP_IDS[1]}"; } 2>"$T/swap.err" &&
      ok "s1 (made by the reference) stopped and removed by ours" || fail "s1's removal: $(cat "$T/swap.err")"
  fi
  nothing_left "the ports 19500 and 19501" '1950[01]' "$T/swap.ids"
  no_failed_calls "in all, across the swap"
else
  echo "  (skipped: E2E_PLUGINS=reference has no other side)"
fi

if [ "$FAILED" -ne 0 ]; then
  echo "e2e: FAILED (plugins: $PLUGINS_FROM)" >&2
  exit 1
fi
echo "e2e: all checks passed (plugins: $PLUGINS_FROM)"
