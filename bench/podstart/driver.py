#!/usr/bin/python3
"""One set of pod sandboxes for bench/podstart/bench.sh, driven over containerd's CRI as a
kubelet drives it, each call timed in this process (tests/e2e/cri_client.py encodes the
messages; here they are sent over one channel, so no interpreter start is timed).

Usage: driver.py SOCKET OUT PREFIX COUNT FIRST_PORT CGROUP_PARENT

Runs COUNT sandboxes one after another (RunPodSandbox), each with TCP and UDP host port
FIRST_PORT + i (to 8080 and 53) and the bandwidth annotations (10M each way), then stops and
removes them one after another. Writes one JSON line per sandbox to OUT:
  {"name", "id", "run": [t0, t1], "stop": [t0, t1], "remove": [t0, t1]}
with CLOCK_MONOTONIC seconds (the clock `perf record -k mono` stamps its events with). Exits
non-zero when a call fails (after stopping and removing what it made).
"""

import json
import os
import sys
import time
import types

import grpc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "tests", "e2e"))
import cri_client  # noqa: E402  (the e2e suite's encoder, beside its own tests)


def now():
    return time.clock_gettime(time.CLOCK_MONOTONIC)


def main():
    sock, out, prefix, count, first_port, cgroup = sys.argv[1:]
    count, first_port = int(count), int(first_port)
    rows, failed = [], None
    with grpc.insecure_channel("unix://" + sock) as channel:
        for i in range(count):
            args = types.SimpleNamespace(
                name="%s-%d" % (prefix, i), uid="%s-uid-%d" % (prefix, i), namespace="bench",
                cgroup_parent=cgroup,
                port=["tcp:%d:8080" % (first_port + i), "udp:%d:53" % (first_port + i)],
                annotation=["kubernetes.io/ingress-bandwidth=10M",
                            "kubernetes.io/egress-bandwidth=10M"])
            t0 = now()
            try:
                reply = cri_client.call(channel, "RunPodSandbox", cri_client.run_request(args))
            except grpc.RpcError as e:
                failed = "RunPodSandbox %s: %s: %s" % (args.name, e.code().name, e.details())
                break
            t1 = now()
            rows.append({"name": args.name, "id": cri_client.text(reply, 1), "run": [t0, t1]})
        for row in rows:
            request = cri_client.f_bytes(1, row["id"])
            for method, key in (("StopPodSandbox", "stop"), ("RemovePodSandbox", "remove")):
                t0 = now()
                try:
                    cri_client.call(channel, method, request)
                except grpc.RpcError as e:
                    failed = failed or "%s %s: %s: %s" % (method, row["name"], e.code().name,
                                                          e.details())
                row[key] = [t0, now()]
    with open(out, "w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    if failed:
        print("driver: " + failed, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
