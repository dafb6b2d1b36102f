"""`nodegate webhook` as an operator runs it, against a stand-in of the API server's contract
(standin.py; tests/webhook/README.md says what it cannot show): the cache never trusted past
--max-cache-age (a revoked token, a stalled watch), lists and watches as client-go makes them
(resourceVersion=0 first, paging, relists from the last version, Retry-After honoured), a
graceful shutdown that refuses and drops nothing, two replicas that never both allow the last
slot or one host port (claims in Leases, one replica killed mid-race), the serving
certificate's expiry, and JSON logs. CTest: webhook_production_test (label unit).

Bounds on time here are generous limits that catch a hang, not performance targets (those are
in bench/webhook).
"""

import concurrent.futures
import copy
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import standin  # noqa: E402
from webhook_test import MAKE_CERT, Webhook, node, pod_from, wait_for  # noqa: E402


def start_api(tmp, **kwargs):
    certs = os.path.join(tmp, "certs")
    standin.make_certs(MAKE_CERT, certs)
    paths = {"ca": certs + "/ca.crt", "tls.crt": certs + "/tls.crt", "tls.key": certs + "/tls.key"}
    api = standin.ApiServer(paths["tls.crt"], paths["tls.key"], **kwargs)
    token_file = os.path.join(tmp, "token")
    with open(token_file, "w") as f:
        f.write(api.token + "\n")
    kubeconfig = os.path.join(tmp, "kubeconfig")
    standin.kubeconfig(kubeconfig, api.port, paths["ca"], token_file)
    return api, paths, kubeconfig


def allowed(client, pod, **kwargs):
    response, _ = client.review(pod, **kwargs)
    return response["allowed"]


class Base(unittest.TestCase):
    API_ARGS = {}

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="webhook_production.")
        self.api, self.certs, self.kubeconfig = start_api(self.tmp, **self.API_ARGS)
        self.webhooks = []

    def tearDown(self):
        for w in self.webhooks:
            if w.proc.poll() is None:
                w.proc.kill()
                w.proc.wait()
        self.api.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def start(self, *extra, name="a", shutdown_delay="0s", certs=None):
        tmp = os.path.join(self.tmp, name)
        os.makedirs(tmp, exist_ok=True)
        w = Webhook(tmp, self.kubeconfig, certs or self.certs, extra=extra,
                    shutdown_delay=shutdown_delay)
        self.webhooks.append(w)
        return w, standin.WebhookClient(w.port, self.certs["ca"])

    def holder(self, node_name, name="holder", cpu="900m", host_ports=()):
        return self.api.put("pods", pod_from("web-deployment.json", name, node_name, cpu=cpu,
                                             host_ports=host_ports))

    def list_requests(self, resource):
        return [path for method, path, status in self.api.requests
                if method == "GET" and path.startswith("/api/v1/%s?" % resource)
                and "watch=1" not in path]


class StalenessTest(Base):
    """The cache is trusted only while the API server keeps proving it current."""

    # As upstream: a bookmark about once a minute, and 2 s before each watch's timeout.
    API_ARGS = {"bookmark_interval": 60}

    def test_a_quiet_cluster_stays_fresh(self):
        self.api.put("nodes", node("quiet"))
        webhook, _ = self.start("--max-cache-age", "6s")
        webhook.wait_ready()
        # Nothing happens for well over the allowed age: the watches' own bookmarks (asked for
        # at most half that age) keep proving the cache current.
        end = time.monotonic() + 15
        while time.monotonic() < end:
            self.assertEqual(webhook.get("/readyz"), (200, "ok\n"))
            time.sleep(0.5)
        self.assertEqual(webhook.metric("nodegate_webhook_cache_stale"), 0)

    def test_revoked_token_then_recovery(self):
        self.api.put("nodes", node("s1", cpu="1"))
        self.holder("s1")
        webhook, client = self.start("--max-cache-age", "6s")
        webhook.wait_ready()
        big = pod_from("web-deployment.json", "big", "s1", cpu="500m")
        _, error = client.review(big, dry_run=True)
        self.assertIn("OutOfcpu", error)
        self.assertIn("shop/holder", error)
        # The watch fails from now on, and meanwhile the pod that held the cpu goes away.
        self.api.revoke_token()
        self.api.delete("pods", "shop/holder")
        wait_for(lambda: webhook.get("/readyz")[0] == 503, "readyz 503 once the cache is stale",
                 timeout=30)
        status, text = webhook.get("/readyz")
        self.assertIn("no word from the API server", text)
        response, error = client.review(big, dry_run=True)
        self.assertTrue(response["allowed"])
        self.assertIsNone(error)
        self.assertIn("not checked", response["warnings"][0])
        self.assertEqual(webhook.metric('nodegate_webhook_cache_stale{resource="pods"}'), 1)
        self.assertGreaterEqual(
            webhook.metric('nodegate_webhook_reviews_total{verdict="allowed",reason="cache-stale"}'), 1)
        self.assertGreater(webhook.metric('nodegate_webhook_watch_errors_total{resource="pods"}'), 0)
        # The token works again: the watch resumes, the cache is current, the verdict is the
        # true one (the holder is gone).
        self.api.restore_token()
        webhook.wait_ready()
        response, error = client.review(big, dry_run=True)
        self.assertTrue(response["allowed"])
        self.assertFalse(response.get("warnings"))
        self.assertEqual(webhook.metric("nodegate_webhook_cache_stale"), 0)
        # Every log line is one JSON object; the stale review was logged with its fields.
        stale = [e for e in webhook.events("review") if e.get("reason") == "cache-stale"]
        self.assertTrue(stale)
        for key in ("time", "level", "uid", "pod", "node", "verdict", "latency_ms"):
            self.assertIn(key, stale[0])
        self.assertEqual(stale[0]["node"], "s1")

    def test_a_stalled_watch_is_stale(self):
        self.api.put("nodes", node("s2"))
        webhook, client = self.start("--max-cache-age", "6s")
        webhook.wait_ready()
        self.api.stall_watches()  # connections stay open; nothing arrives, not even bookmarks
        wait_for(lambda: webhook.get("/readyz")[0] == 503, "stale under a stall", timeout=30)
        self.assertEqual(webhook.metric("nodegate_webhook_cache_synced"), 1)
        self.api.release_watches()
        webhook.wait_ready()


class ListWatchTest(Base):
    """Lists and watches as client-go's reflector makes them."""

    API_ARGS = {"paginate_cache_lists": True}

    def test_first_list_from_the_watch_cache_paged_then_relists_from_the_last_version(self):
        self.api.put("nodes", node("lw"))
        for i in range(1203):  # three pages of 500
            self.api.put("pods", pod_from("web-deployment.json", "p%d" % i, "lw"))
        webhook, client = self.start()
        webhook.wait_ready()
        self.assertEqual(webhook.metric("nodegate_webhook_cached_pods"), 1203)
        pods = self.list_requests("pods")
        self.assertIn("resourceVersion=0", pods[0])
        self.assertIn("limit=500", pods[0])
        self.assertEqual(sum("continue=" in p for p in pods), 2, pods)
        self.assertTrue(all("resourceVersion" not in p for p in pods if "continue=" in p))
        # The version the watch holds leaves the window (changes it never saw, then a
        # compaction): the relist asks for that version, not for 0.
        seen = self.api.rv
        self.api.stall_watches()
        self.api.put("nodes", node("lw2"))
        self.api.put("pods", pod_from("web-deployment.json", "late", "lw"))
        self.api.compact()
        self.api.end_watches()
        self.api.release_watches()
        wait_for(lambda: webhook.metric("nodegate_webhook_cache_relists_total") >= 2, "relists")
        relists = [p for p in self.list_requests("pods") if "continue=" not in p][1:]
        self.assertTrue(relists)
        version = int(relists[0].split("resourceVersion=")[1].split("&")[0])
        self.assertGreaterEqual(version, seen)
        wait_for(lambda: webhook.metric("nodegate_webhook_cached_pods") == 1204, "the late pod")

    def test_retry_after_is_honoured(self):
        self.api.put("nodes", node("ra"))
        self.api.throttle(count=2, retry_after=3, verbs=("list",))
        started = time.monotonic()
        webhook, _ = self.start()
        lists = lambda: len(self.list_requests("pods")) + len(self.list_requests("nodes"))
        wait_for(lambda: lists() >= 2, "the first two lists (both answered 429)")
        throttled = time.monotonic()
        time.sleep(1.5)
        # Each waits the 3 s it was told: none retried yet.
        self.assertEqual(lists(), 2)
        webhook.wait_ready()
        self.assertGreaterEqual(time.monotonic() - throttled, 2.5)
        self.assertEqual(sum(1 for _, p, s in self.api.requests if s == 429), 2)


class UnpagedCacheTest(Base):
    """An API server whose watch cache sends a list whole (limit ignored for resourceVersion=0):
    a relist from a version goes without limit, so that cache serves it too."""

    def test_relist_from_the_cache(self):
        self.api.put("nodes", node("uc"))
        for i in range(3):
            self.api.put("pods", pod_from("web-deployment.json", "u%d" % i, "uc"))
        webhook, _ = self.start()
        webhook.wait_ready()
        self.assertFalse([p for p in self.list_requests("pods") if "continue=" in p])
        self.api.stall_watches()
        self.api.put("pods", pod_from("web-deployment.json", "u3", "uc"))
        self.api.compact()
        self.api.end_watches()
        self.api.release_watches()
        wait_for(lambda: webhook.metric("nodegate_webhook_cache_relists_total") >= 2, "relists")
        wait_for(lambda: webhook.metric("nodegate_webhook_cached_pods") == 4, "the new pod")
        relist = self.list_requests("pods")[1]
        self.assertIn("resourceVersion=", relist)
        self.assertNotIn("resourceVersion=0", relist)
        self.assertNotIn("limit=", relist)


class ShutdownTest(Base):
    def test_sigterm_refuses_and_drops_nothing(self):
        self.api.put("nodes", node("sd", pods="100"))
        webhook, client = self.start("--claims-namespace", "nodegate", "--identity", "a",
                                     shutdown_delay="3s")
        webhook.wait_ready()
        # A review that is in flight when SIGTERM comes: its claim's write takes 1.5 s.
        self.api.add_latency(1.5, writes_only=True)
        results = []

        def slow_review():
            results.append(client.review(pod_from("web-deployment.json", "inflight", "sd"))[0])

        inflight = threading.Thread(target=slow_review)
        inflight.start()
        time.sleep(0.3)
        signalled = time.monotonic()
        webhook.proc.send_signal(signal.SIGTERM)
        wait_for(lambda: webhook.get("/readyz")[0] == 503, "readyz 503 at once", timeout=5)
        self.assertEqual(webhook.get("/readyz")[1], "shutting down\n")
        self.api.add_latency(0)
        # During the delay: new connections and reviews are served, none refused.
        served = 0
        while time.monotonic() - signalled < 2.5:
            fresh = standin.WebhookClient(webhook.port, self.certs["ca"])
            self.assertTrue(allowed(fresh, pod_from("web-deployment.json", "d%d" % served, "sd"),
                                    dry_run=True))
            served += 1
            time.sleep(0.1)
        self.assertGreater(served, 5)
        inflight.join(timeout=30)
        self.assertEqual(len(results), 1)
        self.assertTrue(results[0]["allowed"])  # the in-flight review was answered
        self.assertEqual(webhook.proc.wait(timeout=30), 0)
        self.assertGreaterEqual(time.monotonic() - signalled, 3)
        stopping = webhook.events("stopping: /readyz answers 503; reviews are still served")
        self.assertEqual(stopping[0]["signal"], "SIGTERM")


class ReplicasTest(Base):
    """Two replicas, one Lease of claims per node: racing CREATEs never both take a slot."""

    def start_pair(self):
        a = self.start("--claims-namespace", "nodegate", "--identity", "replica-a", name="a")
        b = self.start("--claims-namespace", "nodegate", "--identity", "replica-b", name="b")
        for w, _ in (a, b):
            w.wait_ready()
        return a, b

    def race(self, clients, pods):
        def one(i):
            client = clients[i % len(clients)]
            try:
                return client.review(pods[i])
            except Exception as e:  # a replica killed mid-race: the API server's call fails
                return e

        with concurrent.futures.ThreadPoolExecutor(len(pods)) as pool:
            return list(pool.map(one, range(len(pods))))

    def claims(self, node_name):
        lease = self.api.get("leases", "nodegate/nodegate-claims-" + node_name)
        if lease is None:
            return []
        return json.loads(lease["metadata"]["annotations"]["nodegate.io/claims"])

    def test_twenty_creates_for_five_slots(self):
        self.api.put("nodes", node("r1", pods="10"))
        for i in range(5):
            self.holder("r1", name="old%d" % i, cpu=None)
        (a, ca), (b, cb) = self.start_pair()
        pods = [pod_from("web-deployment.json", "new%d" % i, "r1") for i in range(20)]
        results = self.race([ca, cb], pods)
        verdicts = [r[0]["allowed"] for r in results]
        self.assertEqual(verdicts.count(True), 5, results)
        for response, error in results:
            if not response["allowed"]:
                self.assertIn("OutOfpods", error)
        self.assertEqual(len(self.claims("r1")), 5)
        writers = {c["by"] for c in self.claims("r1")}
        self.assertTrue(writers <= {"replica-a", "replica-b"})
        total = sum(w.metric('nodegate_webhook_claims_total{result="recorded"}') for w in (a, b))
        self.assertEqual(total, 5)

    def test_one_host_port(self):
        self.api.put("nodes", node("r2", pods="50"))
        (a, ca), (b, cb) = self.start_pair()
        pods = [pod_from("web-deployment.json", "port%d" % i, "r2", host_ports=[(8053, "UDP")])
                for i in range(10)]
        results = self.race([ca, cb], pods)
        self.assertEqual([r[0]["allowed"] for r in results].count(True), 1, results)
        for response, error in results:
            if not response["allowed"]:
                self.assertIn("NodePorts", error)

    def test_a_replica_killed_mid_race(self):
        self.api.put("nodes", node("r3", pods="5"))
        (a, ca), (b, cb) = self.start_pair()
        self.api.add_latency(0.2, writes_only=True)  # so the race is still on when b dies
        pods = [pod_from("web-deployment.json", "k%d" % i, "r3") for i in range(20)]
        killer = threading.Timer(0.3, lambda: b.proc.send_signal(signal.SIGKILL))
        killer.start()
        results = self.race([ca, cb], pods)
        killer.join()
        answered = [r for r in results if not isinstance(r, Exception)]
        allowed_now = sum(1 for r in answered if r[0]["allowed"])
        self.assertLessEqual(allowed_now, 5)
        # b's claims outlive it (until they lapse): a never hands out their slots again.
        self.api.add_latency(0)
        more = 0
        while allowed(ca, pod_from("web-deployment.json", "after%d" % more, "r3")):
            more += 1
            self.assertLess(more, 10)
        self.assertEqual(len(self.claims("r3")), 5)
        self.assertLessEqual(allowed_now + more, 5)

    def test_when_claims_cannot_be_written_the_pod_is_allowed_with_a_warning(self):
        self.api.put("nodes", node("r4", pods="10"))
        (a, ca), _ = self.start_pair()
        self.api.forbid("create", "leases")
        self.api.forbid("update", "leases")
        response, error = ca.review(pod_from("web-deployment.json", "lonely", "r4"))
        self.assertTrue(response["allowed"])
        self.assertIn("without agreement", response["warnings"][0])
        self.assertEqual(a.metric('nodegate_webhook_claims_total{result="failed"}'), 1)


class CertificateTest(Base):
    def make_cert(self, out, days):
        subprocess.run(["bash", MAKE_CERT, out], check=True, stderr=subprocess.DEVNULL,
                       env={"EXTRA_SANS": "IP:127.0.0.1", "DAYS": str(days), "PATH": "/usr/bin:/bin"})

    def not_after(self, path):
        out = subprocess.run(["openssl", "x509", "-in", path, "-noout", "-enddate"],
                             check=True, capture_output=True, text=True).stdout
        stamp = out.strip().split("=", 1)[1]
        return int(time.mktime(time.strptime(stamp, "%b %d %H:%M:%S %Y %Z")) - time.timezone)

    def test_expiry_metric_follows_rotation_and_warns_a_month_ahead(self):
        self.api.put("nodes", node("c1"))
        short = os.path.join(self.tmp, "short")
        shutil.copytree(os.path.dirname(self.certs["ca"]), short)
        self.make_cert(short, 10)
        webhook, _ = self.start(name="c")
        for f in ("tls.crt", "tls.key"):
            shutil.copy(os.path.join(short, f), os.path.join(webhook.cert_dir, f + ".new"))
            os.rename(os.path.join(webhook.cert_dir, f + ".new"), os.path.join(webhook.cert_dir, f))
        # A new connection loads the pair (at most once a second); the metric shows its expiry.
        want = self.not_after(os.path.join(short, "tls.crt"))
        self.assertNotEqual(webhook.metric("nodegate_webhook_certificate_expiry_timestamp_seconds"),
                            want)

        def rotated():
            standin.WebhookClient(webhook.port, self.certs["ca"]).post({})
            return webhook.metric("nodegate_webhook_certificate_expiry_timestamp_seconds") == want

        wait_for(rotated, "the metric of the 10-day certificate")
        webhook.proc.send_signal(signal.SIGTERM)
        self.assertEqual(webhook.proc.wait(timeout=30), 0)
        # Started with a certificate that has less than 30 days left: a warning at once.
        short_certs = {"ca": self.certs["ca"], "tls.crt": os.path.join(short, "tls.crt"),
                       "tls.key": os.path.join(short, "tls.key")}
        again, _ = self.start(name="c2", certs=short_certs)
        wait_for(lambda: again.events("the serving certificate expires soon"), "the warning")
        warning = again.events("the serving certificate expires soon")[0]
        self.assertEqual(warning["level"], "warn")
        self.assertIn(warning["days_left"], (9, 10))


if __name__ == "__main__":
    unittest.main(verbosity=2)
