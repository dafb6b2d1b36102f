#!/usr/bin/env bash
# cluster-ipam benchmark (issue 49), against three etcd members of Debian's etcd-server on
# loopback (scripts/lib/etcd_cluster.sh, TLS with client certificates, as the tests run them):
#
#   1. ADD and DEL p50/p99 per call (fork+exec included) with 0, 1,000 and 10,000 addresses
#      allocated in the pool (filled in-process by bench/cluster_ipam_bench populate), next to
#      host-local's (ours) and next to the floor, both measured in the same run:
#        floor A  the exec of a static no-op (bench/startup_noop) plus one etcd compare-and-swap
#                 transaction on a warm connection (the issue's floor);
#        floor B  one static etcd client exec'd per call: TLS connection, one transaction, exit
#                 (bench/cluster_ipam_bench one-txn), what any exec'd client pays.
#      The same rows over each member's plain-HTTP loopback listener (ETCD_PLAIN=1 of
#      scripts/lib/etcd_cluster.sh): what TLS costs an exec'd client.
#      And the same ADD and DEL through the node's agent (`cluster-ipam agent`: the exec'd
#      plugin forwards its call over a unix socket to a process that keeps its etcd TLS
#      connection warm; ipam/cluster/agent.h).
#   2. Throughput: 1,000 ADDs from 10 nodes, 10 at a time (one per node), etcd's data on the
#      machine's disk and on tmpfs; duplicates counted; straight to etcd, and through one agent
#      per node (10 agents).
#   3. Contention: the same 1,000 ADDs from one node (10 at a time: every ADD writes one of
#      that node's blocks; the node lock serializes them), and from 10 nodes that can only borrow (every block of a small pool
#      claimed by others); p50/p99, rate, and the transactions each ADD took (conflicts).
#
# CLUSTER_IPAM_BENCH_REPS (default 200) calls per latency row. Figures from a shared machine
# move with its load: the floor is measured in the same run for that reason.
set -euo pipefail
BUILD_DIR="$(cd "${1:-build}" && pwd)"
SRC="$(cd "$(dirname "$0")/../.." && pwd)"
for f in "$BUILD_DIR/bin/cluster-ipam" "$BUILD_DIR/bin/host-local" "$BUILD_DIR/bench/startup_noop" \
  "$BUILD_DIR/bench/cluster_ipam_bench"; do
  [ -x "$f" ] || { echo "missing $f (make build)" >&2; exit 1; }
done
command -v etcd >/dev/null || { echo "missing etcd (scripts/install-deps.sh)" >&2; exit 1; }
export PYTHONPATH="$SRC/bench/lib${PYTHONPATH:+:$PYTHONPATH}"
exec python3 - "$BUILD_DIR" "$SRC" "${CLUSTER_IPAM_BENCH_REPS:-200}" <<'PY'
import json, os, re, shutil, statistics, subprocess, sys, tempfile, threading, time
from results import record

build, src, reps = sys.argv[1], sys.argv[2], int(sys.argv[3])
PLUGIN = os.path.join(build, "bin/cluster-ipam")
HOST_LOCAL = os.path.join(build, "bin/host-local")
NOOP = os.path.join(build, "bench/startup_noop")
HELPER = os.path.join(build, "bench/cluster_ipam_bench")
SCRIPT = os.path.join(src, "scripts/lib/etcd_cluster.sh")

def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]

class Cluster:
    def __init__(self, data_root=None):
        self.dir = tempfile.mkdtemp(prefix="ng-bench-etcd-")
        env = dict(os.environ, ETCD_PLAIN="1")
        if data_root:
            env["ETCD_DATA_ROOT"] = data_root
        subprocess.run(["bash", SCRIPT, "start", self.dir], check=True, env=env,
                       stdout=subprocess.DEVNULL)
        with open(os.path.join(self.dir, "endpoints")) as f:
            self.endpoints = f.read().split()
        with open(os.path.join(self.dir, "endpoints-plain")) as f:
            self.plain = f.read().split()
    def stop(self):
        subprocess.run(["bash", SCRIPT, "stop", self.dir], stdout=subprocess.DEVNULL)
        shutil.rmtree(self.dir, ignore_errors=True)
    def conf(self, network, node, ranges='[[{"subnet":"10.240.0.0/14","blockSize":26}]]',
             plain=False, agent=None):
        pki = os.path.join(self.dir, "pki")
        c = {"cniVersion": "1.1.0", "name": network, "type": "ptp",
             "ipam": {"type": "cluster-ipam", "ranges": json.loads(ranges), "nodeName": node,
                      "agentSocket": agent.socket if agent else "",
                      "lockDir": os.path.join(self.dir, "locks"),
                      "etcd": {"endpoints": self.plain if plain else self.endpoints,
                               "caFile": pki + "/ca.crt",
                               "certFile": pki + "/client.crt", "keyFile": pki + "/client.key",
                               "timeout": "10s"}}}
        return json.dumps(c).encode()

class Agent:
    """`cluster-ipam agent` on a socket of the cluster's folder, its log (debug) in a file."""
    def __init__(self, cluster, name):
        self.socket = os.path.join(cluster.dir, name + ".sock")
        self.log_path = os.path.join(cluster.dir, name + ".log")
        self.proc = subprocess.Popen([PLUGIN, "agent", "--socket", self.socket],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=open(self.log_path, "ab"),
                                     env=dict(os.environ, NODEGATE_LOG_LEVEL="debug"))
        for _ in range(1000):
            if os.path.exists(self.socket):
                return
            time.sleep(0.01)
        sys.exit("agent %s did not start" % name)
    def log(self):
        with open(self.log_path, "rb") as f:
            return f.read()
    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=20)

def call(binary, command, cid, stdin, env_extra=None):
    env = {"CNI_COMMAND": command, "CNI_CONTAINERID": cid, "CNI_NETNS": "/run/netns/bench",
           "CNI_IFNAME": "eth0", "CNI_PATH": "/usr/lib/cni", "PATH": "/usr/bin:/bin"}
    if env_extra:
        env.update(env_extra)
    t0 = time.perf_counter_ns()
    p = subprocess.run([binary], input=stdin, env=env, capture_output=True)
    dt = (time.perf_counter_ns() - t0) / 1e6
    if p.returncode != 0:
        sys.exit("%s %s %s failed: %s %s" % (binary, command, cid, p.stdout.decode(), p.stderr.decode()))
    return dt, p

def timed_exec(argv, stdin=b""):
    t0 = time.perf_counter_ns()
    subprocess.run(argv, input=stdin, check=True, capture_output=True)
    return (time.perf_counter_ns() - t0) / 1e6

def row(*cols):
    print("  ".join(str(c).ljust(w) for c, w in zip(cols, [30, 9, 9, 9, 9, 11])))

print("cluster-ipam: 3 etcd members on loopback (TLS, client certificates); ms per call, fork+exec "
      "included; %d calls per row; load average %.1f at start" % (reps, os.getloadavg()[0]))

# 1. Latency against the floor and host-local, at 0, 1,000 and 10,000 allocated.
cluster = Cluster()
try:
    floors = {}
    for plain in (False, True):
        path = os.path.join(cluster.dir, "bench-%s.json" % ("http" if plain else "tls"))
        with open(path, "wb") as f:
            f.write(cluster.conf("bench", "bench-node", plain=plain))
        floors[plain] = path
    conf_path = floors[False]
    base = cluster.conf("bench", "bench-node")
    base_plain = cluster.conf("bench", "bench-node", plain=True)
    agent = Agent(cluster, "bench-node")
    base_agent = cluster.conf("bench", "bench-node", agent=agent)
    # Warm every path once (page cache, etcd's first requests on new connections).
    for i in range(20):
        call(PLUGIN, "ADD", "warm%d" % i, base)
        call(PLUGIN, "DEL", "warm%d" % i, base_plain)
        call(PLUGIN, "ADD", "warm-agent%d" % i, base_agent)
        call(PLUGIN, "DEL", "warm-agent%d" % i, base_agent)
    txn = subprocess.run([HELPER, "txn", conf_path, str(reps)], check=True, capture_output=True)
    txn_ms = [int(x) / 1000 for x in txn.stdout.split()]
    noop_ms, one_txn_ms, one_plain_ms = [], [], []
    for i in range(reps):
        noop_ms.append(timed_exec([NOOP]))
        one_txn_ms.append(timed_exec([HELPER, "one-txn", floors[False]]))
        one_plain_ms.append(timed_exec([HELPER, "one-txn", floors[True]]))
    hl_dir = tempfile.mkdtemp(prefix="ng-bench-hl-")
    hl_conf = ('{"cniVersion":"1.1.0","name":"bench","type":"host-local","ipam":{"type":'
               '"host-local","dataDir":"%s","ranges":[[{"subnet":"10.100.0.0/16"}]]}}' % hl_dir).encode()
    hl_add, hl_del = [], []
    for i in range(reps):
        hl_add.append(call(HOST_LOCAL, "ADD", "h%d" % i, hl_conf)[0])
        hl_del.append(call(HOST_LOCAL, "DEL", "h%d" % i, hl_conf)[0])
    shutil.rmtree(hl_dir, ignore_errors=True)
    floor_a = statistics.median(noop_ms) + statistics.median(txn_ms)
    floor_b = statistics.median(one_txn_ms)
    floor_b_plain = statistics.median(one_plain_ms)
    print()
    row("", "p50", "p99", "", "")
    row("static no-op exec", "%.2f" % statistics.median(noop_ms), "%.2f" % pct(noop_ms, 99))
    row("etcd CAS txn, warm connection", "%.2f" % statistics.median(txn_ms), "%.2f" % pct(txn_ms, 99))
    row("floor A = no-op + warm txn", "%.2f" % floor_a)
    row("floor B = exec'd client, TLS", "%.2f" % floor_b, "%.2f" % pct(one_txn_ms, 99))
    row("floor B = exec'd client, HTTP", "%.2f" % floor_b_plain, "%.2f" % pct(one_plain_ms, 99))
    row("host-local ADD / DEL (ours)", "%.2f" % statistics.median(hl_add), "%.2f" % pct(hl_add, 99),
        "%.2f" % statistics.median(hl_del), "%.2f" % pct(hl_del, 99))
    print()
    row("allocated in the pool", "ADD p50", "ADD p99", "DEL p50", "DEL p99", "floor B p50")
    filled = 0
    results = {}
    for size in (0, 1000, 10000):
        if size > filled:  # filler nodes fill-<n>, 100 addresses each (2 blocks of /26)
            nodes = (size - filled) // 100
            subprocess.run([HELPER, "populate", conf_path, str(filled // 100), str(nodes), "100", "8"],
                           check=True)
            filled = size
        for plain in (False, True, "agent"):
            conf = base_agent if plain == "agent" else base_plain if plain else base
            add_ms, del_ms = [], []
            for i in range(reps):
                cid = "m%d-%s-%d" % (size, plain, i)
                add_ms.append(call(PLUGIN, "ADD", cid, conf)[0])
                del_ms.append(call(PLUGIN, "DEL", cid, conf)[0])
            # The floor again at this size: what etcd's own transaction costs now.
            floor_now = statistics.median(
                [timed_exec([HELPER, "one-txn", floors[plain is True]]) for _ in range(max(20, reps // 4))])
            results[(size, plain)] = (statistics.median(add_ms), statistics.median(del_ms), floor_now)
            label = "TLS via agent" if plain == "agent" else "HTTP" if plain else "TLS"
            row("%d, %s" % (size, label), "%.2f" % statistics.median(add_ms),
                "%.2f" % pct(add_ms, 99), "%.2f" % statistics.median(del_ms), "%.2f" % pct(del_ms, 99),
                "%.2f" % floor_now)
            if plain is not True:
                via = " via agent" if plain == "agent" else ""
                record("cluster-ipam", "cluster-ipam ADD p50%s, %d allocated, TLS" % (via, size),
                       results[(size, plain)][0])
                record("cluster-ipam", "cluster-ipam DEL p50%s, %d allocated, TLS" % (via, size),
                       results[(size, plain)][1])
    record("cluster-ipam", "floor: an exec'd etcd client's one transaction, TLS", floor_b)
    record("cluster-ipam", "floor A: a static no-op's exec plus one warm etcd transaction", floor_a)
    record("cluster-ipam", "host-local ADD (ours), for comparison", statistics.median(hl_add))
    # Floor A again, after the rows: the machine's load moves during a run.
    noop_after = [timed_exec([NOOP]) for _ in range(reps)]
    txn_after = subprocess.run([HELPER, "txn", conf_path, str(reps)], check=True, capture_output=True)
    floor_a_after = statistics.median(noop_after) + statistics.median(
        [int(x) / 1000 for x in txn_after.stdout.split()])
    add0, del0, _ = results[(0, False)]
    agent0, agent_del0, _ = results[(0, "agent")]
    add0_plain = results[(0, True)][0]
    print()
    print("ADD p50 at 0, TLS: %.2f ms = floor A + %.2f ms (target: within 2 ms), floor B + %.2f ms; "
          "%.1fx host-local's ADD; DEL %.1fx host-local's" %
          (add0, add0 - floor_a, add0 - floor_b, add0 / statistics.median(hl_add),
           del0 / statistics.median(hl_del)))
    print("ADD p50 at 0 via the agent, TLS: %.2f ms = floor A + %.2f ms (floor A %.2f before the "
          "rows, %.2f after; target: within 2 ms), %.2fx the direct ADD; DEL %.2f ms; "
          "at 10,000 allocated: ADD %.2f ms" %
          (agent0, agent0 - floor_a, floor_a, floor_a_after, agent0 / add0, agent_del0,
           results[(10000, "agent")][0]))
    print("ADD p50 at 0, HTTP: %.2f ms = floor A + %.2f ms, HTTP floor B + %.2f ms" %
          (add0_plain, add0_plain - floor_a, add0_plain - floor_b_plain))
    print("ADD p50 at 10,000 / at 0: %.2fx TLS, %.2fx HTTP; ADD minus floor B: %.2f / %.2f ms TLS, "
          "%.2f / %.2f ms HTTP (the node reads its own blocks only; what grows is etcd's)" %
          (results[(10000, False)][0] / add0, results[(10000, True)][0] / add0_plain,
           add0 - results[(0, False)][2], results[(10000, False)][0] - results[(10000, False)][2],
           add0_plain - results[(0, True)][2], results[(10000, True)][0] - results[(10000, True)][2]))
finally:
    agent.stop()
    cluster.stop()

# 2 and 3. Throughput and contention: 1,000 ADDs, 10 at a time.
def storm(cluster, network, node_of, ranges, label, setup=None, plain=False, agents=None):
    if setup:
        setup()
    agent_of = {}
    if agents:  # one agent per node of the storm
        for w in range(10):
            node = node_of(w)
            if node not in agent_of:
                agent_of[node] = Agent(cluster, "%s-%s" % (network, node))
    results, lat, lock = set(), [], threading.Lock()
    txns, conflicts, dup = [0], [0], [0]
    def worker(w):
        for i in range(100):
            conf = cluster.conf(network, node_of(w), ranges, plain, agent_of.get(node_of(w)))
            dt, p = call(PLUGIN, "ADD", "s%d-%d" % (w, i), conf, {"NODEGATE_LOG_LEVEL": "debug"})
            m = re.search(rb"(\d+) transactions \((\d+) conflicts\)", p.stderr)
            ip = json.loads(p.stdout)["ips"][0]["address"]
            with lock:
                lat.append(dt)
                if ip in results:
                    dup[0] += 1
                results.add(ip)
                if m:
                    txns[0] += int(m.group(1))
                    conflicts[0] += int(m.group(2))
    threads = [threading.Thread(target=worker, args=(w,)) for w in range(10)]
    t0 = time.time()
    for t in threads: t.start()
    for t in threads: t.join()
    wall = time.time() - t0
    for a in agent_of.values():  # the agents' own counters (their verbs log them)
        a.stop()
        for m in re.finditer(rb"(\d+) transactions \((\d+) conflicts\)", a.log()):
            txns[0] += int(m.group(1))
            conflicts[0] += int(m.group(2))
    print("%-44s %6.0f ADD/s  p50 %6.2f  p99 %7.2f ms  %.2f txn/ADD (%d conflicts)  %d duplicates" %
          (label, 1000 / wall, statistics.median(lat), pct(lat, 99), txns[0] / 1000, conflicts[0], dup[0]))
    return 1000 / wall

print()
print("1,000 ADDs, 10 at a time (load average %.1f):" % os.getloadavg()[0])
disk = Cluster()
try:
    rate_disk = storm(disk, "t10", lambda w: "node-%d" % w, '[[{"subnet":"10.240.0.0/14","blockSize":26}]]',
                      "10 nodes, etcd data on disk")
    rate_plain = storm(disk, "th", lambda w: "node-%d" % w, '[[{"subnet":"10.240.0.0/14","blockSize":26}]]',
                       "10 nodes, etcd data on disk, plain HTTP", plain=True)
    rate_agents = storm(disk, "ta", lambda w: "node-%d" % w, '[[{"subnet":"10.240.0.0/14","blockSize":26}]]',
                        "10 nodes via agents, data on disk", agents=True)
    rate_one = storm(disk, "t1", lambda w: "node-0", '[[{"subnet":"10.240.0.0/14","blockSize":26}]]',
                     "1 node (every ADD writes its blocks)")
    rate_one_agent = storm(disk, "t1a", lambda w: "node-0", '[[{"subnet":"10.240.0.0/14","blockSize":26}]]',
                           "1 node via its agent", agents=True)
    # Borrowing: a /22 of 16 blocks, every block claimed by one of 16 owner nodes first.
    borrow_ranges = '[[{"subnet":"10.250.0.0/22","blockSize":26}]]'
    def claim_all():
        for o in range(16):
            call(PLUGIN, "ADD", "owner%d" % o, disk.conf("tb", "owner-%d" % o, borrow_ranges))
    rate_borrow = storm(disk, "tb", lambda w: "borrower-%d" % w, borrow_ranges,
                        "10 nodes that can only borrow", claim_all)
finally:
    disk.stop()
tmp = tempfile.mkdtemp(prefix="ng-bench-etcd-data-", dir="/dev/shm")
tmpfs = Cluster(data_root=tmp)
try:
    rate_tmpfs = storm(tmpfs, "t10", lambda w: "node-%d" % w, '[[{"subnet":"10.240.0.0/14","blockSize":26}]]',
                       "10 nodes, etcd data on tmpfs")
    rate_tmpfs_agents = storm(tmpfs, "ta", lambda w: "node-%d" % w,
                              '[[{"subnet":"10.240.0.0/14","blockSize":26}]]',
                              "10 nodes via agents, data on tmpfs", agents=True)
finally:
    tmpfs.stop()
    shutil.rmtree(tmp, ignore_errors=True)
record("cluster-ipam", "ADDs per second, 10 nodes 10 at a time, etcd on disk", rate_disk,
       unit="ADD/s")
record("cluster-ipam", "ADDs per second, 10 nodes that can only borrow", rate_borrow,
       unit="ADD/s")
record("cluster-ipam", "ADDs per second, 10 nodes 10 at a time via their agents, etcd on disk",
       rate_agents, unit="ADD/s")
record("cluster-ipam", "ADDs per second, 10 nodes 10 at a time via their agents, etcd on tmpfs",
       rate_tmpfs_agents, unit="ADD/s")
print()
print("throughput target 300/s, TLS: via agents %.0f/s with data on disk (%s), %.0f/s on tmpfs; "
      "straight to etcd %.0f/s on disk, %.0f/s on tmpfs, %.0f/s over plain HTTP; one node %.2fx "
      "(via its agent %.2fx) and borrowing %.2fx the 10-node rate; load average %.1f at the end" %
      (rate_agents, "met" if rate_agents >= 300 else "missed", rate_tmpfs_agents, rate_disk,
       rate_tmpfs, rate_plain, rate_one / rate_disk, rate_one_agent / rate_agents,
       rate_borrow / rate_disk, os.getloadavg()[0]))
PY
