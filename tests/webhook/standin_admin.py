"""The control channel of a stand-in of the API server's contract run as its own process
(`python3 standin.py --serve`): plain HTTP on a loopback port, JSON in and out, so a test or a
demo in another process can change the state, inject faults and drive load.

    GET  /admin/status                  port, resourceVersion, compacted, object counts, open
                                        watches, RSS, faults, load, request count
    POST /admin/put?resource=R          body: an object, or {"items": [...]}; stored as given
                                        (unconditional); answers {"items": [stored...]}
    POST /admin/delete?resource=R&key=K K: "namespace/name" or a node's name; answers the object
    GET  /admin/get?resource=R&key=K    the stored object (404 if none)
    POST /admin/compact                 forget history (410 for older versions)
    POST /admin/end-watches             end every open watch
    POST /admin/fault                   body: {"fault": NAME, ...arguments}; NAME is one of
                                        FAULTS (ApiServer's methods of that name); answers the
                                        faults in force
    GET  /admin/load                    the load driver's figures (null if none ran)
    POST /admin/load                    body: {"rate": 200, "churn": 0.1, "seed": 1} starts it
                                        (a running one is stopped first); {"stop": true} stops it
    GET  /admin/requests?since=N        the request log from entry N: {"requests": [[method,
                                        path, status], ...], "next": M, "verbs": {verb: n}}
    POST /admin/clear-log               forget the request log and counters

AdminClient wraps these with the ApiServer method names.
"""

import http.client
import http.server
import json
import socketserver
import threading
import urllib.parse

from standin_load import LoadDriver

FAULTS = ("revoke_token", "restore_token", "set_token", "throttle", "fail", "forbid",
          "stall_watches", "release_watches", "add_latency", "drop_connections", "clear_faults")


def rss_bytes():
    """This process's resident set size (VmRSS)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


class AdminServer:
    def __init__(self, api, port=0):
        self.api = api
        self.load = None
        admin = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                admin._handle(self)

            do_POST = do_GET

        class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True
            allow_reuse_address = True

        self.httpd = Server(("127.0.0.1", port), Handler)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True).start()

    def stop(self):
        if self.load:
            self.load.stop()
        self.httpd.shutdown()
        self.httpd.server_close()

    def status(self):
        api = self.api
        return {"port": api.port, "resourceVersion": api.rv, "compacted": api.oldest_rv,
                "objects": {name: len(t.objects) for name, t in api.store.tables.items()},
                "watches_open": api.watches_open, "rss_bytes": rss_bytes(),
                "faults": api.faults(), "load": self.load.stats() if self.load else None,
                "requests": len(api.requests)}

    def _reply(self, h, code, body):
        data = json.dumps(body).encode()
        h.send_response(code)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    def _handle(self, h):
        url = urllib.parse.urlsplit(h.path)
        q = dict(urllib.parse.parse_qsl(url.query))
        length = int(h.headers.get("Content-Length") or 0)
        try:
            body = json.loads(h.rfile.read(length)) if length else {}
        except ValueError as e:
            return self._reply(h, 400, {"error": "body: %s" % e})
        try:
            code, out = self._route(h.command, url.path, q, body)
        except (KeyError, TypeError, ValueError) as e:
            code, out = 400, {"error": "%s: %s" % (type(e).__name__, e)}
        self._reply(h, code, out)

    def _route(self, method, path, q, body):
        api = self.api
        if path == "/admin/status":
            return 200, self.status()
        if path == "/admin/get":
            obj = api.get(q["resource"], q["key"])
            return (200, obj) if obj is not None else (404, {"error": "not found"})
        if method != "POST" and path not in ("/admin/load", "/admin/requests"):
            return 405, {"error": "use POST"}
        if path == "/admin/put":
            items = body["items"] if "items" in body else [body]
            return 200, {"items": [api.put(q["resource"], obj) for obj in items]}
        if path == "/admin/delete":
            return 200, api.delete(q["resource"], q["key"])
        if path == "/admin/compact":
            api.compact()
            return 200, {"resourceVersion": api.rv}
        if path == "/admin/end-watches":
            api.end_watches()
            return 200, {}
        if path == "/admin/fault":
            name = body.pop("fault")
            if name not in FAULTS:
                return 400, {"error": "unknown fault %r; one of %s" % (name, ", ".join(FAULTS))}
            getattr(api, name)(**body)
            return 200, api.faults()
        if path == "/admin/load":
            if method == "POST":
                if self.load:
                    self.load.stop()
                if not body.get("stop"):
                    self.load = LoadDriver(api, rate=body.get("rate", 200),
                                           churn=body.get("churn", 0.1),
                                           seed=body.get("seed", 1)).start()
            return 200, self.load.stats() if self.load else None
        if path == "/admin/requests":
            since = int(q.get("since", 0))
            with api.lock:
                entries = [list(e) for e in api.requests[since:]]
                verbs = {}
                for (verb, resource), n in api.verb_counts.items():
                    verbs["%s %s" % (verb, resource)] = n
            return 200, {"requests": entries, "next": since + len(entries), "verbs": verbs}
        if path == "/admin/clear-log":
            api.clear_log()
            return 200, {}
        return 404, {"error": "no such admin endpoint: " + path}


class AdminError(Exception):
    pass


class AdminClient:
    """Drives a stand-in run as its own process through its admin port, with the method names
    of ApiServer."""

    def __init__(self, port, host="127.0.0.1", timeout=30):
        self.host, self.port, self.timeout = host, port, timeout

    def call(self, method, path, body=None, **query):
        conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        try:
            if query:
                path += "?" + urllib.parse.urlencode(query)
            data = json.dumps(body).encode() if body is not None else None
            conn.request(method, path, body=data, headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            out = json.loads(resp.read() or b"null")
        finally:
            conn.close()
        if resp.status != 200:
            raise AdminError("%s %s: %d %s" % (method, path, resp.status, out))
        return out

    def status(self):
        return self.call("GET", "/admin/status")

    def put(self, resource, obj):
        """Stores one object (dict) or a list of them; returns what was stored."""
        items = obj if isinstance(obj, list) else [obj]
        out = self.call("POST", "/admin/put", {"items": items}, resource=resource)["items"]
        return out if isinstance(obj, list) else out[0]

    def delete(self, resource, key):
        return self.call("POST", "/admin/delete", resource=resource, key=key)

    def get(self, resource, key):
        try:
            return self.call("GET", "/admin/get", resource=resource, key=key)
        except AdminError:
            return None

    def compact(self):
        return self.call("POST", "/admin/compact")["resourceVersion"]

    def end_watches(self):
        self.call("POST", "/admin/end-watches")

    def fault(self, name, **arguments):
        """Sets a fault by its ApiServer method name; returns the faults in force."""
        return self.call("POST", "/admin/fault", dict(arguments, fault=name))

    def revoke_token(self):
        return self.fault("revoke_token")

    def restore_token(self):
        return self.fault("restore_token")

    def set_token(self, token):
        return self.fault("set_token", token=token)

    def throttle(self, count=None, retry_after=1, fraction=None, verbs=None):
        return self.fault("throttle", count=count, retry_after=retry_after, fraction=fraction,
                          verbs=verbs)

    def fail(self, count=None, code=500, fraction=None, verbs=None):
        return self.fault("fail", count=count, code=code, fraction=fraction, verbs=verbs)

    def forbid(self, verb, resource):
        return self.fault("forbid", verb=verb, resource=resource)

    def stall_watches(self):
        return self.fault("stall_watches")

    def release_watches(self):
        return self.fault("release_watches")

    def add_latency(self, seconds, writes_only=False):
        return self.fault("add_latency", seconds=seconds, writes_only=writes_only)

    def drop_connections(self, after_bytes, count=1, verbs=("list",)):
        return self.fault("drop_connections", after_bytes=after_bytes, count=count,
                          verbs=list(verbs))

    def clear_faults(self):
        return self.fault("clear_faults")

    def start_load(self, rate=200, churn=0.1, seed=1):
        return self.call("POST", "/admin/load", {"rate": rate, "churn": churn, "seed": seed})

    def stop_load(self):
        """Stops the load driver; returns its figures."""
        return self.call("POST", "/admin/load", {"stop": True})

    def load_stats(self):
        return self.call("GET", "/admin/load")

    def requests(self, since=0):
        return self.call("GET", "/admin/requests", since=since)

    def clear_log(self):
        self.call("POST", "/admin/clear-log")
