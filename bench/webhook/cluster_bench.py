"""bench/webhook/bench.sh's cluster section: `nodegate webhook` against a generated cluster
served by the stand-in of the API server's contract (tests/webhook/standin.py --serve, its own
process), at growing sizes: the initial sync's time, the webhook's memory after the sync, after
every node has been judged once, and at its peak through a 410 relist; then, at the largest
size, review latency while the stand-in changes 200 pods a second. Prints one table row per
size, beside the targets (issue 48): peak RSS < 256 MiB, sync < 10 s at 150,000 pods, review
p99 < 2 ms during 200 events/s.

What the stand-in cannot show (tests/webhook/README.md): a real API server's list costs, its
watch cache, API Priority and Fairness. Its serving is Python's: on this 2-core machine the
stand-in takes the core the webhook does not.

    cluster_bench.py NODEGATE SIZES(e.g. 10000,50000,150000) CACHE_DIR [LOAD_SECONDS]
"""

import concurrent.futures
import json
import os
import re
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SRC, "tests", "webhook"))
sys.path.insert(0, os.path.join(SRC, "bench", "lib"))
import standin  # noqa: E402
from standin_admin import AdminClient  # noqa: E402
from results import record  # noqa: E402

NODEGATE = sys.argv[1]
SIZES = [int(s) for s in sys.argv[2].split(",")]
CACHE = sys.argv[3]
LOAD_SECONDS = int(sys.argv[4]) if len(sys.argv) > 4 else 10
PODS_PER_NODE = 30  # 5,000 nodes at 150,000 pods, Kubernetes' two thresholds together
MIB = 1 << 20


def status_kib(pid, field):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def cpu_seconds(pid):
    """User and system CPU time of a process so far (proc(5) fields 14 and 15)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def get(port, path):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=30) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def metric(port, name):
    _, text = get(port, "/metrics")
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            total += float(line.rsplit(" ", 1)[1])
    return total


def wait(condition, timeout, what):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.05)
    raise RuntimeError("not within %d s: %s" % (timeout, what))


def review_pod(node, name):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "bench"},
            "spec": {"nodeName": node, "containers": [{
                "name": "c", "image": "busybox",
                "resources": {"requests": {"cpu": "1m", "memory": "1Mi"}}}]}}


class Standin:
    def __init__(self, tmp, nodes):
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(SRC, "tests", "webhook", "standin.py"), "--serve",
             "--nodes", str(nodes), "--pods-per-node", str(PODS_PER_NODE), "--seed", "1",
             "--cache-dir", CACHE, "--certs-dir", os.path.join(tmp, "certs"),
             "--kubeconfig", os.path.join(tmp, "kubeconfig"), "--bookmark-interval", "60"],
            stdout=subprocess.PIPE, text=True)
        self.ready = json.loads(self.proc.stdout.readline())
        self.admin = AdminClient(self.ready["admin_port"])

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=60)


def run_size(pods, tmp):
    nodes = pods // PODS_PER_NODE
    api = Standin(tmp, nodes)
    certs = os.path.join(tmp, "certs")
    started = time.monotonic()
    webhook = subprocess.Popen(
        [NODEGATE, "webhook", "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0",
         "--tls-cert", certs + "/tls.crt", "--tls-key", certs + "/tls.key",
         "--kubeconfig", os.path.join(tmp, "kubeconfig"), "--log-format", "json",
         "--shutdown-delay", "0s", "--max-cache-age", "120s"],
        stderr=subprocess.PIPE, text=True)
    first = json.loads(webhook.stderr.readline())
    port, metrics_port = first["port"], first["metrics_port"]
    threading.Thread(target=lambda: [None for _ in webhook.stderr], daemon=True).start()
    row = {"pods": pods, "nodes": nodes}
    try:
        standin_cpu = cpu_seconds(api.proc.pid)
        wait(lambda: get(metrics_port, "/readyz")[0] == 200, 600, "sync")
        row["sync_s"] = time.monotonic() - started
        row["sync_cpu"] = cpu_seconds(webhook.pid)
        row["standin_cpu"] = cpu_seconds(api.proc.pid) - standin_cpu
        row["cached"] = int(metric(metrics_port, "nodegate_webhook_cached_pods"))
        row["rss_sync"] = status_kib(webhook.pid, "VmRSS") * 1024
        # Every node judged once (a dry run each, so nothing is assumed).
        client_count = 4
        clients = [standin.WebhookClient(port, certs + "/ca.crt") for _ in range(client_count)]
        names = list_node_names(api)

        def judge(i):
            response, _ = clients[i % client_count].review(review_pod(names[i], "j%d" % i),
                                                           dry_run=True)
            return response

        t = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(client_count) as pool:
            answers = list(pool.map(judge, range(len(names))))
        row["judge_s"] = time.monotonic() - t
        row["unknown"] = sum(1 for a in answers if any("not known" in w for w in a.get("warnings") or []))
        row["rss_judged"] = status_kib(webhook.pid, "VmRSS") * 1024
        # A relist after 410: changes the watch never saw, then a compaction.
        lists = metric(metrics_port, "nodegate_webhook_cache_lists_total")
        api.admin.stall_watches()
        api.admin.put("nodes", {"apiVersion": "v1", "kind": "Node",
                                "metadata": {"name": "relist-marker"}, "status": {}})
        api.admin.compact()
        api.admin.end_watches()
        api.admin.release_watches()
        t = time.monotonic()
        wait(lambda: metric(metrics_port, "nodegate_webhook_cache_lists_total") >= lists + 2,
             600, "relist")
        row["relist_s"] = time.monotonic() - t
        row["peak"] = status_kib(webhook.pid, "VmHWM") * 1024
        if pods == SIZES[-1]:
            row.update(latency_under_load(api, port, names[0]))
    finally:
        webhook.send_signal(signal.SIGTERM)
        webhook.wait(timeout=60)
        api.stop()
    return row


def list_node_names(api):
    ctx = ssl.create_default_context(cafile=api.ready["ca"])
    req = urllib.request.Request("https://127.0.0.1:%d/api/v1/nodes" % api.ready["port"],
                                 headers={"Authorization": "Bearer " + api.ready["token"]})
    with urllib.request.urlopen(req, context=ctx, timeout=120) as r:
        return [item["metadata"]["name"] for item in json.load(r)["items"]]


def latency_under_load(api, port, node):
    body = os.path.join(tempfile.gettempdir(), "ng-bench-review-%d.json" % os.getpid())
    with open(body, "w") as f:
        json.dump(standin.create_v1_admission_review(review_pod(node, "w"), dry_run=True), f)
    lua = body + ".lua"
    with open(lua, "w") as f:
        f.write('wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\n'
                'local f = io.open("%s"); wrk.body = f:read("*a"); f:close()\n' % body)
    api.admin.start_load(rate=200)
    try:
        out = subprocess.run(["wrk", "-t1", "-c1", "-d%ds" % LOAD_SECONDS, "--latency", "-s", lua,
                              "https://127.0.0.1:%d/validate?timeout=5s" % port],
                             capture_output=True, text=True, check=True).stdout
        stats = api.admin.load_stats()
    finally:
        api.admin.stop_load()
        os.unlink(body)
        os.unlink(lua)

    def ms(label):
        m = re.search(r"^\s+%s\s+([\d.]+)(us|ms|s)\s*$" % label, out, re.M)
        value = float(m.group(1))
        return value / 1000 if m.group(2) == "us" else value * 1000 if m.group(2) == "s" else value

    return {"p50_ms": ms("50%"), "p99_ms": ms("99%"),
            "events_per_s": stats.get("achieved_rate") or stats.get("rate")}


def main():
    os.makedirs(CACHE, exist_ok=True)
    print("cluster sizes %s, %d pods per node; stand-in of the API server's contract "
          "(tests/webhook/standin.py), generated pods of about 11 KB of JSON; \"its CPU\": the "
          "webhook's CPU seconds until synced, \"API CPU\": the stand-in's meanwhile" %
          (",".join(str(s) for s in SIZES), PODS_PER_NODE))
    print("%8s %6s %8s %9s %9s %9s %10s %10s %9s %11s" % (
        "pods", "nodes", "sync s", "its CPU s", "API CPU s", "RSS sync", "RSS judged", "peak RSS",
        "relist s", "MiB/1k pods"))
    rows = []
    for pods in SIZES:
        tmp = tempfile.mkdtemp(prefix="ng-bench-cluster.")
        try:
            row = run_size(pods, tmp)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        rows.append(row)
        print("%8d %6d %8.2f %9.2f %9.2f %8.0fM %9.0fM %9.0fM %9.2f %11.2f" % (
            row["pods"], row["nodes"], row["sync_s"], row["sync_cpu"], row["standin_cpu"],
            row["rss_sync"] / MIB, row["rss_judged"] / MIB, row["peak"] / MIB, row["relist_s"],
            row["peak"] / MIB / (pods / 1000)), flush=True)
        record("webhook", "initial sync, %d pods" % pods, row["sync_s"], unit="s")
        record("webhook", "peak RSS, %d pods" % pods, row["peak"] / MIB, unit="MiB")
        if row["cached"] < pods * 0.9 or row["unknown"]:
            print("  warning: %d pods cached, %d nodes unknown" % (row["cached"], row["unknown"]))
    last = rows[-1]
    if len(rows) > 1:
        first = rows[0]
        per_pod = (last["peak"] - first["peak"]) / (last["pods"] - first["pods"])
        print("growth: %.0f bytes of peak RSS and %.1f us of sync per pod added "
              "(%d -> %d pods)" % (per_pod, 1e6 * (last["sync_s"] - first["sync_s"]) /
                                  (last["pods"] - first["pods"]), first["pods"], last["pods"]))
    print("review latency at %d pods while the stand-in makes %.0f changes/s: p50 %.3f ms, "
          "p99 %.3f ms (target p99 < 2 ms)" % (last["pods"], last["events_per_s"] or 0,
                                                last["p50_ms"], last["p99_ms"]))
    record("webhook", "review p99 at %d pods during %.0f changes/s" % (
        last["pods"], last["events_per_s"] or 0), last["p99_ms"])
    print("targets at %d pods: peak RSS %.0f MiB (< 256), sync %.2f s (< 10)" % (
        last["pods"], last["peak"] / MIB, last["sync_s"]))


if __name__ == "__main__":
    main()
