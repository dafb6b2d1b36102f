"""Stand-ins for the two sides of the API server that `nodegate webhook` and `nodegate explain`
talk to. There is no kube-apiserver to run here, so the tests exercise a stand-in of the API
server's contract, never Kubernetes itself (tests/webhook/README.md lists what it cannot show):

ApiServer     (standin_api.py) an HTTPS endpoint serving nodes, pods, Leases and workload kinds
              as the API server does: consistent, cached and exact lists with paging, watches
              with bookmarks and 410s, optimistic concurrency on writes, bearer-token
              authentication, and switchable faults. Its state lives in standin_store.Store.
synthetic     (synthetic.py) realistic clusters of any size, deterministic from a seed.
LoadDriver    (standin_load.py) watch events at a given rate.
AdminServer   (standin_admin.py) a plain-HTTP control channel on loopback, for a stand-in run
              as its own process (`python3 standin.py --serve ...`, see main()).

WebhookClient the API server's webhook client: requests built as CreateV1AdmissionReview builds
              them (every field, the object with the system fields BeforeCreate fills), POSTed to
              /validate?timeout=Ns over TLS checked against the test CA for the Service's DNS
              name, each answer checked with VerifyAdmissionResponse's rules and a denial shown
              as ToStatusErr shows it (kubernetes/apiserver pkg/admission/plugin/webhook).
"""

import argparse
import copy
import http.client
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from standin_api import ApiServer  # noqa: E402,F401
from standin_load import LoadDriver  # noqa: E402,F401


class StandinError(Exception):
    pass


def kubeconfig(path, port, ca_file, token_file):
    with open(path, "w") as f:
        json.dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "standin",
            "contexts": [{"name": "standin", "context": {"cluster": "standin", "user": "webhook"}}],
            "clusters": [{"name": "standin", "cluster": {
                "server": "https://127.0.0.1:%d" % port, "certificate-authority": ca_file}}],
            "users": [{"name": "webhook", "user": {"tokenFile": token_file}}],
        }, f)


# --- the API server's webhook client ---

class WebhookCallError(Exception):
    """A failed call: failurePolicy decides (Ignore: admitted; Fail: refused)."""


class Denied(Exception):
    """The request is refused; str() is what kubectl prints."""

    def __init__(self, status):
        self.status = status
        super().__init__("Error from server (%s): %s" % (status.get("reason") or "", status["message"]))


def create_v1_admission_review(obj, uid=None, operation="CREATE", username="alice",
                               groups=("system:authenticated",), dry_run=False):
    """As CreateV1AdmissionReview: every field, from the final object after mutation; the
    object's system fields filled as BeforeCreate fills them before validation."""
    obj = copy.deepcopy(obj)
    meta = obj.setdefault("metadata", {})
    meta.setdefault("namespace", "default")
    if not meta.get("name") and meta.get("generateName"):
        meta["name"] = meta["generateName"] + uuid.uuid4().hex[:5]
    meta.setdefault("uid", str(uuid.uuid4()))
    meta.setdefault("creationTimestamp", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    gvk = {"group": "", "version": "v1", "kind": "Pod"}
    gvr = {"group": "", "version": "v1", "resource": "pods"}
    request = {
        "uid": uid or str(uuid.uuid4()),
        "kind": gvk, "resource": gvr, "requestKind": gvk, "requestResource": gvr,
        "name": meta.get("name", ""), "namespace": meta["namespace"],
        "operation": operation,
        "userInfo": {"username": username, "uid": "uid-" + username, "groups": list(groups),
                     "extra": {}},
        "object": obj, "oldObject": None, "dryRun": dry_run,
        "options": {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"},
    }
    return {"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "request": request}


def verify_admission_response(uid, body):
    """VerifyAdmissionResponse for a validating webhook; returns the response."""
    try:
        review = json.loads(body)
    except ValueError as e:
        raise WebhookCallError("decoding the response: %s" % e)
    response = review.get("response")
    if response is None:
        raise WebhookCallError("webhook response was absent")
    if response.get("uid") != uid:
        raise WebhookCallError('expected response.uid="%s", got "%s"' % (uid, response.get("uid")))
    if (review.get("apiVersion"), review.get("kind")) != ("admission.k8s.io/v1", "AdmissionReview"):
        raise WebhookCallError("expected webhook response of admission.k8s.io/v1, "
                               "Kind=AdmissionReview, got %s %s" % (review.get("apiVersion"), review.get("kind")))
    if response.get("patch"):
        raise WebhookCallError("validating webhook may not return response.patch")
    if response.get("patchType") is not None:
        raise WebhookCallError("validating webhook may not return response.patchType")
    if not isinstance(response.get("allowed", False), bool):
        raise WebhookCallError("response.allowed is not a boolean")
    for w in response.get("warnings") or []:
        if not isinstance(w, str):
            raise WebhookCallError("a warning is not a string")
    return response


def to_status_err(webhook_name, status):
    """ToStatusErr: how the API server turns a denial into the client's error."""
    status = dict(status or {"status": "Failure"})
    if status.get("code", 0) < 400:
        status["code"] = 400
    if status.get("status") in (None, "", "Success"):
        status["status"] = "Failure"
    denied_by = 'admission webhook "%s" denied the request' % webhook_name
    if status.get("message"):
        status["message"] = "%s: %s" % (denied_by, status["message"])
    elif status.get("reason"):
        status["message"] = "%s: %s" % (denied_by, status["reason"])
    else:
        status["message"] = "%s without explanation" % denied_by
    return status


class _ServiceConnection(http.client.HTTPSConnection):
    """Connects to 127.0.0.1 but checks the certificate for the Service's DNS name, as the API
    server does for a service reference."""

    def __init__(self, port, context, server_name, timeout):
        super().__init__("127.0.0.1", port, context=context, timeout=timeout)
        self._server_name = server_name
        self._ssl_context = context

    def connect(self):
        sock = socket.create_connection((self.host, self.port), self.timeout)
        self.sock = self._ssl_context.wrap_socket(sock, server_hostname=self._server_name)


class WebhookClient:
    def __init__(self, port, ca_file, server_name="nodegate-webhook.nodegate.svc",
                 webhook_name="pods.nodegate.io", timeout_seconds=5):
        self.port = port
        self.context = ssl.create_default_context(cafile=ca_file)
        self.server_name = server_name
        self.webhook_name = webhook_name
        self.timeout_seconds = timeout_seconds
        self.local = threading.local()

    def connection(self, fresh=False):
        conn = getattr(self.local, "conn", None)
        if conn is None or fresh:
            # The API server's client gives up after timeoutSeconds; a margin lets the test
            # tell a late answer from none.
            conn = _ServiceConnection(self.port, self.context, self.server_name,
                                      self.timeout_seconds + 5)
            self.local.conn = conn
        return conn

    def post(self, review):
        body = json.dumps(review).encode()
        path = "/validate?timeout=%ds" % self.timeout_seconds
        for attempt in range(2):  # a keep-alive connection the server closed is retried once
            conn = self.connection(fresh=attempt > 0)
            try:
                conn.request("POST", path, body=body, headers={
                    "Content-Type": "application/json", "Accept": "application/json, */*"})
                resp = conn.getresponse()
                data = resp.read()
                if resp.getheader("Connection", "").lower() == "close":
                    conn.close()
                    self.local.conn = None
                return resp.status, data
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError,
                    ssl.SSLEOFError):
                conn.close()
                self.local.conn = None
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def review(self, obj, **kwargs):
        """Calls the webhook for a pod CREATE: the verified response (allowed or not) and the
        error the client would see (None when allowed)."""
        review = create_v1_admission_review(obj, **kwargs)
        status, data = self.post(review)
        if not 200 <= status < 300:
            raise WebhookCallError("HTTP %d: %s" % (status, data[:200]))
        response = verify_admission_response(review["request"]["uid"], data)
        error = None
        if not response.get("allowed"):
            error = str(Denied(to_status_err(self.webhook_name, response.get("status"))))
        return response, error


def make_certs(script, out_dir, extra_sans="IP:127.0.0.1"):
    subprocess.run(["bash", script, out_dir], check=True, env={"EXTRA_SANS": extra_sans,
                                                               "PATH": "/usr/bin:/bin"},
                   stderr=subprocess.DEVNULL)
    return out_dir + "/ca.crt", out_dir + "/tls.crt", out_dir + "/tls.key"


# --- the stand-in as its own process ---

SOURCE_DIR = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def main(argv=None):
    """`python3 standin.py --serve ...`: a stand-in of the API server's contract in its own
    process, with a synthetic cluster and the admin channel (standin_admin.py). Prints one JSON
    line on stdout once it serves ({"port", "admin_port", "url", "ca", "token", ...}), then runs
    until SIGTERM or SIGINT."""
    p = argparse.ArgumentParser(description=main.__doc__)
    p.add_argument("--serve", action="store_true", required=True)
    p.add_argument("--nodes", type=int, default=5, help="synthetic nodes (0: none)")
    p.add_argument("--pods-per-node", type=int, default=100)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--cache-dir", help="where generated clusters are kept between runs")
    p.add_argument("--port", type=int, default=0, help="HTTPS port (0: any free one)")
    p.add_argument("--admin-port", type=int, default=0, help="admin HTTP port (0: any)")
    p.add_argument("--cert", help="serving certificate (PEM); with --key")
    p.add_argument("--key")
    p.add_argument("--ca", help="the CA of --cert, for --kubeconfig")
    p.add_argument("--certs-dir", help="make a CA and a serving certificate here (with "
                   "deploy/webhook/make-cert.sh) unless they exist; instead of --cert/--key")
    p.add_argument("--token", default="test-token", help="the bearer token accepted")
    p.add_argument("--token-file", help="read the token from this file, or write it there")
    p.add_argument("--kubeconfig", help="write a kubeconfig for this stand-in here")
    p.add_argument("--bookmark-interval", type=float, default=60.0,
                   help="seconds between BOOKMARK events (upstream: about a minute)")
    p.add_argument("--paginate-cache-lists", action="store_true",
                   help="page resourceVersion=0 lists (ListFromCacheSnapshot, 1.34+)")
    p.add_argument("--history-limit", type=int, default=100000,
                   help="events kept for watches and old reads (the watch cache's window)")
    p.add_argument("--load-rate", type=float, default=0, help="start the load driver (events/s)")
    p.add_argument("--load-churn", type=float, default=0.1)
    args = p.parse_args(argv)

    import synthetic  # noqa: E402
    from standin_admin import AdminServer, rss_bytes  # noqa: E402

    if args.certs_dir:
        ca, cert, key = (os.path.join(args.certs_dir, f) for f in ("ca.crt", "tls.crt", "tls.key"))
        if not (os.path.exists(cert) and os.path.exists(key)):
            make_certs(os.path.join(SOURCE_DIR, "deploy", "webhook", "make-cert.sh"), args.certs_dir)
    elif args.cert and args.key:
        ca, cert, key = args.ca, args.cert, args.key
    else:
        p.error("give --certs-dir, or --cert and --key")
    token = args.token
    if args.token_file:
        if os.path.exists(args.token_file):
            with open(args.token_file) as f:
                token = f.read().strip()
        else:
            with open(args.token_file, "w") as f:
                f.write(token + "\n")
    started = time.monotonic()
    api = ApiServer(cert, key, token=token, bookmark_interval=args.bookmark_interval,
                    paginate_cache_lists=args.paginate_cache_lists,
                    history_limit=args.history_limit, port=args.port)
    loaded = {}
    if args.nodes:
        cluster = synthetic.generate(nodes=args.nodes, pods_per_node=args.pods_per_node,
                                     seed=args.seed, cache_dir=args.cache_dir)
        loaded = api.load_cluster(cluster)
        del cluster
    admin = AdminServer(api, port=args.admin_port)
    load = None
    if args.load_rate:
        load = LoadDriver(api, rate=args.load_rate, churn=args.load_churn).start()
        admin.load = load
    if args.kubeconfig:
        token_file = args.token_file or args.kubeconfig + ".token"
        if not args.token_file:
            with open(token_file, "w") as f:
                f.write(token + "\n")
        kubeconfig(args.kubeconfig, api.port, ca, token_file)
    print(json.dumps({"port": api.port, "admin_port": admin.port,
                      "url": "https://127.0.0.1:%d" % api.port, "ca": ca, "token": token,
                      "kubeconfig": args.kubeconfig, "resourceVersion": api.rv,
                      "objects": loaded, "rss_bytes": rss_bytes(),
                      "ready_seconds": round(time.monotonic() - started, 2)}), flush=True)
    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())
    done.wait()
    admin.stop()
    api.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
