"""bench/explain/bench.sh's body: for each cluster size, the stand-in API server as its own
process with a synthetic cluster (tests/webhook/synthetic.py, cached between runs), then
`nodegate explain pod` of one of its Pending pods, timed; and Debian's kubectl reading the same
pods, as the reference. Prints one row per size."""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SRC, "bench", "lib"))
from results import record  # noqa: E402
NODEGATE = sys.argv[1]
SIZES = [int(n) for n in os.environ.get("EXPLAIN_BENCH_SIZES", "334 1667 5000").split()]
RUNS = int(os.environ.get("EXPLAIN_BENCH_RUNS", "3"))
CACHE = os.path.join(os.environ.get("NODEGATE_CACHE_DIR", os.path.join(SRC, "build", "cache")),
                     "standin")
PODS_PER_NODE = 30
KUBECTL_UP_TO = 11000  # pods: above it Debian's kubectl 1.20 needs gigabytes (2.2 GB at 10,000)


def cpu_seconds(pid):
    """utime + stime of a process, from /proc."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed(cmd, env=None):
    """Wall seconds, CPU seconds (user + system) and peak RSS (KiB) of one child."""
    started = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - started
    err = proc.stderr.read().decode()
    proc.stderr.close()
    code = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, code, err


def debian_kubectl():
    out = subprocess.run(["bash", "-c", "source scripts/lib/arch.sh && debian_kubectl"], cwd=SRC,
                         capture_output=True, text=True).stdout.strip()
    return out or None


def main():
    os.makedirs(CACHE, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="explain_bench.")
    kubectl = debian_kubectl()
    print("stand-in of the API server's contract on this machine (2 cores, shared): its serving")
    print("competes with nodegate for the cores; figures are medians of %d runs" % RUNS)
    print("%-8s %-6s %9s %9s %9s %11s %13s %14s" % (
        "pods", "nodes", "wall s", "cpu s", "RSS MiB", "stand-in s", "kubectl s", "ratio"))
    for nodes in SIZES:
        kubeconfig = os.path.join(tmp, "kubeconfig-%d" % nodes)
        server = subprocess.Popen(
            [sys.executable, os.path.join(SRC, "tests", "webhook", "standin.py"), "--serve",
             "--nodes", str(nodes), "--pods-per-node", str(PODS_PER_NODE), "--cache-dir", CACHE,
             "--certs-dir", os.path.join(tmp, "certs"), "--kubeconfig", kubeconfig],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            ready = json.loads(server.stdout.readline())
            pods = ready["objects"]["pods"]
            # A Pending pod of the cluster (a Deployment asking for more cpu than a node has).
            listing = subprocess.run(
                ["curl", "-sk", "-H", "Authorization: Bearer " + ready["token"],
                 ready["url"] + "/api/v1/pods?fieldSelector=status.phase%3DPending&limit=1"],
                capture_output=True, text=True, check=True).stdout
            item = json.loads(listing)["items"][0]["metadata"]
            cmd = [NODEGATE, "explain", "pod", item["name"], "-n", item["namespace"],
                   "--kubeconfig", kubeconfig]
            walls, cpus, rss, served = [], [], [], []
            for _ in range(RUNS):
                before = cpu_seconds(server.pid)
                wall, cpu, maxrss, code, err = timed(cmd)
                served.append(cpu_seconds(server.pid) - before)
                if code not in (0, 1):
                    raise SystemExit("bench explain: exit %d: %s" % (code, err))
                walls.append(wall)
                cpus.append(cpu)
                rss.append(maxrss / 1024)
            reference = "-"
            ratio = "-"
            if kubectl and pods <= KUBECTL_UP_TO:
                env = dict(os.environ, KUBECONFIG=kubeconfig, HOME=tmp)
                kwall, _, _, kcode, kerr = timed([kubectl, "get", "pods", "-A", "-o", "json",
                                                  "--request-timeout", "300s"], env=env)
                if kcode == 0:
                    reference = "%.2f" % kwall
                    ratio = "%.2fx faster" % (kwall / statistics.median(walls))
            record("explain", "explain pod, %d pods: wall" % pods, statistics.median(walls),
                   float(reference) if reference != "-" else None, unit="s")
            record("explain", "explain pod, %d pods: peak RSS" % pods, max(rss), unit="MiB")
            print("%-8d %-6d %9.2f %9.2f %9.0f %11.2f %13s %14s" % (
                pods, nodes, statistics.median(walls), statistics.median(cpus), max(rss),
                statistics.median(served), reference, ratio))
            sys.stdout.flush()
        finally:
            server.terminate()
            server.wait()
    print("targets at 150,000 pods: wall < 3 s, RSS < 256 MiB (wall includes the stand-in's "
          "serving on the same 2 cores)")


if __name__ == "__main__":
    main()
