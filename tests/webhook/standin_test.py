"""Tests of the stand-in of the API server's contract itself (standin_api.py, standin_store.py,
synthetic.py, standin_load.py, standin_admin.py), each behaviour checked with a plain HTTPS
client: what the nodegate tests rely on must hold here first. Run by CTest (standin_test, label
unit) with NODEGATE_SOURCE_DIR; no kube-apiserver is involved, and passing says nothing about
one (README.md lists what the stand-in cannot show).
"""

import base64
import concurrent.futures
import http.client
import json
import os
import queue
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

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import standin  # noqa: E402
import synthetic  # noqa: E402
from standin_admin import AdminClient  # noqa: E402

SRC = os.environ.get("NODEGATE_SOURCE_DIR", os.path.join(HERE, "..", ".."))
MAKE_CERT = os.path.join(SRC, "deploy", "webhook", "make-cert.sh")
CERTS = {}


def setUpModule():
    tmp = tempfile.mkdtemp(prefix="standin_test.")
    CERTS["dir"] = tmp
    CERTS["ca"], CERTS["crt"], CERTS["key"] = standin.make_certs(MAKE_CERT, tmp + "/certs")


def tearDownModule():
    shutil.rmtree(CERTS["dir"], ignore_errors=True)


class Client:
    """A plain HTTPS client of the stand-in (what any API client sends)."""

    def __init__(self, port, token="test-token"):
        self.port = port
        self.token = token
        self.ctx = ssl.create_default_context(cafile=CERTS["ca"])

    def conn(self, timeout=30):
        return http.client.HTTPSConnection("127.0.0.1", self.port, context=self.ctx,
                                           timeout=timeout)

    def request(self, method, path, body=None, token=None):
        c = self.conn()
        try:
            headers = {"Authorization": "Bearer " + (token or self.token)}
            if body is not None:
                body = body if isinstance(body, bytes) else json.dumps(body).encode()
                headers["Content-Type"] = "application/json"
            c.request(method, path, body=body, headers=headers)
            r = c.getresponse()
            data = r.read()
            return r.status, dict(r.getheaders()), data
        finally:
            c.close()

    def json(self, method, path, body=None):
        status, _, data = self.request(method, path, body)
        return status, json.loads(data)

    def get(self, path):
        return self.json("GET", path)

    def watch(self, path, timeout=10):
        """An open watch: next_event(wait) returns the next event, or None when nothing came
        within `wait` seconds; ended() is true once the server ended the stream."""
        return Watch(self, path, timeout)


class Watch:
    """Reads the watch's lines in a thread, so a wait can time out without spoiling the
    connection."""

    def __init__(self, client, path, timeout):
        self.c = client.conn(timeout=None)
        self.c.request("GET", path, headers={"Authorization": "Bearer " + client.token})
        self.r = self.c.getresponse()
        self.status = self.r.status
        self.done = False
        self.queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        try:
            for line in iter(self.r.readline, b""):
                self.queue.put(json.loads(line))
        except (OSError, ValueError, AttributeError, http.client.HTTPException):
            pass
        self.queue.put(None)

    def next_event(self, wait=5):
        if self.done:
            return None
        try:
            ev = self.queue.get(timeout=wait)
        except queue.Empty:
            return None
        if ev is None:
            self.done = True
        return ev

    def events(self, n, wait=5):
        out = []
        while len(out) < n:
            ev = self.next_event(wait)
            if ev is None:
                break
            out.append(ev)
        return out

    def close(self):
        try:
            self.c.sock.shutdown(socket.SHUT_RDWR)
        except (OSError, AttributeError):
            pass
        self.c.close()


def pod(name, node="n1", ns="default", phase="Running", labels=None, cpu="100m"):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "labels": labels or {"app": "web"}},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "busybox",
                                                       "resources": {"requests": {"cpu": cpu}}}]},
            "status": {"phase": phase}}


def names(items):
    return [i["metadata"]["name"] for i in items]


class ApiCase(unittest.TestCase):
    ARGS = {}

    def setUp(self):
        self.api = standin.ApiServer(CERTS["crt"], CERTS["key"], **self.ARGS)
        self.addCleanup(self.api.stop)
        self.client = Client(self.api.port)


class ListTest(ApiCase):
    ARGS = {"bookmark_interval": 0.2}

    def seed(self, n=30):
        for i in range(n):
            self.api.put("pods", pod("p%02d" % i, node="n%d" % (i % 3)))

    def list_all(self, path, limit):
        """Every page; the continuing requests carry the token and no resourceVersion."""
        items, rvs, token = [], set(), ""
        while True:
            sep = "&" if "?" in path else "?"
            status, body = self.client.get(
                path.split("?")[0] + "?limit=%d&continue=%s" % (limit, token) if token else
                path + sep + "limit=%d" % limit)
            self.assertEqual(status, 200, body)
            items += body["items"]
            rvs.add(body["metadata"]["resourceVersion"])
            token = body["metadata"].get("continue")
            if not token:
                return items, rvs

    def test_rv0_list_is_served_whole_limit_ignored(self):
        self.seed()
        status, body = self.client.get("/api/v1/pods?resourceVersion=0&limit=10")
        self.assertEqual(status, 200)
        self.assertEqual(len(body["items"]), 30)
        self.assertNotIn("continue", body["metadata"])
        self.assertEqual(body["metadata"]["resourceVersion"], str(self.api.rv))
        self.assertEqual(body["kind"], "PodList")
        self.assertNotIn("kind", body["items"][0])  # list items carry no kind

    def test_consistent_list_pages_at_the_first_pages_version(self):
        self.seed()
        status, first = self.client.get("/api/v1/pods?limit=10")
        self.assertEqual(len(first["items"]), 10)
        self.assertEqual(first["metadata"]["remainingItemCount"], 20)
        rv = first["metadata"]["resourceVersion"]
        # Changes after the first page: later pages still show the state at `rv`.
        self.api.delete("pods", ("default", "p25"))
        self.api.put("pods", pod("p29", phase="Failed"))
        self.api.put("pods", pod("p99"))
        items = first["items"]
        token = first["metadata"]["continue"]
        while token:
            status, page = self.client.get("/api/v1/pods?limit=10&continue=" + token)
            self.assertEqual(page["metadata"]["resourceVersion"], rv)
            items += page["items"]
            token = page["metadata"].get("continue")
        self.assertEqual(names(items), ["p%02d" % i for i in range(30)])
        self.assertEqual(items[29]["status"]["phase"], "Running")
        decoded = json.loads(base64.urlsafe_b64decode(first["metadata"]["continue"] + "=="))
        self.assertEqual((decoded["v"], decoded["rv"]), ("meta.k8s.io/v1", int(rv)))

    def test_continue_older_than_the_compaction_is_410(self):
        self.seed()
        _, first = self.client.get("/api/v1/pods?limit=10")
        self.api.put("pods", pod("p05", phase="Failed"))
        self.api.compact()
        status, body = self.client.get("/api/v1/pods?limit=10&continue=" +
                                       first["metadata"]["continue"])
        self.assertEqual((status, body["code"], body["reason"]), (410, 410, "Expired"))
        self.assertTrue(body["message"].startswith(
            "The provided continue parameter is too old to display a consistent list result. "
            "You can start a new list without the continue parameter, or use the continue token "
            "in this response to retrieve the remainder of the results."))
        # The token in the 410 continues at the newest version (inconsistently).
        status, rest = self.client.get("/api/v1/pods?limit=100&continue=" +
                                       body["metadata"]["continue"])
        self.assertEqual(status, 200)
        self.assertEqual(names(rest["items"]), ["p%02d" % i for i in range(10, 30)])
        self.assertEqual(rest["metadata"]["resourceVersion"], str(self.api.rv))

    def test_not_older_than_waits_for_the_version(self):
        self.seed(3)
        wanted = self.api.rv + 1
        threading.Timer(0.5, lambda: self.api.put("pods", pod("late"))).start()
        start = time.monotonic()
        status, body = self.client.get("/api/v1/pods?resourceVersion=%d" % wanted)
        self.assertEqual(status, 200)
        self.assertGreaterEqual(time.monotonic() - start, 0.4)
        self.assertGreaterEqual(int(body["metadata"]["resourceVersion"]), wanted)
        self.assertIn("late", names(body["items"]))

    def test_too_large_resource_version_is_504_after_3_s(self):
        self.seed(3)
        start = time.monotonic()
        status, body = self.client.get("/api/v1/pods?resourceVersion=%d" % (self.api.rv + 10))
        self.assertGreaterEqual(time.monotonic() - start, 2.9)
        self.assertEqual(status, 504)
        self.assertEqual(body["reason"], "Timeout")
        self.assertEqual(body["message"], "Timeout: Too large resource version: %d, current: %d"
                         % (self.api.rv + 10, self.api.rv))
        self.assertEqual(body["details"]["causes"][0]["reason"], "ResourceVersionTooLarge")
        self.assertEqual(body["details"]["retryAfterSeconds"], 1)

    def test_exact_list_reads_the_old_version(self):
        self.seed(6)
        old = self.api.rv
        self.api.put("pods", pod("p00", phase="Failed"))
        self.api.put("pods", pod("new"))
        # limit with a resourceVersion and no resourceVersionMatch: the legacy Exact read.
        items, rvs = self.list_all("/api/v1/pods?resourceVersion=%d" % old, 4)
        self.assertEqual(rvs, {str(old)})
        self.assertEqual(names(items), ["p%02d" % i for i in range(6)])
        self.assertEqual(items[0]["status"]["phase"], "Running")
        status, body = self.client.get("/api/v1/pods?resourceVersion=%d&resourceVersionMatch=Exact"
                                       % (old + 1))
        self.assertEqual(status, 200)
        self.assertEqual(body["items"][0]["status"]["phase"], "Failed")
        status, body = self.client.get("/api/v1/pods?resourceVersion=%d&limit=5" % (self.api.rv + 5))
        self.assertEqual((status, body["message"]),
                         (500, "etcdserver: mvcc: required revision is a future revision"))
        self.api.compact()
        status, body = self.client.get("/api/v1/pods?resourceVersion=%d&limit=5" % old)
        self.assertEqual((status, body["reason"], body["message"]),
                         (410, "Expired", "The resourceVersion for the provided list is too old."))
        status, body = self.client.get("/api/v1/pods?resourceVersionMatch=Exact")
        self.assertEqual(status, 422)

    def test_selectors_namespaces_and_single_objects(self):
        self.seed(9)
        self.api.put("pods", pod("done", node="n1", phase="Succeeded", labels={"app": "job"}))
        self.api.put("pods", pod("other", node="n1", ns="kube-system"))
        self.api.put("nodes", {"metadata": {"name": "n1"}, "spec": {"unschedulable": True}})
        self.api.put("nodes", {"metadata": {"name": "n2"}})
        _, body = self.client.get("/api/v1/pods?fieldSelector=spec.nodeName%3Dn1")
        self.assertEqual(names(body["items"]), ["done", "p01", "p04", "p07", "other"])  # key order
        _, body = self.client.get("/api/v1/pods?resourceVersion=0&fieldSelector="
                                  "spec.nodeName%3Dn1%2Cstatus.phase%21%3DSucceeded")
        self.assertEqual(names(body["items"]), ["p01", "p04", "p07", "other"])
        _, body = self.client.get("/api/v1/pods?labelSelector=app%20in%20(job)")
        self.assertEqual(names(body["items"]), ["done"])
        _, body = self.client.get("/api/v1/namespaces/kube-system/pods")
        self.assertEqual(names(body["items"]), ["other"])
        _, body = self.client.get("/api/v1/nodes?fieldSelector=spec.unschedulable%3Dfalse")
        self.assertEqual(names(body["items"]), ["n2"])
        status, body = self.client.get("/api/v1/pods?fieldSelector=spec.hostname%3Dx")
        self.assertEqual(status, 400)
        self.assertIn("field label not supported: spec.hostname", body["message"])
        status, body = self.client.get("/api/v1/namespaces/default/pods/p03")
        self.assertEqual((status, body["kind"], body["metadata"]["name"]), (200, "Pod", "p03"))
        status, body = self.client.get("/api/v1/namespaces/default/pods/nope")
        self.assertEqual((status, body["message"]), (404, 'pods "nope" not found'))
        status, body = self.client.get("/api/v1/nodes/n1")
        self.assertEqual((status, body["kind"]), (200, "Node"))


class DiscoveryTest(ApiCase):
    def test_discovery_documents_and_kubectl(self):
        _, apis = self.client.get("/apis")
        self.assertEqual(sorted(g["name"] for g in apis["groups"]),
                         ["apps", "batch", "coordination.k8s.io"])
        _, v1 = self.client.get("/api/v1")
        pods = [r for r in v1["resources"] if r["name"] == "pods"][0]
        self.assertEqual((pods["kind"], pods["namespaced"]), ("Pod", True))
        self.assertNotIn("patch", pods["verbs"])
        kubectl = shutil.which("kubectl")
        if not kubectl:
            self.skipTest("no kubectl (Debian's kubernetes-client) here")
        self.api.put("nodes", {"metadata": {"name": "n1"}})
        self.api.put("pods", pod("web-1", ns="shop"))
        tmp = tempfile.mkdtemp(prefix="standin_kubectl.")
        self.addCleanup(shutil.rmtree, tmp, ignore_errors=True)
        with open(tmp + "/token", "w") as f:
            f.write(self.api.token)
        standin.kubeconfig(tmp + "/kubeconfig", self.api.port, CERTS["ca"], tmp + "/token")
        run = lambda *a: subprocess.run([kubectl, "--kubeconfig", tmp + "/kubeconfig", *a],
                                        capture_output=True, text=True, timeout=60)
        out = run("get", "pods", "-A", "-o", "name")
        self.assertEqual((out.returncode, out.stdout), (0, "pod/web-1\n"), out.stderr)
        out = run("get", "no", "-o", "jsonpath={.items[*].metadata.name}")
        self.assertEqual(out.stdout, "n1", out.stderr)


class PaginatedCacheTest(ApiCase):
    ARGS = {"paginate_cache_lists": True}

    def test_rv0_list_is_paged_from_the_cache(self):
        for i in range(25):
            self.api.put("pods", pod("p%02d" % i))
        status, body = self.client.get("/api/v1/pods?resourceVersion=0&limit=10")
        self.assertEqual(len(body["items"]), 10)
        got = names(body["items"])
        while body["metadata"].get("continue"):
            status, body = self.client.get("/api/v1/pods?limit=10&continue=" +
                                           body["metadata"]["continue"])
            got += names(body["items"])
        self.assertEqual(got, ["p%02d" % i for i in range(25)])


class WatchTest(ApiCase):
    ARGS = {"bookmark_interval": 0.3}

    def test_watch_from_0_sends_the_state_then_changes(self):
        self.api.put("pods", pod("a"))
        self.api.put("pods", pod("b"))
        w = self.client.watch("/api/v1/pods?watch=1&resourceVersion=0")
        self.addCleanup(w.close)
        first = w.events(2)
        self.assertEqual([(e["type"], e["object"]["metadata"]["name"]) for e in first],
                         [("ADDED", "a"), ("ADDED", "b")])
        self.assertEqual(first[0]["object"]["kind"], "Pod")
        self.api.put("pods", pod("a", phase="Failed"))
        self.api.delete("pods", ("default", "b"))
        evs = w.events(2)
        self.assertEqual([e["type"] for e in evs], ["MODIFIED", "DELETED"])
        self.assertEqual(evs[1]["object"]["metadata"]["resourceVersion"], str(self.api.rv))

    def test_watch_from_a_version_with_a_selector(self):
        self.api.put("pods", pod("a"))
        rv = self.api.rv
        self.api.put("pods", pod("b"))
        w = self.client.watch("/api/v1/pods?watch=1&resourceVersion=%d&fieldSelector="
                              "status.phase%%21%%3DFailed" % rv)
        self.addCleanup(w.close)
        self.assertEqual(w.next_event()["object"]["metadata"]["name"], "b")
        self.api.put("pods", pod("b", phase="Failed"))  # leaves the selector: DELETED
        ev = w.next_event()
        self.assertEqual(ev["type"], "DELETED")
        self.assertEqual(ev["object"]["status"]["phase"], "Running")  # its previous state
        self.assertEqual(ev["object"]["metadata"]["resourceVersion"], str(self.api.rv))

    def test_bookmarks_and_initial_events_end(self):
        w = self.client.watch("/api/v1/pods?watch=1&allowWatchBookmarks=true&resourceVersion=%d"
                              % self.api.rv)
        self.addCleanup(w.close)
        ev = w.next_event(2)
        self.assertEqual(ev["type"], "BOOKMARK")
        self.assertEqual(ev["object"]["metadata"]["resourceVersion"], str(self.api.rv))
        self.assertEqual(ev["object"]["spec"], {"containers": None})
        self.api.put("pods", pod("a"))
        w2 = self.client.watch("/api/v1/pods?watch=1&sendInitialEvents=true&allowWatchBookmarks="
                               "true&resourceVersionMatch=NotOlderThan&resourceVersion=")
        self.addCleanup(w2.close)
        evs = w2.events(2)
        self.assertEqual([e["type"] for e in evs], ["ADDED", "BOOKMARK"])
        self.assertEqual(evs[1]["object"]["metadata"]["annotations"],
                         {"k8s.io/initial-events-end": "true"})

    def test_watch_from_a_compacted_version_is_410(self):
        self.api.put("pods", pod("a"))
        old = self.api.rv
        self.api.put("pods", pod("b"))
        self.api.compact()
        w = self.client.watch("/api/v1/pods?watch=1&resourceVersion=%d" % (old - 1))
        self.addCleanup(w.close)
        ev = w.next_event()
        self.assertEqual(ev["type"], "ERROR")
        self.assertEqual((ev["object"]["code"], ev["object"]["reason"]), (410, "Expired"))
        self.assertEqual(ev["object"]["message"], "too old resource version: %d (%d)" % (
            old - 1, self.api.rv))
        self.assertIsNone(w.next_event(2))
        self.assertTrue(w.done)

    def test_a_backlog_arrives_whole_before_a_bookmark(self):
        w = self.client.watch("/api/v1/pods?watch=1&allowWatchBookmarks=true&resourceVersion=%d"
                              % self.api.rv)
        self.addCleanup(w.close)
        self.api.stall_watches()
        for i in range(5000):  # more than one batch of the history
            self.api.put("pods", pod("p%04d" % i))
        time.sleep(0.4)  # a bookmark falls due meanwhile
        self.api.release_watches()
        added, last = 0, 0
        while added < 5000:
            ev = w.next_event(5)
            self.assertIsNotNone(ev, "after %d events" % added)
            rv = int(ev["object"]["metadata"]["resourceVersion"])
            if ev["type"] == "BOOKMARK":
                # never a version past a change not yet sent
                self.assertLessEqual(rv, last, "bookmark after %d events" % added)
            else:
                added += 1
                self.assertGreater(rv, last)
            last = max(last, rv)
        self.assertEqual(last, self.api.rv)

    def test_history_window(self):
        # A bounded history (the watch cache's window): a version that fell out of it is 410,
        # and a watch that had not sent the trimmed events yet is ended.
        api = standin.ApiServer(CERTS["crt"], CERTS["key"], history_limit=3)
        self.addCleanup(api.stop)
        client = Client(api.port)
        start = api.rv
        w = client.watch("/api/v1/pods?watch=1&resourceVersion=%d" % start)
        self.addCleanup(w.close)
        api.stall_watches()
        for i in range(5):
            api.put("pods", pod("p%d" % i))
        self.assertEqual(api.oldest_rv, start + 2)
        api.release_watches()
        self.assertIsNone(w.next_event(3))
        self.assertTrue(w.done)
        w2 = client.watch("/api/v1/pods?watch=1&resourceVersion=%d" % start)
        self.addCleanup(w2.close)
        self.assertEqual(w2.next_event()["object"]["code"], 410)
        w3 = client.watch("/api/v1/pods?watch=1&resourceVersion=%d" % (start + 2))
        self.addCleanup(w3.close)
        self.assertEqual(names(e["object"] for e in w3.events(3)), ["p2", "p3", "p4"])

    def test_timeout_seconds_and_end_watches(self):
        start = time.monotonic()
        w = self.client.watch("/api/v1/pods?watch=1&timeoutSeconds=1&resourceVersion=%d"
                              % self.api.rv)
        self.addCleanup(w.close)
        self.assertIsNone(w.next_event(5))
        self.assertTrue(w.done)
        self.assertLess(time.monotonic() - start, 8)
        w2 = self.client.watch("/api/v1/pods?watch=1&resourceVersion=%d" % self.api.rv)
        self.addCleanup(w2.close)
        time.sleep(0.2)
        self.api.end_watches()
        self.assertIsNone(w2.next_event(5))
        self.assertTrue(w2.done)


LEASES = "/apis/coordination.k8s.io/v1/namespaces/nodegate/leases"


def lease(name, holder="replica-a", rv=None):
    obj = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
           "metadata": {"name": name, "annotations": {"nodegate.io/claims": "[]"}},
           "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15}}
    if rv:
        obj["metadata"]["resourceVersion"] = rv
    return obj


class LeaseTest(ApiCase):
    def test_create_get_update_conflict_delete(self):
        status, created = self.client.json("POST", LEASES, lease("node-a"))
        self.assertEqual(status, 201)
        self.assertEqual(created["kind"], "Lease")
        self.assertEqual(created["metadata"]["annotations"], {"nodegate.io/claims": "[]"})
        status, body = self.client.json("POST", LEASES, lease("node-a"))
        self.assertEqual((status, body["reason"], body["message"]),
                         (409, "AlreadyExists",
                          'leases.coordination.k8s.io "node-a" already exists'))
        status, got = self.client.get(LEASES + "/node-a")
        self.assertEqual(got, created)
        rv = got["metadata"]["resourceVersion"]
        got["spec"]["holderIdentity"] = "replica-b"
        status, updated = self.client.json("PUT", LEASES + "/node-a", got)
        self.assertEqual(status, 200)
        self.assertGreater(int(updated["metadata"]["resourceVersion"]), int(rv))
        self.assertEqual(updated["metadata"]["uid"], created["metadata"]["uid"])
        status, body = self.client.json("PUT", LEASES + "/node-a", lease("node-a", rv=rv))
        self.assertEqual((status, body["reason"]), (409, "Conflict"))
        self.assertEqual(body["message"], 'Operation cannot be fulfilled on '
                         'leases.coordination.k8s.io "node-a": the object has been modified; '
                         'please apply your changes to the latest version and try again')
        self.assertEqual(body["details"], {"name": "node-a", "group": "coordination.k8s.io",
                                           "kind": "leases"})
        status, body = self.client.json("PUT", LEASES + "/node-a", lease("node-a"))
        self.assertEqual(status, 422)  # an update needs a resourceVersion
        status, body = self.client.json("DELETE", LEASES + "/node-a", {
            "preconditions": {"resourceVersion": rv}})
        self.assertEqual((status, body["reason"]), (409, "Conflict"))
        status, body = self.client.json("DELETE", LEASES + "/node-a")
        self.assertEqual((status, body["status"]), (200, "Success"))
        status, body = self.client.get(LEASES + "/node-a")
        self.assertEqual((status, body["message"]),
                         (404, 'leases.coordination.k8s.io "node-a" not found'))
        self.assertEqual(self.api.verb_count("update", "leases"), 3)
        self.assertEqual(self.api.count("DELETE " + LEASES), 2)

    def test_put_to_a_missing_lease_creates_it_but_not_a_pod(self):
        # The lease strategy allows create on update (AllowCreateOnUpdate true); pods do not.
        status, body = self.client.json("PUT", LEASES + "/node-b", lease("node-b", rv="5"))
        self.assertEqual(status, 201)
        status, body = self.client.json("PUT", "/api/v1/namespaces/default/pods/x", pod("x"))
        self.assertEqual((status, body["message"]), (404, 'pods "x" not found'))

    def test_racing_updates_exactly_one_wins(self):
        _, base = self.client.json("POST", LEASES, lease("node-c"))

        def claim(i):
            obj = json.loads(json.dumps(base))
            obj["spec"]["holderIdentity"] = "replica-%d" % i
            return self.client.request("PUT", LEASES + "/node-c", obj)[0]

        with concurrent.futures.ThreadPoolExecutor(20) as pool:
            codes = list(pool.map(claim, range(20)))
        self.assertEqual(sorted(codes), [200] + [409] * 19)

    def test_list_in_a_namespace_and_body_limit(self):
        for name in ("a", "b"):
            self.client.json("POST", LEASES, lease(name))
        self.client.json("POST", "/apis/coordination.k8s.io/v1/namespaces/other/leases",
                         lease("c"))
        status, body = self.client.get(LEASES)
        self.assertEqual((body["kind"], names(body["items"])), ("LeaseList", ["a", "b"]))
        big = lease("big")
        big["metadata"]["annotations"]["pad"] = "x" * (3 * 1024 * 1024 - 400)
        self.assertEqual(self.client.json("POST", LEASES, big)[0], 201)
        big["metadata"]["annotations"]["pad"] += "x" * 1000
        big["metadata"]["name"] = "too-big"
        status, _, data = self.client.request("POST", LEASES, big)
        self.assertEqual(status, 413)
        self.assertIn(b"Request entity too large: limit is 3145728", data)


class FaultTest(ApiCase):
    ARGS = {"bookmark_interval": 0.2}

    def test_revoked_token(self):
        self.api.revoke_token()
        status, body = self.client.get("/api/v1/nodes")
        self.assertEqual((status, body["reason"]), (401, "Unauthorized"))
        self.api.restore_token()
        self.assertEqual(self.client.get("/api/v1/nodes")[0], 200)
        self.api.set_token("rotated")
        self.assertEqual(self.client.get("/api/v1/nodes")[0], 401)
        self.assertEqual(Client(self.api.port, "rotated").get("/api/v1/nodes")[0], 200)

    def test_throttle_with_retry_after(self):
        self.api.throttle(count=2, retry_after=3)
        for _ in range(2):
            status, headers, data = self.client.request("GET", "/api/v1/pods")
            self.assertEqual((status, headers["Retry-After"]), (429, "3"))
            self.assertEqual(data, b"Too many requests, please try again later.\n")
        self.assertEqual(self.client.get("/api/v1/pods")[0], 200)
        self.api.throttle(fraction=1.0, verbs=("watch",))
        self.assertEqual(self.client.get("/api/v1/pods")[0], 200)
        self.assertEqual(self.client.request("GET", "/api/v1/pods?watch=1")[0], 429)
        self.api.clear_faults()
        self.assertEqual(self.api.faults()["throttle"], None)

    def test_server_errors_and_forbidden(self):
        self.api.fail(count=1, code=503)
        self.api.forbid("list", "pods")
        status, body = self.client.get("/api/v1/nodes")
        self.assertEqual((status, body["reason"]), (503, "ServiceUnavailable"))
        self.api.fail(count=1, code=500)
        status, body = self.client.get("/api/v1/nodes")
        self.assertEqual((status, body["reason"]), (500, "InternalError"))
        self.assertEqual(self.client.get("/api/v1/nodes")[0], 200)
        status, body = self.client.get("/api/v1/pods")
        self.assertEqual(status, 403)
        self.assertEqual(body["message"], 'pods is forbidden: User "system:serviceaccount:'
                         'nodegate:nodegate" cannot list resource "pods" in API group "" at the '
                         "cluster scope")
        self.assertEqual(self.client.get("/api/v1/namespaces/default/pods/x")[0], 404)

    def test_watch_stall(self):
        w = self.client.watch("/api/v1/pods?watch=1&allowWatchBookmarks=true&resourceVersion=%d"
                              % self.api.rv)
        self.addCleanup(w.close)
        self.assertEqual(w.next_event(2)["type"], "BOOKMARK")
        self.api.stall_watches()
        time.sleep(0.3)
        self.api.put("pods", pod("during"))
        while True:  # a bookmark already on its way may still arrive; then nothing
            ev = w.next_event(1)
            if ev is None or ev["type"] != "BOOKMARK":
                break
        self.assertIsNone(ev)
        self.api.release_watches()
        ev = w.next_event(2)
        self.assertEqual((ev["type"], ev["object"]["metadata"]["name"]), ("ADDED", "during"))

    def test_latency(self):
        self.api.add_latency(1.0, writes_only=True)
        start = time.monotonic()
        self.client.get("/api/v1/pods")
        self.assertLess(time.monotonic() - start, 1.0)  # reads are not delayed
        start = time.monotonic()
        self.client.json("POST", LEASES, lease("slow"))
        self.assertGreaterEqual(time.monotonic() - start, 1.0)
        self.api.add_latency(0.3)
        start = time.monotonic()
        self.client.get("/api/v1/pods")
        self.assertGreaterEqual(time.monotonic() - start, 0.3)

    def test_connection_dropped_mid_list(self):
        for i in range(50):
            self.api.put("pods", pod("p%02d" % i))
        self.api.drop_connections(after_bytes=2000)
        with self.assertRaises((http.client.IncompleteRead, ConnectionError, ssl.SSLError)):
            self.client.request("GET", "/api/v1/pods")
        status, body = self.client.get("/api/v1/pods")
        self.assertEqual((status, len(body["items"])), (200, 50))
        self.assertEqual(self.api.verb_count("list", "pods"), 2)
        self.assertEqual([s for m, p, s in self.api.requests if p == "/api/v1/pods"], [200, 200])


class SyntheticTest(unittest.TestCase):
    def test_deterministic_from_the_seed_and_cached(self):
        a = synthetic.generate(nodes=12, pods_per_node=40, seed=7)
        b = synthetic.generate(nodes=12, pods_per_node=40, seed=7)
        c = synthetic.generate(nodes=12, pods_per_node=40, seed=8)
        self.assertEqual(a.records, b.records)
        self.assertNotEqual(a.pods[100][1], c.pods[100][1])
        tmp = tempfile.mkdtemp(prefix="synthetic_cache.")
        self.addCleanup(shutil.rmtree, tmp, ignore_errors=True)
        written = synthetic.generate(nodes=12, pods_per_node=40, seed=7, cache_dir=tmp)
        read = synthetic.generate(nodes=12, pods_per_node=40, seed=7, cache_dir=tmp)
        self.assertEqual(len(os.listdir(tmp)), 1)
        self.assertEqual(written.records, a.records)
        self.assertEqual(read.records, a.records)

    def test_shape(self):
        cluster = synthetic.generate(nodes=40, pods_per_node=25, seed=3)
        nodes = list(cluster.objects("nodes"))
        pods = list(cluster.objects("pods"))
        self.assertEqual(len(nodes), 40)
        self.assertEqual(len(pods), 1000)
        self.assertEqual(len({(p["metadata"]["namespace"], p["metadata"]["name"]) for p in pods}),
                         1000)
        for label in ("kubernetes.io/hostname", "kubernetes.io/os", "kubernetes.io/arch",
                      "topology.kubernetes.io/zone", "node.kubernetes.io/instance-type"):
            self.assertTrue(all(label in n["metadata"]["labels"] for n in nodes), label)
        self.assertTrue(all(n["status"]["allocatable"]["pods"] == "110" for n in nodes))
        self.assertTrue(all(10 <= len(n["status"]["images"]) <= 25 for n in nodes))
        self.assertTrue(any(n["spec"].get("taints") for n in nodes))
        phases = {}
        for p in pods:
            phases[p["status"]["phase"]] = phases.get(p["status"]["phase"], 0) + 1
            # 2-4 containers, but DaemonSet pods have the 1-2 of their upstream manifests.
            low = 1 if p["metadata"]["ownerReferences"][0]["kind"] == "DaemonSet" else 2
            self.assertTrue(low <= len(p["spec"]["containers"]) <= 4, p["metadata"]["name"])
            self.assertEqual(len(p["metadata"]["ownerReferences"]), 1)
            self.assertGreaterEqual(len(p["metadata"]["managedFields"]), 1)
            self.assertEqual(p["spec"].get("nodeName") is None, p["status"]["phase"] == "Pending")
            for c in p["spec"]["containers"]:
                self.assertIn("requests", c["resources"])
        self.assertGreater(phases["Running"], 900)
        for phase in ("Pending", "Succeeded", "Failed"):
            self.assertGreaterEqual(phases.get(phase, 0), 1, phase)
        applied = [p for p in pods if "kubectl.kubernetes.io/last-applied-configuration" in
                   p["metadata"].get("annotations", {})]
        self.assertTrue(60 <= len(applied) <= 140, len(applied))
        self.assertTrue(all(len(p["metadata"]["annotations"][
            "kubectl.kubernetes.io/last-applied-configuration"]) >= 9800 for p in applied))
        host_ports = [p for p in pods if any("hostPort" in port for c in p["spec"]["containers"]
                                              for port in c.get("ports", ()))]
        self.assertTrue(0.02 <= len(host_ports) / len(pods) <= 0.15, len(host_ports))
        self.assertTrue(any(p["spec"].get("priorityClassName") for p in pods))
        # Placement holds to each node's allocatable pods and its host ports.
        per_node, ports = {}, set()
        for p in pods:
            node = p["spec"].get("nodeName")
            if node and p["status"]["phase"] == "Running":
                per_node[node] = per_node.get(node, 0) + 1
                for c in p["spec"]["containers"]:
                    for port in c.get("ports", ()):
                        if "hostPort" in port:
                            key = (node, port["hostPort"], port["protocol"])
                            self.assertNotIn(key, ports)
                            ports.add(key)
        self.assertLessEqual(max(per_node.values()), 110)
        self.assertEqual(cluster.summary["pods"], 1000)

    def test_served_by_the_stand_in(self):
        cluster = synthetic.generate(nodes=5, pods_per_node=20, seed=1)
        api = standin.ApiServer(CERTS["crt"], CERTS["key"])
        self.addCleanup(api.stop)
        loaded = api.load_cluster(cluster)
        self.assertEqual((loaded["nodes"], loaded["pods"]), (5, 100))
        client = Client(api.port)
        status, body = client.get("/api/v1/pods?resourceVersion=0")
        self.assertEqual(len(body["items"]), 100)
        node = body["items"][0]["spec"]["nodeName"]
        _, on_node = client.get("/api/v1/pods?fieldSelector=spec.nodeName%3D" + node)
        self.assertEqual({p["spec"]["nodeName"] for p in on_node["items"]}, {node})
        _, ds = client.get("/apis/apps/v1/daemonsets")
        self.assertIn("node-local-dns", names(ds["items"]))


class LoadDriverTest(unittest.TestCase):
    def test_rate_and_kinds_of_events(self):
        api = standin.ApiServer(CERTS["crt"], CERTS["key"])
        self.addCleanup(api.stop)
        api.load_cluster(synthetic.generate(nodes=5, pods_per_node=20, seed=1))
        client = Client(api.port)
        w = client.watch("/api/v1/pods?watch=1&resourceVersion=%d" % api.rv)
        self.addCleanup(w.close)
        driver = standin.LoadDriver(api, rate=100, churn=0.3, seed=2).start()
        time.sleep(1.0)
        changes = driver.stop()
        self.assertTrue(30 <= changes <= 130, changes)  # a loaded machine may lag, never burst
        kinds = {}
        for ev in w.events(driver.events, wait=2):
            kinds[ev["type"]] = kinds.get(ev["type"], 0) + 1
        self.assertEqual(sum(kinds.values()), driver.events)
        self.assertGreater(kinds.get("MODIFIED", 0), 0)
        self.assertGreater(kinds.get("ADDED", 0), 0)
        self.assertEqual(kinds.get("ADDED"), kinds.get("DELETED"))
        self.assertEqual(api.objects("pods"), 100)


class ProcessTest(unittest.TestCase):
    """`standin.py --serve` as its own process, driven through the admin channel."""

    def test_serve_and_admin_channel(self):
        tmp = tempfile.mkdtemp(prefix="standin_serve.")
        self.addCleanup(shutil.rmtree, tmp, ignore_errors=True)
        proc = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "standin.py"), "--serve", "--nodes", "3",
             "--pods-per-node", "10", "--cert", CERTS["crt"], "--key", CERTS["key"],
             "--ca", CERTS["ca"], "--token-file", tmp + "/token", "--kubeconfig",
             tmp + "/kubeconfig"], stdout=subprocess.PIPE, text=True)
        self.addCleanup(lambda: proc.poll() is None and proc.kill())
        info = json.loads(proc.stdout.readline())
        self.assertEqual(info["objects"]["nodes"], 3)
        with open(tmp + "/kubeconfig") as f:
            self.assertIn("https://127.0.0.1:%d" % info["port"], f.read())
        admin = AdminClient(info["admin_port"])
        client = Client(info["port"])
        self.assertEqual(admin.status()["objects"]["pods"], 30)
        admin.put("pods", pod("from-admin"))
        self.assertEqual(client.get("/api/v1/namespaces/default/pods/from-admin")[0], 200)
        admin.delete("pods", "default/from-admin")
        self.assertEqual(client.get("/api/v1/namespaces/default/pods/from-admin")[0], 404)
        admin.throttle(count=1, retry_after=2)
        self.assertEqual(client.request("GET", "/api/v1/pods")[0], 429)
        admin.clear_faults()
        rv = admin.compact()
        self.assertEqual(admin.status()["compacted"], rv)
        admin.start_load(rate=50, churn=0)
        time.sleep(0.5)
        self.assertGreater(admin.stop_load()["changes"], 10)
        log = admin.requests()
        self.assertIn(["GET", "/api/v1/pods", 429], log["requests"])
        self.assertGreaterEqual(log["verbs"]["get pods"], 2)
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(timeout=10), 0)
        proc.stdout.close()


if __name__ == "__main__":
    unittest.main(verbosity=2)
