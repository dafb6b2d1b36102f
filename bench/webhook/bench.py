"""bench/webhook/bench.sh's body: the stand-in API server with one node and N pods, the
webhook against it, wrk against the webhook; prints one row per N."""

import json
import threading
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SRC, "tests", "webhook"))
import standin  # noqa: E402
sys.path.insert(0, os.path.join(SRC, "bench", "lib"))
from results import record  # noqa: E402

NODEGATE, SECONDS = sys.argv[1], int(sys.argv[2])


def pod(i, node="bench-1"):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p%d" % i, "namespace": "load"},
            "spec": {"nodeName": node, "containers": [{
                "name": "c", "image": "busybox",
                "ports": [{"containerPort": 8000, "hostPort": 20000 + i % 40000}],
                "resources": {"requests": {"cpu": "1m", "memory": "1Mi"}}}]}}


def wrk(port, body_file, connections, threads, seconds):
    lua = body_file + ".lua"
    with open(lua, "w") as f:
        f.write('wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\n'
                'local f = io.open("%s"); wrk.body = f:read("*a"); f:close()\n' % body_file)
    out = subprocess.run(["wrk", "-t%d" % threads, "-c%d" % connections, "-d%ds" % seconds,
                          "--latency", "-s", lua, "https://127.0.0.1:%d/validate?timeout=5s" % port],
                         capture_output=True, text=True, check=True).stdout
    def ms(label):
        m = re.search(r"^\s+%s\s+([\d.]+)(us|ms|s)\s*$" % label, out, re.M)
        value, unit = float(m.group(1)), m.group(2)
        return value / 1000 if unit == "us" else value * 1000 if unit == "s" else value
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)|Socket errors: .*", out)
    if errors:
        raise SystemExit("bench webhook: wrk saw errors:\n" + out)
    return ms("50%"), ms("99%"), rate


def main():
    tmp = tempfile.mkdtemp(prefix="webhook_bench.")
    certs = os.path.join(tmp, "certs")
    ca, crt, key = standin.make_certs(os.path.join(SRC, "deploy", "webhook", "make-cert.sh"), certs)
    print("%-8s %12s %12s %14s" % ("pods", "p50 ms", "p99 ms", "reviews/s"))
    for n in (110, 5000):
        api = standin.ApiServer(crt, key, bookmark_interval=5)
        api.put("nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {
            "name": "bench-1", "labels": {"kubernetes.io/os": "linux"}},
            "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "pods": str(n + 10)}}})
        for i in range(n):
            api.put("pods", pod(i))
        token = os.path.join(tmp, "token")
        with open(token, "w") as f:
            f.write(api.token)
        kubeconfig = os.path.join(tmp, "kubeconfig")
        standin.kubeconfig(kubeconfig, api.port, ca, token)
        proc = subprocess.Popen([NODEGATE, "webhook", "--listen", "127.0.0.1:0",
                                 "--metrics-listen", "127.0.0.1:0", "--tls-cert", crt,
                                 "--tls-key", key, "--kubeconfig", kubeconfig,
                                 "--log-format", "json", "--shutdown-delay", "0s"],
                                stderr=subprocess.PIPE, text=True)
        try:
            serving = json.loads(proc.stderr.readline())
            port, metrics = serving["port"], serving["metrics_port"]
            # The webhook logs to stderr; an unread pipe that fills would stall it.
            threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()
            for _ in range(600):
                try:
                    if urllib.request.urlopen("http://127.0.0.1:%d/readyz" % metrics).status == 200:
                        break
                except OSError:
                    time.sleep(0.1)
            review = standin.create_v1_admission_review(
                {"metadata": {"name": "candidate", "namespace": "load"},
                 "spec": {"nodeName": "bench-1", "containers": [{
                     "name": "c", "image": "busybox",
                     "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}},
                dry_run=True)
            body = os.path.join(tmp, "review.json")
            with open(body, "w") as f:
                json.dump(review, f)
            wrk(port, body, 1, 1, 2)  # warm-up: first connection, the node's checker built
            p50, p99, _ = wrk(port, body, 1, 1, SECONDS)
            _, _, rate = wrk(port, body, 16, 2, SECONDS)
            print("%-8d %12.3f %12.3f %14.0f" % (n, p50, p99, rate))
            record("webhook", "review p50, %d pods on the node" % n, p50)
            record("webhook", "review p99, %d pods on the node" % n, p99)
            record("webhook", "reviews per second, %d pods, 16 connections" % n, rate,
                   unit="reviews/s")
        finally:
            proc.terminate()
            proc.wait()
            api.stop()
    print("targets: p99 < 5 ms at 110 pods; > 2,000 reviews/s")


if __name__ == "__main__":
    main()
