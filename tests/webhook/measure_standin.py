"""How fast the stand-in of the API server's contract serves a synthetic cluster to plain
clients (curl and Python's http.client, through TLS on loopback). A measuring tool for
tests/webhook/README.md, not a test; run it under `flock /tmp/nodegate-bench.lock` and say that
figures come from a shared machine.

    python3 tests/webhook/measure_standin.py --nodes 5000 --pods-per-node 30 \
        --cache-dir /var/tmp/nodegate-synthetic [--paginate-cache-lists]
"""

import argparse
import http.client
import json
import os
import re
import shutil
import ssl
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def rss_of(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def cpu_of(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Measure:
    def __init__(self, info, pid):
        self.info = info
        self.pid = pid
        self.ctx = ssl.create_default_context(cafile=info["ca"])
        self.auth = {"Authorization": "Bearer " + info["token"]}

    def curl(self, path):
        out = subprocess.run(
            ["curl", "-sS", "--cacert", self.info["ca"], "-H", "Authorization: Bearer " +
             self.info["token"], "-o", "/dev/null", "-w", "%{time_starttransfer} %{time_total} "
             "%{size_download}", self.info["url"] + path], capture_output=True, text=True,
            check=True).stdout.split()
        return float(out[0]), float(out[1]), int(out[2])

    def python(self, path, conn=None):
        """Seconds to the last byte, and bytes (http.client, chunked decoding, no JSON parse)."""
        c = conn or http.client.HTTPSConnection("127.0.0.1", self.info["port"], context=self.ctx)
        start = time.monotonic()
        c.request("GET", path, headers=self.auth)
        r = c.getresponse()
        head = r.read(4096)
        size = len(head)
        while True:
            b = r.read(8 << 20)
            if not b:
                break
            size += len(b)
        return time.monotonic() - start, size, head

    def paged(self, path, limit):
        c = http.client.HTTPSConnection("127.0.0.1", self.info["port"], context=self.ctx)
        start = time.monotonic()
        token, pages, size = "", 0, 0
        while True:
            sep = "&" if "?" in path else "?"
            target = path + sep + "limit=%d" % limit + ("&continue=" + token if token else "")
            _, n, head = self.python(target, c)
            pages += 1
            size += n
            m = re.search(rb'"continue":"([^"]+)"', head)
            if not m:
                return time.monotonic() - start, pages, size
            token = m.group(1).decode()


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--nodes", type=int, default=5000)
    p.add_argument("--pods-per-node", type=int, default=30)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--cache-dir", default="/var/tmp/nodegate-synthetic")
    p.add_argument("--paginate-cache-lists", action="store_true")
    args = p.parse_args()
    tmp = tempfile.mkdtemp(prefix="measure_standin.")
    cmd = [sys.executable, os.path.join(HERE, "standin.py"), "--serve", "--nodes",
           str(args.nodes), "--pods-per-node", str(args.pods_per_node), "--seed", str(args.seed),
           "--cache-dir", args.cache_dir, "--certs-dir", tmp + "/certs"]
    if args.paginate_cache_lists:
        cmd.append("--paginate-cache-lists")
    started = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    try:
        info = json.loads(proc.stdout.readline())
        m = Measure(info, proc.pid)
        print("stand-in: %s; ready in %.1f s (generation or cache read, and load), RSS %.0f MiB"
              % (", ".join("%d %s" % (n, r) for r, n in info["objects"].items() if n),
                 time.monotonic() - started, rss_of(proc.pid) / 2**20))
        print("%-52s %10s %10s %10s %10s" % ("request", "1st byte s", "total s", "MB",
                                             "srv cpu s"))
        for label, path in (("pods, resourceVersion=0 (curl)", "/api/v1/pods?resourceVersion=0"),
                            ("pods, resourceVersion=0 (curl, again)",
                             "/api/v1/pods?resourceVersion=0"),
                            ("nodes, resourceVersion=0 (curl)", "/api/v1/nodes?resourceVersion=0")):
            cpu = cpu_of(proc.pid)
            first, total, size = m.curl(path)
            print("%-52s %10.2f %10.2f %10.0f %10.2f" % (label, first, total, size / 1e6,
                                                          cpu_of(proc.pid) - cpu))
        cpu = cpu_of(proc.pid)
        total, size, _ = m.python("/api/v1/pods?resourceVersion=0")
        print("%-52s %10s %10.2f %10.0f %10.2f" % ("pods, resourceVersion=0 (python http.client)",
                                                  "", total, size / 1e6, cpu_of(proc.pid) - cpu))
        for limit in (500, 5000):
            cpu = cpu_of(proc.pid)
            total, pages, size = m.paged("/api/v1/pods", limit)
            print("%-52s %10s %10.2f %10.0f %10.2f" % (
                "pods, consistent, limit=%d: %d pages (python)" % (limit, pages), "", total,
                size / 1e6, cpu_of(proc.pid) - cpu))
        c = http.client.HTTPSConnection("127.0.0.1", info["port"], context=m.ctx)
        c.request("GET", "/api/v1/nodes?limit=20", headers=m.auth)
        nodes = [n["metadata"]["name"].encode() for n in json.loads(c.getresponse().read())["items"]]
        if nodes:
            start = time.monotonic()
            for n in nodes:
                m.python("/api/v1/pods?resourceVersion=0&fieldSelector=spec.nodeName%3D" +
                         n.decode(), c)
            print("%-52s %10s %10.4f" % ("pods of one node, resourceVersion=0 (python, mean)",
                                          "", (time.monotonic() - start) / len(nodes)))
        # 200 pod events/s with one watcher reading them: what the stand-in's CPU pays.
        from standin_admin import AdminClient
        admin = AdminClient(info["admin_port"])
        rv = admin.status()["resourceVersion"]
        c = http.client.HTTPSConnection("127.0.0.1", info["port"], context=m.ctx)
        c.request("GET", "/api/v1/pods?watch=1&allowWatchBookmarks=true&resourceVersion=%d" % rv,
                  headers=m.auth)
        r = c.getresponse()
        cpu = cpu_of(proc.pid)
        admin.start_load(rate=200, churn=0.1)
        start = time.monotonic()
        events = 0
        while time.monotonic() - start < 10:
            if r.readline().startswith(b'{"type":"'):
                events += 1
        load = admin.stop_load()
        spent = time.monotonic() - start
        print("load driver at 200 changes/s for %.0f s: %.0f changes/s, %d events read by one "
              "watcher, stand-in cpu %.0f%% of a core" % (spent, load["achieved_rate"], events,
                                                           100 * (cpu_of(proc.pid) - cpu) / spent))
        c.close()
        print("stand-in RSS after: %.0f MiB" % (rss_of(proc.pid) / 2**20))
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
