"""`nodegate webhook` against stand-ins for both sides of the API server (standin.py): the
review contract, the kubelet's verdicts with their explanations, the watch-based cache
(deletes, 410 relists, 50 racing CREATEs), failure modes (API server down or silent) and
hostile clients. Run by CTest (webhook_contract_test) with NODEGATE_BIN_DIR and
NODEGATE_SOURCE_DIR; no kube-apiserver is needed.

Bounds on time here ("answered", "closed") are generous limits that catch a hang, not
performance targets (those are in bench/webhook).
"""

import concurrent.futures
import copy
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.request

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import standin  # noqa: E402

SRC = os.environ.get("NODEGATE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.environ.get("NODEGATE_BIN_DIR", os.path.join(SRC, "build", "bin"))
NODEGATE = os.path.join(BIN, "nodegate")
MAKE_CERT = os.path.join(SRC, "deploy", "webhook", "make-cert.sh")
ADMIT_DATA = os.path.join(SRC, "tests", "admit", "testdata")
FIXTURES = os.path.join(SRC, "tests", "webhook", "testdata")
SERVICE_NAME = "nodegate-webhook.nodegate.svc"
WAIT = 30  # seconds: the longest any condition below may take before the test fails


def load_yaml(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def pods_in(path):
    out = []
    for doc in load_yaml(path):
        out.extend(doc["items"] if doc.get("kind") in ("List", "PodList") else [doc])
    return out


def node(name, cpu="2", memory="4Gi", pods="110", base=None):
    obj = copy.deepcopy(base) if base else {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/os": "linux"}},
        "status": {}}
    obj["metadata"]["name"] = name
    if base is None:
        obj["status"]["allocatable"] = {"cpu": cpu, "memory": memory, "pods": pods}
        obj["status"]["capacity"] = dict(obj["status"]["allocatable"])
    return obj


def pod_from(workload_file, name, node_name, cpu=None, memory=None, host_ports=(),
             priority=None, annotations=None):
    """A pod as the workload's controller makes it from the template (kubectl-made fixture),
    with the template's nodeName set, plus what the case needs."""
    with open(os.path.join(FIXTURES, workload_file)) as f:
        workload = json.load(f)
    template = copy.deepcopy(workload["spec"]["template"])
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "namespace": workload["metadata"]["namespace"],
                        "labels": template["metadata"].get("labels", {})},
           "spec": template["spec"]}
    if annotations:
        pod["metadata"]["annotations"] = annotations
    pod["spec"]["nodeName"] = node_name
    container = pod["spec"]["containers"][0]
    requests = {}
    if cpu:
        requests["cpu"] = cpu
    if memory:
        requests["memory"] = memory
    container["resources"] = {"requests": requests} if requests else {}
    for port, proto in host_ports:
        container.setdefault("ports", []).append(
            {"containerPort": port, "hostPort": port, "protocol": proto})
    if priority is not None:
        pod["spec"]["priority"] = priority
    return pod


def wait_for(condition, what, timeout=WAIT):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError("not within %d s: %s" % (timeout, what))


class Webhook:
    """A running `nodegate webhook` (JSON log lines), its ports read from its "serving" line."""

    def __init__(self, tmp, kubeconfig_path, certs, extra=(), shutdown_delay="0s"):
        self.cert_dir = os.path.join(tmp, "serving")
        os.makedirs(self.cert_dir, exist_ok=True)
        for f in ("tls.crt", "tls.key"):
            shutil.copy(certs[f], os.path.join(self.cert_dir, f))
        self.proc = subprocess.Popen(
            [NODEGATE, "webhook", "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0",
             "--tls-cert", os.path.join(self.cert_dir, "tls.crt"),
             "--tls-key", os.path.join(self.cert_dir, "tls.key"),
             "--kubeconfig", kubeconfig_path, "--log-format", "json",
             "--shutdown-delay", shutdown_delay, *extra],
            stderr=subprocess.PIPE, text=True)
        self.log = []
        first = self.proc.stderr.readline()
        self.log.append(first)
        try:
            line = json.loads(first)
        except ValueError:
            line = {}
        if line.get("msg") != "serving":
            self.proc.kill()
            raise AssertionError("nodegate webhook did not start: " + first + self.proc.stderr.read())
        self.port, self.metrics_port = line["port"], line["metrics_port"]
        threading.Thread(target=self._drain, daemon=True).start()

    def events(self, msg=None):
        """The JSON log lines so far (each must parse), those with `msg` when given."""
        out = []
        for line in list(self.log):
            event = json.loads(line)
            if msg is None or event.get("msg") == msg:
                out.append(event)
        return out

    def _drain(self):
        for line in self.proc.stderr:
            self.log.append(line)

    def get(self, path, port=None):
        url = "http://127.0.0.1:%d%s" % (port or self.metrics_port, path)
        try:
            with urllib.request.urlopen(url, timeout=10) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def metric(self, name):
        _, text = self.get("/metrics")
        total = 0.0
        found = False
        for line in text.splitlines():
            if line.startswith(name + " ") or line.startswith(name + "{"):
                total += float(line.rsplit(" ", 1)[1])
                found = True
        return total if found else None

    def wait_ready(self):
        wait_for(lambda: self.get("/readyz")[0] == 200, "webhook ready")

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout=WAIT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise AssertionError("nodegate webhook did not stop on SIGTERM")
        return code


class Cluster(unittest.TestCase):
    """One stand-in API server and one webhook for a test class; each test uses nodes of its
    own, so assumed pods of one test never meet another's."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="webhook_test.")
        certs = os.path.join(cls.tmp, "certs")
        standin.make_certs(MAKE_CERT, certs)
        cls.certs = {"ca": certs + "/ca.crt", "tls.crt": certs + "/tls.crt",
                     "tls.key": certs + "/tls.key"}
        cls.api = standin.ApiServer(cls.certs["tls.crt"], cls.certs["tls.key"])
        cls.token_file = os.path.join(cls.tmp, "token")
        with open(cls.token_file, "w") as f:
            f.write(cls.api.token + "\n")
        cls.kubeconfig = os.path.join(cls.tmp, "kubeconfig")
        standin.kubeconfig(cls.kubeconfig, cls.api.port, cls.certs["ca"], cls.token_file)
        cls.seed()
        cls.webhook = Webhook(cls.tmp, cls.kubeconfig, cls.certs,
                              extra=("--read-timeout", getattr(cls, "READ_TIMEOUT", "10s")))
        cls.webhook.wait_ready()
        cls.client = standin.WebhookClient(cls.webhook.port, cls.certs["ca"])

    @classmethod
    def seed(cls):
        worker = load_yaml(os.path.join(ADMIT_DATA, "node.yaml"))[0]
        cls.api.put("nodes", worker)
        for pod in pods_in(os.path.join(ADMIT_DATA, "pods", "holder-pod.yaml")):
            cls.api.put("pods", pod)

    @classmethod
    def tearDownClass(cls):
        try:
            code = cls.webhook.stop()
            assert code == 0, "exit status %d" % code
        finally:
            cls.api.stop()
            shutil.rmtree(cls.tmp, ignore_errors=True)

    def review(self, pod, **kwargs):
        return self.client.review(pod, **kwargs)


class ReviewTest(Cluster):
    def test_fits(self):
        self.api.put("nodes", node("fits"))
        wait_for(lambda: not self.review(pod_from("report-job.json", "probe", "fits"),
                                         dry_run=True)[0].get("warnings"), "the fits node")
        response, error = self.review(pod_from("web-deployment.json", "web-1", "fits", cpu="100m"))
        self.assertTrue(response["allowed"])
        self.assertIsNone(error)
        self.assertNotIn("warnings", response)
        self.assertNotIn("patch", response)

    def test_out_of_cpu_names_the_consumer(self):
        _, error = self.review(pod_from("web-deployment.json", "web-2", "worker-1", cpu="1500m"),
                               dry_run=True)
        self.assertEqual(
            error.split(";")[0],
            'Error from server (OutOfcpu): admission webhook "pods.nodegate.io" denied the request: '
            "the kubelet on node worker-1 would reject this pod (OutOfcpu): Node didn't have enough "
            "resource: cpu, requested: 1500, used: 900, capacity: 1900")
        self.assertIn("monitoring/metrics-holder 900m", error)

    def test_out_of_memory_names_the_consumer(self):
        response, error = self.review(
            pod_from("web-deployment.json", "web-3", "worker-1", memory="2561Mi"), dry_run=True)
        self.assertFalse(response["allowed"])
        self.assertEqual(response["status"]["code"], 403)
        self.assertEqual(response["status"]["reason"], "OutOfmemory")
        self.assertIn("monitoring/metrics-holder 1Gi", error)

    def test_out_of_pods(self):
        self.api.put("nodes", node("tiny", pods="1"))
        self.api.put("pods", pod_from("report-job.json", "report-a", "tiny"))
        wait_for(lambda: self.review(pod_from("report-job.json", "report-b", "tiny"),
                                     dry_run=True)[1], "the tiny node in the cache")
        _, error = self.review(pod_from("report-job.json", "report-b", "tiny"), dry_run=True)
        self.assertIn("Error from server (OutOfpods)", error)
        self.assertIn("the node allows 1 pods and 1 are already on it", error)

    def test_host_port_taken_names_the_holder(self):
        _, error = self.review(pod_from("web-deployment.json", "web-4", "worker-1",
                                        host_ports=[(9000, "TCP")]), dry_run=True)
        self.assertIn("Error from server (NodePorts)", error)
        self.assertIn("Predicate NodePorts failed: node(s) didn't have free ports for the "
                      "requested pod ports", error)
        self.assertIn("monitoring/metrics-holder", error)

    def test_critical_pod_is_allowed_by_preemption_with_a_warning(self):
        cp = os.path.join(ADMIT_DATA, "control-plane")
        self.api.put("nodes", load_yaml(os.path.join(cp, "node.yaml"))[0])
        for pod in pods_in(os.path.join(cp, "pods.yaml")):
            pod["spec"].setdefault("priority", 2000000000 if pod["spec"].get(
                "priorityClassName") == "system-cluster-critical" else 0)
            self.api.put("pods", pod)
        candidate = pod_from("coredns-deployment.json", "etcd-backup", "cp-1", cpu="500m",
                             memory="512Mi", priority=2000000000)
        response, error = wait_for(
            lambda: (lambda r: r if r[0].get("warnings") else None)(
                self.review(candidate, dry_run=True)), "cp-1 in the cache")
        self.assertIsNone(error)
        self.assertTrue(response["allowed"])
        [warning] = response["warnings"]
        self.assertLessEqual(len(warning.encode()), 120)
        self.assertIn("the kubelet on cp-1 admits this pod by evicting", warning)
        self.assertIn("web/cache-1", warning)  # what nodegate admit names (KubeletEquivalenceTest)
        self.assertNotIn("coredns", warning)  # critical pods are never evicted

    def test_mirror_pods_and_nodes_are_allowed(self):
        holder_port = [(9000, "TCP")]
        mirror = pod_from("web-deployment.json", "static-web-worker-1", "worker-1",
                          host_ports=holder_port,
                          annotations={"kubernetes.io/config.mirror": "abc",
                                       "kubernetes.io/config.source": "file"})
        response, error = self.review(mirror, username="system:node:worker-1",
                                      groups=("system:nodes", "system:authenticated"))
        self.assertTrue(response["allowed"])
        response, _ = self.review(mirror)
        self.assertTrue(response["allowed"])  # a mirror pod from anyone
        plain = pod_from("web-deployment.json", "web-5", "worker-1", host_ports=holder_port)
        response, _ = self.review(plain, username="system:node:worker-1",
                                  groups=("system:nodes", "system:authenticated"))
        self.assertTrue(response["allowed"])
        self.assertFalse(self.review(plain, dry_run=True)[0]["allowed"])

    def test_unknown_node_is_allowed_with_a_warning(self):
        response, error = self.review(pod_from("web-deployment.json", "web-6", "worker-404"))
        self.assertTrue(response["allowed"])
        self.assertEqual(response["warnings"],
                         ["nodegate: node worker-404 is not known to the API server; not checked"])

    def test_fifty_concurrent_creates_race_for_the_last_slots(self):
        self.api.put("nodes", node("race", pods="10"))
        for i in range(7):
            self.api.put("pods", pod_from("report-job.json", "old-%d" % i, "race"))
        wait_for(lambda: self.review(pod_from("report-job.json", "probe", "race"),
                                     dry_run=True)[0].get("warnings") is None and
                 self.webhook.metric("nodegate_webhook_cached_pods") >= 8,
                 "the race node's pods in the cache")
        barrier = threading.Barrier(50)

        def create(i):
            client = standin.WebhookClient(self.webhook.port, self.certs["ca"])
            pod = pod_from("report-job.json", "racer-%d" % i, "race")
            barrier.wait()  # then all connect and ask at once
            return client.review(pod)[0]["allowed"]

        with concurrent.futures.ThreadPoolExecutor(50) as pool:
            allowed = list(pool.map(create, range(50)))
        self.assertEqual(sum(allowed), 3)

    def test_a_pod_deleted_in_the_watch_frees_its_resources(self):
        self.api.put("nodes", node("del", cpu="1"))
        holder = self.api.put("pods", pod_from("web-deployment.json", "hog", "del", cpu="800m"))
        candidate = pod_from("web-deployment.json", "newcomer", "del", cpu="500m")
        wait_for(lambda: self.review(candidate, dry_run=True)[1], "the hog in the cache")
        self.api.delete("pods", holder)
        wait_for(lambda: self.review(candidate, dry_run=True)[0]["allowed"],
                 "the deleted pod's cpu freed")
        # A pod that finishes (Failed) leaves the selector's view: it is gone too.
        failed = self.api.put("pods", pod_from("web-deployment.json", "hog2", "del", cpu="800m"))
        wait_for(lambda: self.review(candidate, dry_run=True)[1], "the second hog in the cache")
        failed["status"] = {"phase": "Failed"}
        self.api.put("pods", failed)
        wait_for(lambda: self.review(candidate, dry_run=True)[0]["allowed"],
                 "the failed pod's cpu freed")

    def test_410_gone_relists(self):
        lists = self.webhook.metric("nodegate_webhook_cache_lists_total")
        relists = self.webhook.metric("nodegate_webhook_cache_relists_total")
        self.api.put("nodes", node("relist"))
        self.api.compact()
        self.api.end_watches()
        wait_for(lambda: self.webhook.metric("nodegate_webhook_cache_lists_total") >= lists + 2,
                 "both caches listed again")
        self.assertGreaterEqual(self.webhook.metric("nodegate_webhook_cache_relists_total"),
                                relists + 2)
        self.assertTrue(any("is gone (410)" in e["msg"] for e in self.webhook.events()))
        self.api.put("pods", pod_from("web-deployment.json", "late", "relist",
                                      host_ports=[(7000, "TCP")]))
        wait_for(lambda: self.review(pod_from("web-deployment.json", "late2", "relist",
                                              host_ports=[(7000, "TCP")]), dry_run=True)[1],
                 "a pod added after the relist seen")

    def test_dry_run_leaves_no_assumed_pod(self):
        self.api.put("nodes", node("dry", pods="1"))
        wait_for(lambda: not self.review(pod_from("report-job.json", "probe", "dry"),
                                         dry_run=True)[0].get("warnings"), "the dry node")
        for i in range(3):
            self.assertTrue(self.review(pod_from("report-job.json", "d%d" % i, "dry"),
                                        dry_run=True)[0]["allowed"])
        self.assertTrue(self.review(pod_from("report-job.json", "real", "dry"))[0]["allowed"])
        _, error = self.review(pod_from("report-job.json", "second", "dry"))
        self.assertIn("(OutOfpods)", error)

    def test_probes_and_metrics(self):
        self.assertEqual(self.webhook.get("/healthz"), (200, "ok\n"))
        self.assertEqual(self.webhook.get("/readyz"), (200, "ok\n"))
        self.review(pod_from("web-deployment.json", "m", "worker-1", host_ports=[(9000, "TCP")]),
                    dry_run=True)
        status, text = self.webhook.get("/metrics")
        self.assertEqual(status, 200)
        self.assertRegex(text, r'nodegate_webhook_reviews_total\{verdict="denied",reason="NodePorts"\} [1-9]')
        self.assertIn("# TYPE nodegate_webhook_review_duration_seconds histogram", text)
        self.assertRegex(text, r'nodegate_webhook_cache_age_seconds\{resource="pods"\} [0-9.e-]+\n')
        self.assertIn("nodegate_webhook_cache_synced 1\n", text)

    def test_certificate_rotation(self):
        def served():
            ctx = ssl.create_default_context(cafile=self.certs["ca"])
            with socket.create_connection(("127.0.0.1", self.webhook.port), timeout=10) as s:
                with ctx.wrap_socket(s, server_hostname=SERVICE_NAME) as t:
                    return t.getpeercert(binary_form=True)

        before = served()
        new_dir = os.path.join(self.tmp, "rotated")
        shutil.copytree(os.path.dirname(self.certs["ca"]), new_dir)
        standin.make_certs(MAKE_CERT, new_dir)  # same CA, new key and certificate
        for f in ("tls.key", "tls.crt"):  # renamed into place, as a Secret volume updates
            shutil.copy(os.path.join(new_dir, f), os.path.join(self.webhook.cert_dir, f + ".new"))
            os.rename(os.path.join(self.webhook.cert_dir, f + ".new"),
                      os.path.join(self.webhook.cert_dir, f))
        with open(os.path.join(new_dir, "tls.crt")) as f:
            after = ssl.PEM_cert_to_DER_cert(f.read())
        self.assertNotEqual(before, after)
        wait_for(lambda: served() == after, "the new certificate served")
        self.assertTrue(self.review(pod_from("web-deployment.json", "x", "worker-1"),
                                    dry_run=True)[0]["allowed"])


class HostileClientTest(Cluster):
    # 500 handshakes at once must all finish within one request's time, also on a loaded
    # machine under the sanitizers; the slow client is cut off after it.
    READ_TIMEOUT = "20s"

    def raw_post(self, body, path="/validate?timeout=5s", method="POST"):
        conn = standin._ServiceConnection(self.webhook.port, self.client.context, SERVICE_NAME, 30)
        conn.request(method, path, body=body, headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        return resp.status, resp.read().decode(errors="replace")

    def test_body_over_3_mib_is_refused(self):
        # Refused from its Content-Length, before a byte of the body is read.
        ctx = ssl.create_default_context(cafile=self.certs["ca"])
        with ctx.wrap_socket(socket.create_connection(("127.0.0.1", self.webhook.port)),
                             server_hostname=SERVICE_NAME) as sock:
            sock.settimeout(WAIT)
            sock.sendall(b"POST /validate?timeout=5s HTTP/1.1\r\nHost: x\r\n"
                         b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n{"
                         % ((3 << 20) + 1))
            reply = b""
            while True:
                data = sock.recv(65536)
                if not data:
                    break
                reply += data
        self.assertTrue(reply.startswith(b"HTTP/1.1 413 "), reply[:100])
        self.assertIn(b"larger than 3 MiB", reply)
        # A whole review over the limit, sent as the API server never would: refused too (the
        # answer, or the connection closed under the sender).
        review = standin.create_v1_admission_review(pod_from("web-deployment.json", "big", "worker-1"))
        review["request"]["object"]["metadata"]["annotations"] = {"pad": "x" * (3 << 20)}
        try:
            status, _ = self.raw_post(json.dumps(review).encode())
            self.assertEqual(status, 413)
        except (ssl.SSLError, ConnectionResetError, BrokenPipeError):
            pass
        self.assertGreaterEqual(self.webhook.metric("nodegate_webhook_requests_refused_total"), 1)

    def test_malformed_bodies_are_400(self):
        for body in (b"{", b"not json", b"[]", b'{"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview", "request": {"uid": "1"}}',
                     b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}',
                     b"{" * 5000 + b"}" * 5000, b"\xff\xfe"):
            status, _ = self.raw_post(body)
            self.assertEqual(status, 400, body[:40])
        self.assertEqual(self.raw_post(b"", path="/validate", method="GET")[0], 405)
        self.assertEqual(self.raw_post(b"{}", path="/mutate")[0], 404)

    def test_slow_client_is_cut_off(self):
        ctx = ssl.create_default_context(cafile=self.certs["ca"])
        sock = ctx.wrap_socket(socket.create_connection(("127.0.0.1", self.webhook.port)),
                               server_hostname=SERVICE_NAME)
        limit = 2 * WAIT
        sock.settimeout(limit)
        start = time.monotonic()
        request = b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n" + b"{" * 100000
        closed = False
        try:
            for byte in request:  # one byte every 0.2 s: forever, unless the server ends it
                sock.send(bytes([byte]))
                time.sleep(0.2)
                if time.monotonic() - start > limit:
                    break
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
            closed = True
        if not closed:
            try:
                closed = sock.recv(1) == b""
            except (ConnectionResetError, ssl.SSLError, OSError):
                closed = True
        self.assertTrue(closed, "a client sending a byte every 0.2 s was not cut off")
        self.assertLess(time.monotonic() - start, limit)
        # and the server still answers others
        self.assertTrue(self.review(pod_from("web-deployment.json", "s", "worker-1"),
                                    dry_run=True)[0]["allowed"])

    def test_500_connections_at_once(self):
        barrier = threading.Barrier(500, timeout=WAIT * 2)

        def one(i):
            client = standin.WebhookClient(self.webhook.port, self.certs["ca"])
            barrier.wait()  # then all connect, shake hands and ask at once
            response, _ = client.review(pod_from("web-deployment.json", "c%d" % i, "worker-1"),
                                        dry_run=True)
            client.connection().close()
            return response["allowed"]

        with concurrent.futures.ThreadPoolExecutor(500) as pool:
            results = list(pool.map(one, range(500)))
        self.assertEqual(results, [True] * 500)


class ApiServerDownTest(unittest.TestCase):
    """No API server to read: reviews are allowed with a warning, promptly."""

    def start(self, port):
        tmp = tempfile.mkdtemp(prefix="webhook_down.")
        self.addCleanup(shutil.rmtree, tmp, ignore_errors=True)
        certs = os.path.join(tmp, "certs")
        standin.make_certs(MAKE_CERT, certs)
        token = os.path.join(tmp, "token")
        with open(token, "w") as f:
            f.write("t\n")
        kubeconfig = os.path.join(tmp, "kubeconfig")
        standin.kubeconfig(kubeconfig, port, certs + "/ca.crt", token)
        webhook = Webhook(tmp, kubeconfig, {"tls.crt": certs + "/tls.crt",
                                            "tls.key": certs + "/tls.key"})
        self.addCleanup(webhook.stop)
        return webhook, standin.WebhookClient(webhook.port, certs + "/ca.crt", timeout_seconds=2)

    def test_refused_connection(self):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()  # nothing listens there now
        webhook, client = self.start(port)
        self.assertEqual(webhook.get("/readyz")[0], 503)
        response, _ = client.review(pod_from("web-deployment.json", "w", "worker-1"))
        self.assertTrue(response["allowed"])
        self.assertRegex(response["warnings"][0], r"^nodegate: node worker-1 not checked: .*connect")

    def test_silent_api_server(self):
        silent = socket.socket()
        silent.bind(("127.0.0.1", 0))
        silent.listen(64)  # accepts connections (the kernel does) and never says a word
        self.addCleanup(silent.close)
        webhook, client = self.start(silent.getsockname()[1])
        start = time.monotonic()
        response, _ = client.review(pod_from("web-deployment.json", "w", "worker-1"))
        self.assertTrue(response["allowed"])
        self.assertIn("timed out", response["warnings"][0])
        # Within the request's timeout=2s (the client waits 7 s before calling it a hang).
        self.assertLess(time.monotonic() - start, 7)


class KubeletEquivalenceTest(Cluster):
    """The webhook's verdict equals `nodegate admit --profile kubelet` for the same node,
    pods and candidate: admit's test data, each candidate as a dry run."""

    CASES = [
        ("node.yaml", ["pods/holder-pod.yaml"], "candidates/small.yaml"),
        ("node.yaml", ["pods/holder-pod.yaml"], "candidates/big-cpu.yaml"),
        ("node.yaml", ["pods/holder-pod.yaml"], "candidates/wants-9000.yaml"),
        ("node.yaml", ["pods/holder-pod.yaml"], "candidates/no-toleration.yaml"),
        ("node.yaml", ["pods/holder-pod.yaml"], "candidates/sidecar.yaml"),
        ("node.yaml", ["pods/holder-pod.yaml"], "candidates/pair.yaml"),
        ("control-plane/node.yaml", ["control-plane/pods.yaml"], "control-plane/haproxy.yaml"),
        ("control-plane/node.yaml", ["control-plane/pods.yaml"], "control-plane/kube-apiserver.yaml"),
    ]
    PRIORITIES = {"system-cluster-critical": 2000000000, "system-node-critical": 2000001000}

    @classmethod
    def seed(cls):
        pass

    def resolve_priority(self, pod):
        # The API server's Priority admission runs before validating webhooks.
        name = pod["spec"].get("priorityClassName")
        if name in self.PRIORITIES:
            pod["spec"]["priority"] = self.PRIORITIES[name]

    def test_same_verdicts_as_nodegate_admit(self):
        tmp = tempfile.mkdtemp(prefix="webhook_equiv.", dir=self.tmp)
        seeded = set()
        compared = 0
        for node_file, pod_files, candidate_file in self.CASES:
            node_obj = load_yaml(os.path.join(ADMIT_DATA, node_file))[0]
            node_name = node_obj["metadata"]["name"]
            if node_name not in seeded:
                seeded.add(node_name)
                self.api.put("nodes", node_obj)
                for pf in pod_files:
                    for pod in pods_in(os.path.join(ADMIT_DATA, pf)):
                        self.resolve_priority(pod)
                        self.api.put("pods", pod)
                wait_for(lambda: self.webhook.metric("nodegate_webhook_cached_pods") >=
                         sum(len(pods_in(os.path.join(ADMIT_DATA, pf))) for pf in pod_files) and
                         not self.review(pod_from("report-job.json", "probe", node_name),
                                         dry_run=True)[0].get("warnings", [""])[0].startswith(
                                             "nodegate: node"), "node %s cached" % node_name)
            for i, candidate in enumerate(pods_in(os.path.join(ADMIT_DATA, candidate_file))):
                candidate["spec"]["nodeName"] = node_name
                candidate["metadata"].setdefault("namespace", "default")
                self.resolve_priority(candidate)
                path = os.path.join(tmp, "candidate-%d.json" % compared)
                with open(path, "w") as f:
                    json.dump(candidate, f)
                pods_args = []
                for pf in pod_files:
                    pods_args += ["--pods", os.path.join(ADMIT_DATA, pf)]
                admit = subprocess.run(
                    [NODEGATE, "admit", "--profile", "kubelet", "--node",
                     os.path.join(ADMIT_DATA, node_file), *pods_args, "-o", "json", path],
                    capture_output=True, text=True)
                self.assertIn(admit.returncode, (0, 1), admit.stderr)
                verdict = json.loads(admit.stdout)["pods"][0]
                response, error = self.review(candidate, dry_run=True)
                what = "%s / %s #%d" % (node_file, candidate_file, i)
                self.assertEqual(response["allowed"], verdict["admitted"], what)
                if not verdict["admitted"]:
                    self.assertEqual(response["status"]["reason"], verdict["admitReason"], what)
                    self.assertIn(verdict["admitMessage"], response["status"]["message"], what)
                    for failure in verdict["failures"]:
                        # admit names the file a holder came from; the API's pods have none.
                        detail = re.sub(r" from \S+", "", failure["detail"])
                        self.assertIn(detail, response["status"]["message"], what)
                elif verdict.get("evicts"):
                    self.assertIn(verdict["evicts"][0]["pod"], response["warnings"][0], what)
                else:
                    self.assertNotIn("warnings", response, what)
                compared += 1
        self.assertGreaterEqual(compared, len(self.CASES))


if __name__ == "__main__":
    unittest.main(verbosity=2)
