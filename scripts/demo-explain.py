"""make demo, step 12: the seed story from the cluster's side. A stand-in of the API server's
contract (tests/webhook/standin.py; no kube-apiserver runs here) holds five nodes and the seed
story (tests/explain/seed.py): the CoreDNS DaemonSet's pod for node n3 stays Pending because
node-local-dns's pod there declares 53/UDP. Debian's kubectl shows what it can; then `kubectl
nodegate explain` (kubectl-nodegate found on PATH) says where the DaemonSet should run and who
holds the port where it does not.

    python3 scripts/demo-explain.py BIN_DIR SOURCE_DIR
"""

import os
import shutil
import subprocess
import sys
import tempfile

BIN, SRC = os.path.abspath(sys.argv[1]), sys.argv[2]
sys.path.insert(0, os.path.join(SRC, "tests", "webhook"))
sys.path.insert(0, os.path.join(SRC, "tests", "explain"))
import standin  # noqa: E402
from seed import seed_story  # noqa: E402


def show(cmd, env):
    shown = ["kubectl" if c.endswith("/kubectl") else os.path.basename(c) if i == 0 else c
             for i, c in enumerate(cmd)]
    print("   \033[2m$ %s\033[0m" % " ".join(shown), flush=True)
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    for line in (p.stdout + p.stderr).splitlines():
        print("     " + line)
    return p.returncode


def main():
    tmp = tempfile.mkdtemp(prefix="nodegate-demo-explain.")
    api = None
    try:
        ca, crt, key = standin.make_certs(os.path.join(SRC, "deploy", "webhook", "make-cert.sh"),
                                          os.path.join(tmp, "certs"))
        api = standin.ApiServer(crt, key)
        seed_story(api.put)
        token = os.path.join(tmp, "token")
        with open(token, "w") as f:
            f.write(api.token)
        kubeconfig = os.path.join(tmp, "kubeconfig")
        standin.kubeconfig(kubeconfig, api.port, ca, token)
        kubectl = subprocess.run(["bash", "-c", "source scripts/lib/arch.sh && debian_kubectl"],
                                 cwd=SRC, capture_output=True, text=True).stdout.strip()
        env = {"PATH": BIN + ":/usr/bin:/bin", "HOME": tmp, "KUBECONFIG": kubeconfig}
        if not kubectl:
            print("   (Debian's kubectl is missing: scripts/install-deps.sh; using nodegate itself)")
            show([os.path.join(BIN, "nodegate"), "explain", "daemonset", "coredns-node", "-n",
                  "kube-system"], env)
            return
        show([kubectl, "get", "pods", "-n", "kube-system", "--field-selector",
              "status.phase=Pending"], env)
        print("   kubectl describe pod would show the scheduler's FailedScheduling event; the")
        print("   stand-in runs no scheduler and serves no Events, so here it says Events: <none>.")
        print("   nodegate explain prints that event's message first (the FitError line), then")
        print("   who holds what:")
        show([kubectl, "nodegate", "explain", "daemonset", "coredns-node", "-n", "kube-system"],
             env)
        show([kubectl, "nodegate", "explain", "pod", "coredns-node-x7k2q", "-n", "kube-system"],
             env)
    finally:
        if api:
            api.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
