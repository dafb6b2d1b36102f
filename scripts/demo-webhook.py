"""make demo, step 11: the DNS pod of the seed story created through the API server with a
fixed spec.nodeName is denied at the door by `nodegate webhook`, which names the pod holding the
port. The API server is tests/webhook/standin.py's (node worker-1 and the mirror pods of the
node's static pods); the request is built and its answer shown as the API server would.

    python3 scripts/demo-webhook.py NODEGATE SOURCE_DIR
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

import yaml

NODEGATE, SRC = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(SRC, "tests", "webhook"))
import standin  # noqa: E402

NODE = "worker-1"


def mirror_pod(path):
    """The mirror pod a kubelet creates for a static manifest (name suffixed with the node)."""
    with open(path) as f:
        pod = yaml.safe_load(f)
    meta = pod["metadata"]
    meta["name"] = meta["name"] + "-" + NODE
    meta.setdefault("namespace", "default")
    meta.setdefault("annotations", {}).update({"kubernetes.io/config.mirror": "demo",
                                               "kubernetes.io/config.source": "file"})
    pod["spec"]["nodeName"] = NODE
    return pod


def main():
    tmp = tempfile.mkdtemp(prefix="nodegate-demo-webhook.")
    proc = api = None
    try:
        ca, crt, key = standin.make_certs(os.path.join(SRC, "deploy", "webhook", "make-cert.sh"),
                                          os.path.join(tmp, "certs"))
        api = standin.ApiServer(crt, key)
        with open(os.path.join(SRC, "tests", "admit", "testdata", "node.yaml")) as f:
            api.put("nodes", yaml.safe_load(f))
        manifests = os.path.join(SRC, "conf", "manifests")
        for name in sorted(os.listdir(manifests)):
            api.put("pods", mirror_pod(os.path.join(manifests, name)))
        token = os.path.join(tmp, "token")
        with open(token, "w") as f:
            f.write(api.token)
        kubeconfig = os.path.join(tmp, "kubeconfig")
        standin.kubeconfig(kubeconfig, api.port, ca, token)
        proc = subprocess.Popen([NODEGATE, "webhook", "--listen", "127.0.0.1:0",
                                 "--metrics-listen", "127.0.0.1:0", "--tls-cert", crt,
                                 "--tls-key", key, "--kubeconfig", kubeconfig],
                                stderr=subprocess.PIPE, text=True)
        first = proc.stderr.readline()
        print("  " + first.strip())
        port, metrics = map(int, re.search(r"\(port (\d+)\).*\(port (\d+)\)", first).groups())
        for _ in range(300):
            try:
                if urllib.request.urlopen("http://127.0.0.1:%d/readyz" % metrics).status == 200:
                    break
            except OSError:
                time.sleep(0.1)
        with open(os.path.join(SRC, "conf", "candidates", "coredns-hostnetwork.yaml")) as f:
            dns = yaml.safe_load(f)
        dns["spec"]["nodeName"] = NODE
        dns["spec"]["priority"] = 2000001000  # system-node-critical, as Priority admission sets
        print("  $ kubectl create -f coredns-hostnetwork.yaml   # with spec.nodeName: %s" % NODE)
        client = standin.WebhookClient(port, ca)
        response, error = client.review(dns)
        print("  " + (error or "pod/%s created" % dns["metadata"]["name"]))
        print("  (answer: allowed=%s, status.code=%s, status.reason=%s)" % (
            response["allowed"], response.get("status", {}).get("code"),
            response.get("status", {}).get("reason")))
        time.sleep(0.2)
    finally:
        if proc:
            proc.terminate()
            proc.wait()
        if api:
            api.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
