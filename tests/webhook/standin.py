"""Stand-ins for the two sides of the API server that `nodegate webhook` talks to (there is no
kube-apiserver to run here, so the tests exercise the contract):

ApiServer     an HTTPS endpoint serving nodes and pods as the API server does for the webhook's
              reads: GET of one node, lists (fieldSelector on spec.nodeName and status.phase,
              resourceVersion in the list metadata), watches (chunked, one JSON event a line,
              BOOKMARK events with allowWatchBookmarks, objects that stop matching a selector
              sent as DELETED, ERROR 410 "too old resource version" for a version compacted
              away, timeoutSeconds), bearer-token authentication.

WebhookClient the API server's webhook client: requests built as CreateV1AdmissionReview builds
              them (every field, the object with the system fields BeforeCreate fills), POSTed to
              /validate?timeout=Ns over TLS checked against the test CA for the Service's DNS
              name, each answer checked with VerifyAdmissionResponse's rules and a denial shown
              as ToStatusErr shows it (kubernetes/apiserver pkg/admission/plugin/webhook).
"""

import base64
import copy
import http.client
import http.server
import json
import socket
import socketserver
import ssl
import subprocess
import threading
import time
import urllib.parse
import uuid


class StandinError(Exception):
    pass


def _field(obj, path):
    value = obj
    for part in path.split("."):
        if not isinstance(value, dict):
            return ""
        value = value.get(part)
    return value if isinstance(value, str) else ("" if value is None else str(value))


def parse_selector(text):
    """spec.nodeName=x,status.phase!=Failed -> [(field, op, value)]."""
    out = []
    for term in filter(None, (text or "").split(",")):
        if "!=" in term:
            field, value = term.split("!=", 1)
            out.append((field, "!=", value))
        else:
            field, value = term.split("=", 1)
            out.append((field.rstrip("="), "=", value))
    return out


def matches(obj, selector):
    for field, op, value in selector:
        have = _field(obj, field)
        if (op == "=") != (have == value):
            return False
    return True


class ApiServer:
    """Nodes and pods, with a resourceVersion per change and the history a watch replays."""

    def __init__(self, cert, key, token="test-token", bookmark_interval=0.5):
        self.token = token
        self.bookmark_interval = bookmark_interval
        self.lock = threading.Condition()
        self.rv = 100
        self.oldest_rv = 100  # watches from before this get 410
        self.objects = {"nodes": {}, "pods": {}}
        self.history = []  # (rv, resource, type, old, new)
        self.requests = []  # (method, path) seen, for assertions
        self.watches_open = 0
        self.stopped = False
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                server._serve(self)

        class Threading(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True
            allow_reuse_address = True

        self.httpd = Threading(("127.0.0.1", 0), Handler)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    # --- changes, as controllers and kubelets would make them ---

    def _key(self, resource, obj):
        meta = obj["metadata"]
        return meta["name"] if resource == "nodes" else (meta.get("namespace", "default"), meta["name"])

    def put(self, resource, obj):
        """Creates or replaces an object; returns it with its new resourceVersion."""
        with self.lock:
            obj = copy.deepcopy(obj)
            meta = obj.setdefault("metadata", {})
            if resource == "pods":
                meta.setdefault("namespace", "default")
            meta.setdefault("uid", str(uuid.uuid4()))
            self.rv += 1
            meta["resourceVersion"] = str(self.rv)
            key = self._key(resource, obj)
            old = self.objects[resource].get(key)
            self.objects[resource][key] = obj
            self.history.append((self.rv, resource, "MODIFIED" if old else "ADDED", old, obj))
            self.lock.notify_all()
            return copy.deepcopy(obj)  # the stored object stays as it was put

    def delete(self, resource, obj_or_key):
        with self.lock:
            key = obj_or_key if not isinstance(obj_or_key, dict) else self._key(resource, obj_or_key)
            old = self.objects[resource].pop(key)
            self.rv += 1
            gone = copy.deepcopy(old)
            gone["metadata"]["resourceVersion"] = str(self.rv)
            self.history.append((self.rv, resource, "DELETED", old, gone))
            self.lock.notify_all()

    def compact(self):
        """Forgets all history: every watch resumed from an older version gets 410 Gone."""
        with self.lock:
            self.oldest_rv = self.rv
            self.history.clear()

    def end_watches(self):
        """Ends every open watch (as an API server restart would), without compacting."""
        with self.lock:
            self.watch_epoch = getattr(self, "watch_epoch", 0) + 1
            self.lock.notify_all()

    def stop(self):
        with self.lock:
            self.stopped = True
            self.lock.notify_all()
        self.httpd.shutdown()
        self.httpd.server_close()

    def count(self, method_path_prefix):
        return sum(1 for m, p in self.requests if (m + " " + p).startswith(method_path_prefix))

    # --- serving ---

    def _send_json(self, h, status, body):
        data = json.dumps(body).encode()
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    def _status(self, h, code, reason, message):
        self._send_json(h, code, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                  "status": "Failure", "message": message, "reason": reason,
                                  "code": code})

    def _serve(self, h):
        url = urllib.parse.urlsplit(h.path)
        query = dict(urllib.parse.parse_qsl(url.query, keep_blank_values=True))
        with self.lock:
            self.requests.append(("GET", url.path + ("?" + url.query if url.query else "")))
        if h.headers.get("Authorization") != "Bearer " + self.token:
            return self._status(h, 401, "Unauthorized", "Unauthorized")
        parts = url.path.strip("/").split("/")
        if parts[:2] != ["api", "v1"] or len(parts) < 3 or parts[2] not in ("nodes", "pods"):
            return self._status(h, 404, "NotFound", "the server could not find the requested resource")
        resource = parts[2]
        if len(parts) == 4 and resource == "nodes":
            with self.lock:
                node = self.objects["nodes"].get(parts[3])
            if node is None:
                return self._status(h, 404, "NotFound", 'nodes "%s" not found' % parts[3])
            return self._send_json(h, 200, node)
        selector = parse_selector(query.get("fieldSelector", ""))
        if query.get("watch") in ("1", "true"):
            return self._watch(h, resource, selector, query)
        with self.lock:
            items = [copy.deepcopy(o) for o in self.objects[resource].values() if matches(o, selector)]
            rv = self.rv
        kind = "NodeList" if resource == "nodes" else "PodList"
        for item in items:  # items of a list carry no kind, as the API server sends them
            item.pop("kind", None)
            item.pop("apiVersion", None)
        self._send_json(h, 200, {"kind": kind, "apiVersion": "v1",
                                 "metadata": {"resourceVersion": str(rv)}, "items": items})

    def _watch(self, h, resource, selector, query):
        since = int(query.get("resourceVersion") or 0)
        bookmarks = query.get("allowWatchBookmarks") in ("1", "true")
        timeout = float(query.get("timeoutSeconds") or 300)
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()

        def send(event):
            data = (json.dumps(event) + "\n").encode()
            h.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            h.wfile.flush()

        with self.lock:
            self.watches_open += 1
            epoch = getattr(self, "watch_epoch", 0)
        try:
            with self.lock:
                too_old = since < self.oldest_rv
            if too_old:
                send({"type": "ERROR", "object": {
                    "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                    "message": "too old resource version: %d (%d)" % (since, self.oldest_rv),
                    "reason": "Expired", "code": 410}})
                h.wfile.write(b"0\r\n\r\n")
                return
            sent = since
            end = time.monotonic() + timeout
            next_bookmark = time.monotonic() + self.bookmark_interval
            while True:
                with self.lock:
                    pending = [e for e in self.history if e[0] > sent and e[1] == resource]
                    if not pending and not self.stopped and getattr(self, "watch_epoch", 0) == epoch:
                        self.lock.wait(timeout=0.1)
                        pending = [e for e in self.history if e[0] > sent and e[1] == resource]
                    stopped = self.stopped or getattr(self, "watch_epoch", 0) != epoch
                    current = self.rv
                for rv, _, kind, old, new in pending:
                    sent = rv
                    was = old is not None and matches(old, selector)
                    now = kind != "DELETED" and matches(new, selector)
                    if kind == "DELETED":
                        event = "DELETED" if was else None
                    elif was and now:
                        event = "MODIFIED"
                    elif now:
                        event = "ADDED"
                    elif was:
                        event = "DELETED"  # no longer matches the selector
                    else:
                        event = None
                    if event:
                        send({"type": event, "object": new})
                if stopped or time.monotonic() >= end:
                    break
                if bookmarks and time.monotonic() >= next_bookmark:
                    sent = max(sent, current)
                    send({"type": "BOOKMARK", "object": {
                        "kind": "Pod" if resource == "pods" else "Node", "apiVersion": "v1",
                        "metadata": {"resourceVersion": str(sent)}}})
                    next_bookmark = time.monotonic() + self.bookmark_interval
            h.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
            pass
        finally:
            with self.lock:
                self.watches_open -= 1


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
