"""`nodegate explain` against a stand-in of the API server's contract (tests/webhook/standin.py):
never against Kubernetes itself. Each case builds a 5-node cluster in a fresh stand-in, runs the
built executable (as `nodegate explain` and, once, as `kubectl nodegate` through Debian's
kubectl) and checks its exit status, the scheduler's summary line and the holders it names.

The summary lines expected here are what kube-scheduler's FitError gives for each diagnosis
(pkg/scheduler/framework/types.go, DefaultPreemption's PostFilter); explain/scheduler/
fit_error_test.cc checks the builder against upstream's own test expectations.

Bounds on time ("within the timeout") catch hangs; they are not performance targets
(bench/explain has those).
"""

import copy
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import yaml

SRC = os.environ.get("NODEGATE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(SRC, "tests", "webhook"))
import standin  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from seed import (SYSTEM_NODE_CRITICAL, daemon_pod, daemonset, node, pod,  # noqa: E402
                  seed_story)

BIN = os.path.abspath(os.environ.get("NODEGATE_BIN_DIR", os.path.join(SRC, "build", "bin")))
NODEGATE = os.path.join(BIN, "nodegate")
MAKE_CERT = os.path.join(SRC, "deploy", "webhook", "make-cert.sh")
class Cluster:
    """A fresh stand-in with a kubeconfig (two contexts: "standin", current, and "elsewhere",
    a port nothing listens on)."""

    def __init__(self, tmp, certs):
        self.tmp = tmp
        ca, crt, key = certs
        self.api = standin.ApiServer(crt, key, bookmark_interval=5)
        token = os.path.join(tmp, "token")
        with open(token, "w") as f:
            f.write(self.api.token + "\n")
        dead = socket.socket()
        dead.bind(("127.0.0.1", 0))
        dead_port = dead.getsockname()[1]
        dead.close()
        self.kubeconfig = os.path.join(tmp, "kubeconfig")
        with open(self.kubeconfig, "w") as f:
            yaml.safe_dump({
                "apiVersion": "v1", "kind": "Config", "current-context": "standin",
                "contexts": [
                    {"name": "standin", "context": {"cluster": "standin", "user": "u"}},
                    {"name": "elsewhere", "context": {"cluster": "elsewhere", "user": "u",
                                                      "namespace": "kube-system"}}],
                "clusters": [
                    {"name": "standin", "cluster": {"server": "https://127.0.0.1:%d" % self.api.port,
                                                    "certificate-authority": ca}},
                    {"name": "elsewhere", "cluster": {"server": "https://127.0.0.1:%d" % dead_port,
                                                      "certificate-authority": ca}}],
                "users": [{"name": "u", "user": {"tokenFile": token}}]}, f)

    def put(self, resource, *objs):
        for o in objs:
            self.api.put(resource, o)

    def stop(self):
        self.api.stop()

    def explain(self, *args, timeout=120, env=None):
        cmd = [NODEGATE, "explain", *args, "--kubeconfig", self.kubeconfig]
        started = time.monotonic()
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                           env=env if env is not None else dict(os.environ))
        p.seconds = time.monotonic() - started
        return p


class ExplainTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="explain_test.")
        cls.certs = standin.make_certs(MAKE_CERT, os.path.join(cls.tmp, "certs"))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self):
        d = tempfile.mkdtemp(dir=self.tmp)
        self.c = Cluster(d, self.certs)
        self.addCleanup(self.c.stop)

    def five_nodes(self, **kw):
        self.c.put("nodes", *[node("n%d" % i, **kw) for i in range(1, 6)])

    def assertExit(self, p, code):
        self.assertEqual(p.returncode, code, "exit %d, stdout:\n%s\nstderr:\n%s" % (
            p.returncode, p.stdout, p.stderr))

    # --- the seed story ---

    def seed(self):
        """The seed story (seed.py): coredns-node's pod for n3 stays Pending because
        node-local-dns's pod there, of the same priority, declares 53/UDP."""
        return seed_story(self.c.put)

    SEED_SUMMARY = (
        "0/5 nodes are available: 1 node(s) didn't have free ports for the requested pod ports, "
        "4 node(s) didn't satisfy plugin(s) [NodeAffinity]. no new claims to deallocate, "
        "preemption: 0/5 nodes are available: 1 No preemption victims found for incoming pod, "
        "4 Preemption is not helpful for scheduling.")

    def test_seed_story_explain_pod_names_the_holder(self):
        self.seed()
        p = self.c.explain("pod", "coredns-node-x7k2q", "-n", "kube-system")
        self.assertExit(p, 1)
        lines = p.stdout.splitlines()
        self.assertEqual(lines[0], self.SEED_SUMMARY)
        self.assertIn("n3  NodePorts: node(s) didn't have free ports for the requested pod ports",
                      p.stdout)
        self.assertIn("held by pod kube-system/node-local-dns-q7fz2 of DaemonSet "
                      "kube-system/node-local-dns, container \"node-cache\"", p.stdout)
        self.assertIn("4 other nodes: node(s) didn't satisfy plugin(s) [NodeAffinity]", p.stdout)
        j = json.loads(self.c.explain("pod", "coredns-node-x7k2q", "-n", "kube-system",
                                      "-o", "json").stdout)
        self.assertEqual(j["summary"], self.SEED_SUMMARY)
        holder = j["nodes"][0]["reasons"][0]["ports"][0]
        self.assertEqual((holder["holder"], holder["holderOwner"], holder["port"]),
                         ("kube-system/node-local-dns-q7fz2", "DaemonSet kube-system/node-local-dns",
                          "53/UDP on 0.0.0.0"))
        y = yaml.safe_load(self.c.explain("pod", "coredns-node-x7k2q", "-n", "kube-system",
                                          "-o", "yaml").stdout)
        self.assertEqual(y, j)

    def test_seed_story_explain_daemonset_names_the_holder(self):
        self.seed()
        p = self.c.explain("daemonset", "coredns-node", "-n", "kube-system")
        self.assertExit(p, 1)
        self.assertIn("daemonset kube-system/coredns-node: hostNetwork, host ports 53/UDP on "
                      "0.0.0.0, 53/TCP on 0.0.0.0", p.stdout)
        self.assertIn("should run on 5 of 5 nodes: runs on 4, blocked on 1", p.stdout)
        self.assertIn("n3  should run, its pod kube-system/coredns-node-x7k2q is Pending:", p.stdout)
        self.assertIn("held by pod kube-system/node-local-dns-q7fz2 of DaemonSet "
                      "kube-system/node-local-dns", p.stdout)
        self.assertIn("FitError: " + self.SEED_SUMMARY, p.stdout)
        j = json.loads(self.c.explain("ds", "coredns-node", "-n", "kube-system", "-o",
                                      "json").stdout)
        n3 = [n for n in j["nodes"] if n["name"] == "n3"][0]
        self.assertEqual(n3["state"], "blocked")
        self.assertEqual(n3["verdict"]["reasons"][0]["ports"][0]["holder"],
                         "kube-system/node-local-dns-q7fz2")
        self.assertEqual([n["state"] for n in j["nodes"]],
                         ["runs", "runs", "blocked", "runs", "runs"])

    def test_daemonset_rule_selector_taints_and_no_pod_yet(self):
        self.c.put("nodes", node("n1"), node("n2", taints=[{"key": "dedicated", "value": "gpu",
                                                            "effect": "NoSchedule"}]),
                   node("n3", labels={"kubernetes.io/os": "windows"}), node("n4"),
                   node("n5", cordoned=True))
        ds = daemonset("agent", "monitoring", [(9100, "TCP")])
        ds["spec"]["template"]["spec"]["nodeSelector"] = {"kubernetes.io/os": "linux"}
        self.c.put("daemonsets", ds)
        self.c.put("pods", daemon_pod(ds, "n1", "a1"))
        # n4: another pod holds 9100; no daemon pod for n4 exists yet.
        self.c.put("pods", pod("exporter", node_name="n4", host_ports=[(9100, "TCP")],
                               priority=SYSTEM_NODE_CRITICAL))
        p = self.c.explain("daemonset", "agent", "-n", "monitoring")
        self.assertExit(p, 1)
        self.assertIn("n1  runs: monitoring/agent-a1 (Running)", p.stdout)
        self.assertIn("n2  should not run: taint dedicated=gpu:NoSchedule is not tolerated", p.stdout)
        self.assertIn("n3  should not run: node selector / affinity", p.stdout)
        self.assertIn("n4  should run, no pod of it yet; its pod would not fit:", p.stdout)
        self.assertIn("held by pod default/exporter (no controller)", p.stdout)
        # Cordoned: the controller's pods tolerate node.kubernetes.io/unschedulable.
        self.assertIn("n5  should run, no pod of it yet; it would fit", p.stdout)
        self.assertIn("should run on 3 of 5 nodes: runs on 1, blocked on 1", p.stdout)

    # --- resources, taints, affinity, preemption ---

    def test_insufficient_cpu_names_the_consumers(self):
        self.five_nodes(cpu="2")
        for i in range(1, 6):
            self.c.put("pods", pod("api-%d" % i, node_name="n%d" % i, cpu="1200m",
                                   owner=("ReplicaSet", "api-7f9c")),
                       pod("log-%d" % i, ns="logging", node_name="n%d" % i, cpu="300m",
                           owner=("DaemonSet", "fluent-bit")))
        self.c.put("pods", pod("web-0", cpu="1", owner=("StatefulSet", "web")))
        p = self.c.explain("pod", "web-0")
        self.assertExit(p, 1)
        self.assertEqual(p.stdout.splitlines()[0],
                         "0/5 nodes are available: 5 Insufficient cpu. no new claims to "
                         "deallocate, preemption: 0/5 nodes are available: 5 No preemption "
                         "victims found for incoming pod.")
        self.assertIn("n1  NodeResourcesFit: Insufficient cpu", p.stdout)
        self.assertIn("cpu: the pod requests 1, the node has 2 allocatable and 1500m already "
                      "requested by 2 pod(s), leaving 500m; top: default/api-1 1200m, "
                      "logging/log-1 300m", p.stdout)
        self.assertIn("default/api-1 is ReplicaSet default/api-7f9c's", p.stdout)
        j = json.loads(self.c.explain("pod", "web-0", "-o", "json").stdout)
        top = j["nodes"][0]["reasons"][0]["resource"]["topConsumers"]
        self.assertEqual([(t["pod"], t["owner"], t["amount"]) for t in top],
                         [("default/api-1", "ReplicaSet default/api-7f9c", "1200m"),
                          ("logging/log-1", "DaemonSet logging/fluent-bit", "300m")])

    def test_taints_and_affinity(self):
        self.c.put("nodes",
                   node("gpu-1", labels={"pool": "gpu"},
                        taints=[{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]),
                   node("gpu-2", labels={"pool": "gpu"},
                        taints=[{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]),
                   node("cpu-1", labels={"pool": "general"}), node("cpu-2", labels={"pool": "general"}),
                   node("cpu-3", labels={"pool": "general"}, cordoned=True))
        trainer = pod("trainer")
        trainer["spec"]["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "pool", "operator": "In",
                                                         "values": ["gpu"]}]}]}}}
        self.c.put("pods", trainer)
        p = self.c.explain("pod", "trainer")
        self.assertExit(p, 1)
        self.assertEqual(p.stdout.splitlines()[0],
                         "0/5 nodes are available: 1 node(s) were unschedulable, 2 node(s) didn't "
                         "match Pod's node affinity/selector, 2 node(s) had untolerated taint(s). "
                         "no new claims to deallocate, preemption: 0/5 nodes are available: 5 "
                         "Preemption is not helpful for scheduling.")
        self.assertIn("gpu-1  TaintToleration: node(s) had untolerated taint(s)", p.stdout)
        self.assertIn("nvidia.com/gpu=present:NoSchedule", p.stdout)
        self.assertIn("cpu-1  NodeAffinity: node(s) didn't match Pod's node affinity/selector",
                      p.stdout)
        self.assertIn("cpu-3  NodeUnschedulable: node(s) were unschedulable", p.stdout)
        tolerant = copy.deepcopy(trainer)
        tolerant["metadata"]["name"] = "trainer-2"
        tolerant["spec"]["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists"}]
        self.c.put("pods", tolerant)
        p = self.c.explain("pod", "trainer-2")
        self.assertExit(p, 0)
        self.assertTrue(p.stdout.startswith("fits on 2 of 5 nodes: gpu-1, gpu-2"), p.stdout)

    def test_preemption_names_the_victims(self):
        self.five_nodes(cpu="2")
        for i in range(1, 6):
            self.c.put("pods", pod("keep-%d" % i, node_name="n%d" % i, cpu="1", priority=1000))
        # On n2 two batch pods of lower priority use the rest; on the others one of equal priority.
        self.c.put("pods", pod("batch-a", node_name="n2", cpu="500m", priority=10,
                               owner=("Job", "nightly"), start="2026-12-01T10:00:00Z"),
                   pod("batch-b", node_name="n2", cpu="500m", priority=10,
                       owner=("Job", "nightly"), start="2026-12-01T11:00:00Z"))
        for i in (1, 3, 4, 5):
            self.c.put("pods", pod("peer-%d" % i, node_name="n%d" % i, cpu="1", priority=500))
        self.c.put("pods", pod("urgent", cpu="1", priority=500))
        p = self.c.explain("pod", "urgent")
        self.assertExit(p, 1)
        # Preemption succeeds: the FitError has no preemption part.
        self.assertEqual(p.stdout.splitlines()[0], "0/5 nodes are available: 5 Insufficient cpu.")
        self.assertIn("preemption: evicting pods of lower priority would make room on 1 node; "
                      "the scheduler would nominate n2", p.stdout)
        # Both must go; most important first (batch-a started earlier), as the scheduler lists them.
        self.assertIn("n2  evict default/batch-a (priority 10, Job default/nightly), default/batch-b "
                      "(priority 10, Job default/nightly)", p.stdout)
        j = json.loads(self.c.explain("pod", "urgent", "-o", "json").stdout)
        self.assertEqual(j["preemption"]["nominatedNode"], "n2")

    # --- --pending, a pod from a file ---

    def test_pending_grouped_with_holders_aggregated(self):
        self.five_nodes(cpu="2")
        nld = daemonset("node-local-dns", "kube-system", [(53, "UDP")])
        for i in range(1, 4):
            self.c.put("pods", daemon_pod(nld, "n%d" % i, "x%d" % i))
        for i in (4, 5):
            self.c.put("pods", pod("dns-%d" % i, ns="test", node_name="n%d" % i,
                                   host_ports=[(53, "UDP")], priority=SYSTEM_NODE_CRITICAL))
        self.c.put("pods", pod("dnsmasq", ns="edge", host_ports=[(53, "UDP")]),
                   pod("huge", ns="ml", cpu="8"), pod("huge-2", ns="ml", cpu="8"))
        p = self.c.explain("--pending", "-A")
        self.assertExit(p, 1)
        self.assertIn("pending pods in all namespaces: 3 (3 fit nowhere, 0 would fit now)", p.stdout)
        self.assertIn("host port 53/UDP: held on 3 nodes by pods of DaemonSet "
                      "kube-system/node-local-dns; held on 1 node by pod test/dns-4; held on 1 "
                      "node by pod test/dns-5", p.stdout)
        self.assertIn("  edge/dnsmasq (5 of 5 nodes tried)", p.stdout)
        self.assertIn("Insufficient cpu: on 5 nodes\n  ml/huge (5 of 5 nodes tried)\n  "
                      "ml/huge-2 (5 of 5 nodes tried)", p.stdout)
        self.assertIn("ml/huge: 0/5 nodes are available: 5 Insufficient cpu.", p.stdout)
        p = self.c.explain("--pending", "-n", "ml")
        self.assertIn("pending pods in namespace ml: 2", p.stdout)
        self.assertNotIn("dnsmasq", p.stdout)
        j = json.loads(self.c.explain("--pending", "-A", "-o", "json").stdout)
        self.assertEqual(j["fitNowhere"], 3)

    def test_pod_from_a_file(self):
        self.five_nodes()
        self.c.put("pods", pod("ingress", node_name="n1", host_ports=[(443, "TCP")]))
        path = os.path.join(self.c.tmp, "web.yaml")
        with open(path, "w") as f:
            yaml.safe_dump(pod("web", host_ports=[(443, "TCP")]), f)
        p = self.c.explain("pod", "-f", path)
        self.assertExit(p, 0)
        self.assertTrue(p.stdout.startswith("fits on 4 of 5 nodes: n2, n3, n4, n5"), p.stdout)
        self.assertIn("n1  NodePorts", p.stdout)
        # A workload file: the pod its controller would create.
        deploy = {"apiVersion": "apps/v1", "kind": "Deployment",
                  "metadata": {"name": "big", "namespace": "default"},
                  "spec": {"template": {"metadata": {"labels": {"app": "big"}},
                                        "spec": {"containers": [{"name": "c", "image": "x",
                                                                 "resources": {"requests": {"cpu": "64"}}}]}}}}
        with open(path, "w") as f:
            yaml.safe_dump(deploy, f)
        p = self.c.explain("pod", "-f", path)
        self.assertExit(p, 1)
        self.assertIn("5 Insufficient cpu", p.stdout.splitlines()[0])

    # --- bad input, unreachable, forbidden ---

    def test_a_file_that_is_not_a_pod(self):
        self.five_nodes()
        cases = {
            "service.yaml": ("apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: {}\n",
                             "a Service, not a Pod"),
            "broken.yaml": ("kind: Pod\nmetadata: {name: [\n", "broken.yaml"),
            "nocontainers.json": (json.dumps({"kind": "Pod", "metadata": {"name": "x"},
                                              "spec": {"containers": []}}), "containers"),
            "two.yaml": ("kind: Pod\nmetadata: {name: a}\n---\nkind: Pod\nmetadata: {name: b}\n",
                         "expected one Pod"),
            "scalar.yaml": ("42\n", "expected a Pod object"),
        }
        for name, (text, message) in cases.items():
            path = os.path.join(self.c.tmp, name)
            with open(path, "w") as f:
                f.write(text)
            p = self.c.explain("pod", "-f", path)
            self.assertExit(p, 2)
            self.assertIn(message, p.stderr, name)
            self.assertEqual(p.stdout, "", name)
        p = self.c.explain("pod", "-f", os.path.join(self.c.tmp, "missing.yaml"))
        self.assertExit(p, 2)
        self.assertExit(self.c.explain("pod", "nope"), 2)
        self.assertIn("pod default/nope not found", self.c.explain("pod", "nope").stderr)
        self.assertExit(self.c.explain("daemonset", "nope"), 2)
        self.assertExit(self.c.explain("--bogus"), 2)
        self.assertExit(self.c.explain(), 2)
        self.assertExit(self.c.explain("-A", "pod", "x"), 2)

    def test_forbidden_reads_are_a_clear_error(self):
        self.seed()
        self.c.api.forbid("list", "pods")
        p = self.c.explain("pod", "coredns-node-x7k2q", "-n", "kube-system")
        self.assertExit(p, 3)
        self.assertIn('pods is forbidden: User "system:serviceaccount:nodegate:nodegate" cannot list '
                      'resource "pods" in API group "" at the cluster scope', p.stderr)
        self.assertIn("needs get and list on pods and nodes", p.stderr)
        self.c.api.clear_faults()
        self.c.api.forbid("get", "pods")
        p = self.c.explain("pod", "coredns-node-x7k2q", "-n", "kube-system")
        self.assertExit(p, 3)
        self.assertIn("cannot get resource \"pods\"", p.stderr)
        self.c.api.clear_faults()
        self.c.api.revoke_token()
        p = self.c.explain("--pending")
        self.assertExit(p, 3)
        self.assertIn("401", p.stderr)

    def test_unreachable_api_server_within_the_timeout(self):
        # Nothing listens: refused at once.
        p = self.c.explain("--pending", "--context", "elsewhere")
        self.assertExit(p, 3)
        self.assertIn("connect", p.stderr)
        self.assertLess(p.seconds, 10)
        # Something accepts and never answers (a hung API server behind a load balancer).
        silent = socket.socket()
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        self.addCleanup(silent.close)
        held = []
        stop = threading.Event()

        def accept():
            silent.settimeout(0.2)
            while not stop.is_set():
                try:
                    held.append(silent.accept()[0])
                except OSError:
                    pass
        t = threading.Thread(target=accept, daemon=True)
        t.start()
        self.addCleanup(lambda: (stop.set(), t.join(), [s.close() for s in held]))
        with open(self.c.kubeconfig) as f:
            config = yaml.safe_load(f)
        config["clusters"][1]["cluster"]["server"] = "https://127.0.0.1:%d" % silent.getsockname()[1]
        hung = os.path.join(self.c.tmp, "hung-kubeconfig")
        with open(hung, "w") as f:
            yaml.safe_dump(config, f)
        started = time.monotonic()
        p = subprocess.run([NODEGATE, "explain", "--pending", "--kubeconfig", hung, "--context",
                            "elsewhere", "--request-timeout", "2"], capture_output=True, text=True,
                           timeout=60)
        elapsed = time.monotonic() - started
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertIn("127.0.0.1", p.stderr)
        self.assertLess(elapsed, 20, "gave up after %.1f s with --request-timeout 2" % elapsed)

    def test_context_and_kubeconfig_environment(self):
        self.seed()
        env = dict(os.environ, KUBECONFIG="/nonexistent:" + self.c.kubeconfig)
        p = subprocess.run([NODEGATE, "explain", "pod", "coredns-node-x7k2q", "-n", "kube-system"],
                           capture_output=True, text=True, env=env, timeout=60)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertEqual(p.stdout.splitlines()[0], self.SEED_SUMMARY)
        p = self.c.explain("pod", "x", "--context", "nope")
        self.assertExit(p, 2)
        self.assertIn('no context named "nope"', p.stderr)

    # --- hostile objects from the API ---

    def test_malformed_objects_from_the_api(self):
        self.seed()
        bad = pod("bad", node_name="n1")
        bad["spec"]["containers"] = "not a list"
        worse = pod("worse", node_name="n2")
        worse["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "lots"}}
        self.c.put("pods", bad, worse)
        p = self.c.explain("pod", "coredns-node-x7k2q", "-n", "kube-system")
        self.assertExit(p, 1)
        self.assertEqual(p.stdout.splitlines()[0], self.SEED_SUMMARY)
        self.assertIn("2 pod(s) could not be read and are left out", p.stderr)
        p = self.c.explain("pod", "bad")
        self.assertExit(p, 2)
        self.assertIn("spec.containers", p.stderr)
        # A node nodegate cannot read is a node it would say nothing about: refused, said why.
        broken = node("n9")
        broken["status"]["allocatable"]["cpu"] = {"oops": 1}
        self.c.put("nodes", broken)
        p = self.c.explain("--pending")
        self.assertExit(p, 3)
        self.assertIn("node(s) could not be read", p.stderr)

    # --- kubectl nodegate, through Debian's kubectl ---

    def test_kubectl_plugin_through_debians_kubectl(self):
        kubectl = subprocess.run(["bash", "-c", "source scripts/lib/arch.sh && debian_kubectl"],
                                 cwd=SRC, capture_output=True, text=True).stdout.strip()
        if not kubectl:
            self.fail("Debian's kubectl (kubernetes-client) is missing: scripts/install-deps.sh")
        self.seed()
        self.assertTrue(os.path.islink(os.path.join(BIN, "kubectl-nodegate")) or
                        os.path.isfile(os.path.join(BIN, "kubectl-nodegate")))
        env = {"PATH": BIN + ":/usr/bin:/bin", "HOME": self.c.tmp, "KUBECONFIG": self.c.kubeconfig}
        listed = subprocess.run([kubectl, "plugin", "list"], capture_output=True, text=True,
                                env=env, timeout=60)
        self.assertIn(os.path.join(BIN, "kubectl-nodegate"), listed.stdout + listed.stderr)
        p = subprocess.run([kubectl, "nodegate", "explain", "pod", "coredns-node-x7k2q", "-n",
                            "kube-system"], capture_output=True, text=True, env=env, timeout=120)
        self.assertEqual(p.returncode, 1, p.stderr)
        direct = self.c.explain("pod", "coredns-node-x7k2q", "-n", "kube-system")
        self.assertEqual(p.stdout, direct.stdout)
        p = subprocess.run([kubectl, "nodegate", "explain", "daemonset", "coredns-node", "-n",
                            "kube-system", "-o", "json"], capture_output=True, text=True, env=env,
                           timeout=120)
        self.assertEqual(json.loads(p.stdout)["blocked"], 1)


if __name__ == "__main__":
    unittest.main(verbosity=2)
