"""ApiServer: an HTTPS endpoint serving a stand-in of the API server's contract (there is no
kube-apiserver to run here) for nodes, pods, coordination.k8s.io Leases and a few apps/batch
workload kinds, from a standin_store.Store. Each behaviour names the upstream code or document
it follows; what it cannot show is listed in tests/webhook/README.md.

Reads (handlers/get.go, storage/cacher, storage/etcd3):
- LIST, resourceVersion unset: a consistent read at the newest version, paged with
  limit/continue. Every page is read at the first page's version (etcd3 store.go GetList reads
  `WithRev` of the token); a token older than the compaction gives 410 Expired with the
  "inconsistentContinue" message and a token (rv -1) to continue at the newest version
  (etcd3/errors.go handleCompactedErrorForPaging).
- LIST, resourceVersion=0: "Any", served from the watch cache: the newest state; limit is ignored
  and the whole list comes in one response (cacher.go shouldDelegateList: "Serve paginated
  requests about revision 0 from watch cache", which returns everything) unless the server is made
  with paginate_cache_lists=True, as API servers with ListFromCacheSnapshot (beta and on by default
  since 1.34, KEP-4988) page lists from cache snapshots.
- LIST, resourceVersion=N, no limit or resourceVersionMatch=NotOlderThan: the newest state once the
  cache has reached N, waiting up to 3 s (watch_cache.go waitUntilFreshAndBlock, blockTimeout),
  else 504 Timeout "Too large resource version" with cause ResourceVersionTooLarge
  (storage/errors.go NewTooLargeResourceVersionError, retryAfterSeconds 1).
- LIST, resourceVersion=N with limit (legacy) or resourceVersionMatch=Exact: the state at N (etcd);
  older than the compaction: 410 "The resourceVersion for the provided list is too old."; newer
  than the newest: 500 "etcdserver: mvcc: required revision is a future revision"
  (kubernetes/kubernetes#132358).
- WATCH from N: every change after N as one JSON event a line; from 0 or unset: synthetic ADDED
  events for the current state first (watch_cache.go getAllEventsSinceLocked; etcd3 watcher for
  an unset version); sendInitialEvents=true ends them with a BOOKMARK annotated
  k8s.io/initial-events-end (KEP-3157); BOOKMARK events with allowWatchBookmarks; an object that
  stops matching the selector arrives as DELETED carrying its previous state
  (cache_watcher.go convertToWatchEvent); N older than the compaction: an ERROR event with a 410
  Expired Status "too old resource version: N (M)"; timeoutSeconds ends the watch cleanly.
- GET of one object: resourceVersion unset reads the newest, N waits as a list does.
- Field selectors (metadata.name, metadata.namespace, spec.nodeName and status.phase for pods,
  spec.unschedulable for nodes; = == !=) and label selectors (standin_select.py).

Writes (registry/generic/registry/store.go; standin_store.Store.create/update/remove): POST 201
or 409 AlreadyExists; PUT 200 if metadata.resourceVersion equals the stored one, else 409
Conflict with the upstream message, 422 without one, and for a missing object 404, except for
leases, whose strategy allows create on update (201); DELETE with optional preconditions, 200
with a Success Status. Request bodies over 3 MiB get 413 (server/config.go
MaxRequestBodyBytes). Writes run no admission, defaulting or validation.

Fault injection (see the methods of ApiServer): revoked token (401), 429 with Retry-After,
500/503, RBAC 403, watch stalls, added latency, connections dropped mid-list.
"""

import base64
import binascii
import json
import random
import socket
import socketserver
import ssl
import threading
import time
import http.server
import urllib.parse

from standin_faults import Faults
from standin_select import SelectorError, matcher, node_name_of
from standin_store import (RESOURCES, Store, StoreError, decode, encode, key_of, reversion,
                           status)

MAX_BODY = 3 * 1024 * 1024  # server/config.go: MaxRequestBodyBytes 3 MiB
WAIT_FRESH = 3.0  # watch_cache.go: blockTimeout
CHUNK = 1 << 20  # bytes per write when streaming a list or a watch
DEFAULT_WATCH_TIMEOUT = 1800  # --min-request-timeout
EVENT_BATCH = 4096  # events a watch takes from the history at a time


class _Dropped(Exception):
    """A connection cut on purpose (ApiServer.drop_connections)."""


def _is_true(value):
    return value in ("1", "true", "True")


def encode_continue(rv, start_key):
    # storage/continue.go EncodeContinue: base64.RawURLEncoding of {"v","rv","start"}.
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": start_key},
                     separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def decode_continue(token):
    """(rv, start_key) of a continue token, or ValueError with the upstream message."""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        c = json.loads(raw)
    except (ValueError, binascii.Error) as e:
        raise ValueError("continue key is not valid: %s" % e)
    if not isinstance(c, dict) or c.get("v") != "meta.k8s.io/v1":
        raise ValueError("continue key is not valid: server does not recognize this encoded version")
    if not c.get("rv"):
        raise ValueError("continue key is not valid: incorrect encoded start resourceVersion "
                         "(version meta.k8s.io/v1)")
    if not c.get("start"):
        raise ValueError("continue key is not valid: encoded start key empty (version meta.k8s.io/v1)")
    return int(c["rv"]), c["start"]


class Route:
    """What a request names, as the API server's RequestInfo: verb, resource, namespace, name."""

    def __init__(self, method, path, query):
        self.method = method
        self.query = query
        self.resource = None
        self.namespace = ""
        self.name = ""
        self.verb = ""
        parts = [p for p in path.split("/") if p]
        if parts[:2] == ["api", "v1"]:
            rest, group = parts[2:], ""
        elif len(parts) >= 3 and parts[0] == "apis":
            rest, group = parts[3:], parts[1]
            if (parts[1], parts[2]) not in {(r.group, r.version) for r in RESOURCES.values()}:
                return
        else:
            return
        if len(rest) >= 2 and rest[0] == "namespaces":
            self.namespace = rest[1]
            rest = rest[2:]
        if not rest or rest[0] not in RESOURCES or RESOURCES[rest[0]].group != group:
            return
        resource = RESOURCES[rest[0]]
        if len(rest) > 2 or (self.namespace and not resource.namespaced):
            return
        self.resource = resource
        self.name = rest[1] if len(rest) == 2 else ""
        if method == "GET":
            self.verb = "get" if self.name else (
                "watch" if _is_true(query.get("watch")) else "list")
        else:
            self.verb = {"POST": "create", "PUT": "update", "DELETE": "delete",
                         "PATCH": "patch"}.get(method, method.lower())
            if method == "DELETE" and not self.name:
                self.verb = "deletecollection"

    @property
    def writes(self):
        return self.verb not in ("get", "list", "watch")


class ApiServer(Faults):
    """Serves nodes, pods, leases and workloads over HTTPS from a Store (a stand-in of the API
    server's contract). put/delete/compact/end_watches change the state directly, as
    controllers and kubelets would; clients use the REST API on 127.0.0.1:`port`."""

    def __init__(self, cert, key, token="test-token", bookmark_interval=0.5, *,
                 paginate_cache_lists=False, history_limit=None, port=0,
                 user="system:serviceaccount:nodegate:nodegate", seed=0):
        self.token = token
        self.bookmark_interval = bookmark_interval
        self.paginate_cache_lists = paginate_cache_lists
        self.user = user
        self.store = Store(history_limit=history_limit)
        self.lock = self.store.cond  # one lock for the state, the log and the faults
        self.requests = []  # (method, path with query, status), every request answered
        self.verb_counts = {}  # {(verb, resource): n}
        self.watches_open = 0
        self.stopped = False
        self._rng = random.Random(seed)
        self._init_faults()
        self._make_server(cert, key, port)

    def _make_server(self, cert, key, port):
        server = self
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def send_response(self, code, message=None):
                super().send_response(code, message)
                with server.lock:
                    server.requests.append((self.command, self.path, code))

            def do_GET(self):
                server._handle(self)

            do_POST = do_PUT = do_DELETE = do_PATCH = do_GET

        class Threading(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True
            block_on_close = False
            allow_reuse_address = True
            request_queue_size = 512

            def finish_request(self, request, client_address):
                # The TLS handshake in the connection's own thread: a slow client never holds
                # up accept().
                # As Go's net/http: no Nagle delay on small writes (watch events).
                request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                request.settimeout(30)
                try:
                    tls = ctx.wrap_socket(request, server_side=True)
                except (ssl.SSLError, OSError):
                    request.close()
                    return
                tls.settimeout(None)
                try:
                    Handler(tls, client_address, self)
                finally:
                    try:
                        tls.close()
                    except OSError:
                        pass

            def handle_error(self, request, client_address):
                pass

        self.httpd = Threading(("127.0.0.1", port), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    # --- the state, changed directly (as controllers and kubelets would) ---

    @property
    def rv(self):
        return self.store.rv

    @property
    def oldest_rv(self):
        return self.store.compacted

    def put(self, resource, obj):
        """Creates or replaces an object (a dict; copied); returns it with its new
        resourceVersion (and uid, creationTimestamp, namespace "default" if it had none)."""
        obj = json.loads(json.dumps(obj, default=_json_default))
        return self.store.put(resource, obj)[0]

    def delete(self, resource, obj_or_key):
        """Deletes an object given as a dict, a "namespace/name" key, a (namespace, name) pair
        or a node's name; returns its last state."""
        r = RESOURCES[resource]
        if isinstance(obj_or_key, dict):
            meta = obj_or_key["metadata"]
            key = key_of(r, meta.get("namespace", "default"), meta["name"])
        elif isinstance(obj_or_key, tuple):
            key = key_of(r, *obj_or_key)
        else:
            key = obj_or_key
        return self.store.delete(r, key)

    def load(self, resource, records):
        """Bulk-loads pre-encoded objects (synthetic.Cluster's records); returns how many were
        new. History is compacted afterwards (Store.load)."""
        return self.store.load(resource, records)

    def load_cluster(self, cluster):
        """Loads every resource of a synthetic.Cluster; returns {resource: count}."""
        return {res: self.load(res, records) for res, records in cluster.records.items()}

    def get(self, resource, key):
        """The stored object as a dict, or None."""
        obj = self.store.get(resource, key)
        return decode(obj.data) if obj else None

    def objects(self, resource):
        """How many objects of `resource` are stored."""
        return len(self.store.table(resource).objects)

    def compact(self):
        """Forgets all history: every watch resumed, list continued or Exact list from an older
        version gets 410 Gone."""
        self.store.compact()

    def end_watches(self):
        """Ends every open watch (as an API server restart would), without compacting."""
        self.store.end_watches()

    def stop(self):
        with self.lock:
            self.stopped = True
            self._stalled = False
            self.lock.notify_all()
        self.httpd.shutdown()
        self.httpd.server_close()

    # --- what clients did ---

    def count(self, method_path_prefix):
        """Requests whose "METHOD /path?query" starts with the prefix."""
        with self.lock:
            return sum(1 for m, p, _ in self.requests
                       if (m + " " + p).startswith(method_path_prefix))

    def verb_count(self, verb, resource=None):
        """Requests of a verb (get, list, watch, create, update, delete, ...), for one resource
        or all."""
        with self.lock:
            return sum(n for (v, r), n in self.verb_counts.items()
                       if v == verb and (resource is None or r == resource))

    def clear_log(self):
        """Forgets the request log and the per-verb counters."""
        with self.lock:
            self.requests.clear()
            self.verb_counts.clear()

    # --- serving ---

    def _send(self, h, code, body, content_type="application/json", headers=()):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        h.send_response(code)
        h.send_header("Content-Type", content_type)
        h.send_header("Content-Length", str(len(data)))
        for k, v in headers:
            h.send_header(k, v)
        h.end_headers()
        h.wfile.write(data)

    def _status(self, h, st, headers=()):
        self._send(h, st["code"], st, headers=headers)

    def _handle(self, h):
        url = urllib.parse.urlsplit(h.path)
        query = dict(urllib.parse.parse_qsl(url.query, keep_blank_values=True))
        route = Route(h.command, url.path, query)
        body = b""
        length = int(h.headers.get("Content-Length") or 0)
        too_big = length > MAX_BODY
        if too_big:
            # Read up to the limit (and a little more, as Go's server drains a body before it
            # closes), answer 413 and close.
            h.rfile.read(min(length, MAX_BODY + (256 << 10)))
            h.close_connection = True
        elif length:
            body = h.rfile.read(length)
        with self.lock:
            key = (route.verb or h.command.lower(), route.resource.plural if route.resource else "")
            self.verb_counts[key] = self.verb_counts.get(key, 0) + 1
            delay, writes_only = self._latency
        if delay and (route.writes or not writes_only):
            time.sleep(delay)
        if url.path in ("/healthz", "/readyz", "/livez"):
            return self._send(h, 200, b"ok", "text/plain; charset=utf-8")
        with self.lock:
            revoked = self._revoked
            token = self.token
        if revoked or h.headers.get("Authorization") != "Bearer " + token:
            return self._status(h, status(401, "Unauthorized", "Unauthorized"))
        with self.lock:
            throttled = self._take(self._throttle, route.verb)
            retry_after = self._throttle["retry_after"] if throttled else 0
            forbidden = route.resource is not None and (
                route.verb, route.resource.plural) in self._forbidden
            failed = not throttled and not forbidden and self._take(self._errors, route.verb)
            code = self._errors["code"] if failed else 0
        if throttled:
            return self._send(h, 429, b"Too many requests, please try again later.\n",
                              "text/plain; charset=utf-8",
                              headers=[("Retry-After", str(retry_after)),
                                       ("X-Content-Type-Options", "nosniff")])
        if forbidden:
            return self._status(h, self._forbidden_status(route))
        if failed:
            if code == 503:
                return self._status(h, status(503, "ServiceUnavailable",
                                              "the server is currently unable to handle the "
                                              "request"), headers=[("Retry-After", "1")])
            return self._status(h, status(code, "InternalError", "Internal error occurred: "
                                          "injected by the stand-in",
                                          {"causes": [{"message": "injected by the stand-in"}]}))
        if too_big:
            return self._status(h, status(413, "RequestEntityTooLarge",
                                          "Request entity too large: limit is %d" % MAX_BODY))
        if url.path == "/version":
            return self._send(h, 200, {"major": "1", "minor": "31", "gitVersion": "v1.31.0-standin",
                                       "platform": "linux/amd64"})
        found = discovery(url.path, self.port)
        if found is not None:
            return self._send(h, 200, found)
        if route.resource is None:
            return self._status(h, status(404, "NotFound",
                                          "the server could not find the requested resource",
                                          {}))
        try:
            if route.verb == "get":
                return self._get(h, route)
            if route.verb == "list":
                return self._list(h, route)
            if route.verb == "watch":
                return self._watch(h, route)
            if route.verb in ("create", "update", "delete"):
                return self._write(h, route, body)
            return self._status(h, status(
                405, "MethodNotAllowed", "%s is not supported on resources of kind %s by the "
                "stand-in of the API server's contract" % (route.verb, route.resource.plural),
                {"group": route.resource.group, "kind": route.resource.plural}))
        except SelectorError as e:
            return self._status(h, status(400, "BadRequest", str(e)))
        except StoreError as e:
            return self._status(h, e.status)
        except _Dropped:
            h.close_connection = True

    def _forbidden_status(self, route):
        # RBAC's answer (endpoints/handlers/responsewriters ForbiddenStatusError).
        r = route.resource
        what = '%s "%s"' % (r.group_resource, route.name) if route.name else r.group_resource
        scope = ('in the namespace "%s"' % route.namespace) if route.namespace else \
            "at the cluster scope"
        return status(403, "Forbidden", '%s is forbidden: User "%s" cannot %s resource "%s" in '
                      'API group "%s" %s' % (what, self.user, route.verb, r.plural, r.group, scope),
                      {"name": route.name, "group": r.group, "kind": r.plural}
                      if route.name else {"group": r.group, "kind": r.plural})

    def _too_large(self, wanted):
        # storage/errors.go NewTooLargeResourceVersionError via errors.NewTimeoutError.
        return status(504, "Timeout", "Timeout: Too large resource version: %d, current: %d" % (
            wanted, self.store.rv), {"causes": [{"reason": "ResourceVersionTooLarge",
                                                 "message": "Too large resource version"}],
                                     "retryAfterSeconds": 1})

    def _parse_rv(self, text):
        try:
            rv = int(text)
            if rv < 0:
                raise ValueError
            return rv
        except ValueError:
            # storage APIObjectVersioner.ParseResourceVersion, as a BadRequest.
            raise StoreError(status(400, "BadRequest", "invalid resource version: %s" % text))

    def _get(self, h, route):
        r = route.resource
        rv_text = route.query.get("resourceVersion")
        if rv_text and rv_text != "0":
            wanted = self._parse_rv(rv_text)
            if not self.store.wait_for(wanted, WAIT_FRESH):
                return self._status(h, self._too_large(wanted))
        obj = self.store.get(r, key_of(r, route.namespace, route.name))
        if obj is None:
            details = {"name": route.name, "kind": r.plural}
            if r.group:
                details["group"] = r.group
            return self._status(h, status(404, "NotFound", '%s "%s" not found' % (
                r.group_resource, route.name), details))
        self._send(h, 200, r.object_prefix + obj.data[1:])

    # --- LIST ---

    def _list(self, h, route):
        r, q = route.resource, route.query
        rv_text = q.get("resourceVersion")
        rv_match = q.get("resourceVersionMatch", "")
        cont = q.get("continue", "")
        try:
            limit = int(q.get("limit") or 0)
        except ValueError:
            limit = 0
        invalid = None
        if rv_match and not rv_text:
            invalid = "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless " \
                      "resourceVersion is provided"
        elif rv_match and cont:
            invalid = "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when " \
                      "continue is provided"
        elif rv_match not in ("", "NotOlderThan", "Exact"):
            invalid = 'resourceVersionMatch: Unsupported value: "%s": supported values: ' \
                      '"Exact", "NotOlderThan", ""' % rv_match
        if invalid:
            # handlers/get.go ListResource: ValidateListOptions -> NewInvalid(ListOptions).
            return self._status(h, status(422, "Invalid", 'ListOptions.meta.k8s.io "" is invalid: '
                                          + invalid, {"group": "meta.k8s.io",
                                                      "kind": "ListOptions"}))
        match = matcher(r, q.get("fieldSelector", ""), q.get("labelSelector", ""))
        prefix = (route.namespace + "/") if route.namespace else ""
        page_limit = limit
        start = ""
        if cont:
            if rv_text not in (None, "", "0"):
                return self._status(h, status(400, "BadRequest", "specifying resource version "
                                              "is not allowed when using continue"))
            try:
                at, start_rel = decode_continue(cont)
            except ValueError as e:
                return self._status(h, status(400, "BadRequest", str(e)))
            start = prefix + start_rel
            if at == -1:  # the "inconsistent" token given with a 410: continue at the newest
                at = self.store.rv
            elif at < self.store.compacted:
                return self._status(h, status(
                    410, "Expired", "The provided continue parameter is too old to display a "
                    "consistent list result. You can start a new list without the continue "
                    "parameter, or use the continue token in this response to retrieve the "
                    "remainder of the results. Continuing with the provided token results in an "
                    "inconsistent list - objects that were created, modified, or deleted between "
                    "the time the first chunk was returned and now may show up in the list.",
                    metadata={"continue": encode_continue(-1, start_rel)}))
            elif at > self.store.rv:
                return self._status(h, status(500, "", "etcdserver: mvcc: required revision is "
                                              "a future revision"))
        elif rv_text is None or rv_text == "":
            at = self.store.rv  # consistent read ("Most Recent")
        else:
            wanted = self._parse_rv(rv_text)
            exact = rv_match == "Exact" or (not rv_match and limit > 0 and wanted != 0)
            if exact:
                if wanted < self.store.compacted:
                    return self._status(h, status(410, "Expired", "The resourceVersion for the "
                                                  "provided list is too old."))
                if wanted > self.store.rv:
                    return self._status(h, status(500, "", "etcdserver: mvcc: required revision "
                                                  "is a future revision"))
                at = wanted
            else:  # "Any" or "NotOlderThan": the watch cache
                if not self.store.wait_for(wanted, WAIT_FRESH):
                    return self._status(h, self._too_large(wanted))
                at = self.store.rv
                if not self.paginate_cache_lists:
                    page_limit = 0
        objs, next_key, remaining = self.store.snapshot(
            r, at, match or (lambda key, obj: True), route.namespace, start, page_limit,
            node_name_of(r, q.get("fieldSelector", "")))
        meta = b'"resourceVersion":"%d"' % at
        if next_key is not None:
            meta += b',"continue":"%s"' % encode_continue(at, next_key[len(prefix):]).encode()
            if match is None:
                meta += b',"remainingItemCount":%d' % remaining
        head = b'{"kind":"%s","apiVersion":"%s","metadata":{%s},"items":[' % (
            r.list_kind.encode(), r.api_version.encode(), meta)
        self._stream_list(h, route, head, objs)

    def _stream_list(self, h, route, head, objs):
        """Sends the list with chunked transfer encoding in writes of about 1 MiB."""
        with self.lock:
            drop = self._take(self._drop, route.verb)
            cut_at = self._drop["after"] if drop else -1
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()
        sent = 0
        parts = [head]
        size = len(head)
        first = True
        for obj in objs:
            if not first:
                parts.append(b",")
                size += 1
            first = False
            parts.append(obj.data)
            size += len(obj.data)
            if size >= CHUNK:
                sent = self._write_chunk(h, parts, size, sent, cut_at)
                parts, size = [], 0
        parts.append(b"]}\n")
        size += 3
        sent = self._write_chunk(h, parts, size, sent, cut_at)
        h.wfile.write(b"0\r\n\r\n")

    def _write_chunk(self, h, parts, size, sent, cut_at):
        if cut_at >= 0 and sent + size > cut_at:
            data = b"".join(parts)
            keep = cut_at - sent
            h.wfile.write(b"%x\r\n" % size + data[:keep])
            try:
                h.connection.shutdown(socket.SHUT_RDWR)  # no close_notify: a cut connection
            except OSError:
                pass
            raise _Dropped()
        parts.insert(0, b"%x\r\n" % size)
        parts.append(b"\r\n")
        h.wfile.write(b"".join(parts))  # one copy, one write of about 1 MiB
        return sent + size

    # --- WATCH ---

    def _event_line(self, r, type_, data):
        return b'{"type":"%s","object":%s%s}\n' % (type_.encode(), r.object_prefix, data[1:])

    def _bookmark_line(self, r, rv, initial_end=False):
        meta = b'"resourceVersion":"%d","creationTimestamp":null' % rv
        if initial_end:
            meta += b',"annotations":{"k8s.io/initial-events-end":"true"}'
        body = r.object_prefix + b'"metadata":{' + meta + b"}"
        if r.bookmark_body not in (b"{}", b""):
            body += b"," + r.bookmark_body
        return b'{"type":"BOOKMARK","object":%s}}\n' % body

    def _watch(self, h, route):
        r, q = route.resource, route.query
        match = matcher(r, q.get("fieldSelector", ""), q.get("labelSelector", ""))
        if route.namespace:
            ns_match, ns = match, route.namespace + "/"
            match = (lambda key, obj: key.startswith(ns) and (ns_match is None or ns_match(key, obj)))
        ok = match or (lambda key, obj: True)
        rv_text = q.get("resourceVersion")
        initial = _is_true(q.get("sendInitialEvents"))
        bookmarks = _is_true(q.get("allowWatchBookmarks"))
        timeout = float(q.get("timeoutSeconds") or DEFAULT_WATCH_TIMEOUT)
        since = self._parse_rv(rv_text) if rv_text else 0
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()
        out = []

        def flush():
            if out:
                data = b"".join(out)
                out.clear()
                h.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

        with self.lock:
            self.watches_open += 1
            epoch = self.store.epoch
        try:
            if initial or not rv_text or since == 0:
                with self.lock:
                    sent = self.store.rv
                objs, _, _ = self.store.snapshot(r, sent, ok, route.namespace,
                                                 node_name=node_name_of(r, q.get("fieldSelector", "")))
                size = 0
                for obj in objs:
                    out.append(self._event_line(r, "ADDED", obj.data))
                    size += len(obj.data)
                    if size >= CHUNK:
                        flush()
                        size = 0
                if initial and bookmarks:
                    out.append(self._bookmark_line(r, sent, initial_end=True))
                flush()
            else:
                sent = since
                with self.lock:
                    too_old = since < self.store.compacted
                    compacted = self.store.compacted
                if too_old:
                    st = status(410, "Expired", "too old resource version: %d (%d)" % (
                        since, compacted))
                    out.append(b'{"type":"ERROR","object":%s}\n' % json.dumps(st).encode())
                    flush()
                    h.wfile.write(b"0\r\n\r\n")
                    return
            self._follow(h, r, ok, sent, epoch, timeout, bookmarks, out, flush)
            h.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
            h.close_connection = True
        finally:
            with self.lock:
                self.watches_open -= 1

    def _follow(self, h, r, ok, sent, epoch, timeout, bookmarks, out, flush):
        # Bookmarks every bookmark_interval and once 2 s before the timeout ends the watch
        # (cache_watcher.go nextBookmarkTime: "roughly every minute" and "right before the
        # watcher timeout").
        end = time.monotonic() + timeout
        pre_timeout = end - 2.0
        next_bookmark = min(time.monotonic() + self.bookmark_interval, pre_timeout) \
            if pre_timeout > time.monotonic() else time.monotonic() + self.bookmark_interval
        while True:
            with self.lock:
                while self._stalled and not self.stopped and self.store.epoch == epoch:
                    self.lock.wait(0.5)
                events = self.store.events_after(r.plural, sent, EVENT_BATCH)
                if not events and not self.stopped and self.store.epoch == epoch:
                    wait = min(end, next_bookmark if bookmarks else end) - time.monotonic()
                    if wait > 0:
                        self.lock.wait(min(wait, 0.5))
                    events = self.store.events_after(r.plural, sent, EVENT_BATCH)
                if self._stalled:
                    continue
                done = self.stopped or self.store.epoch != epoch
                # A bookmark may only claim the newest version once every change before it
                # was sent: not while a backlog is sent in batches.
                current = self.store.rv if len(events) < EVENT_BATCH else 0
                if sent < self.store.compacted:
                    # History this watch had not sent yet is gone (compact(), or the window
                    # trimmed): end it, as the cacher closes a watcher it cannot feed; resuming
                    # from `sent` then gets 410.
                    return
            size = 0
            for ev in events:
                sent = ev.rv
                was = ev.old is not None and ok(ev.key, ev.old)
                if ev.type == "DELETED":
                    if was:
                        out.append(self._event_line(r, "DELETED", ev.new.data))
                    continue
                now = ok(ev.key, ev.new)
                if now:
                    out.append(self._event_line(r, "MODIFIED" if was else "ADDED", ev.new.data))
                elif was:
                    out.append(self._event_line(r, "DELETED", reversion(ev.old.data, ev.rv)))
                else:
                    continue
                size += len(ev.new.data)
                if size >= CHUNK:
                    flush()
                    size = 0
            flush()
            now_t = time.monotonic()
            if done or now_t >= end:
                return
            # (current < sent: a watch from a version still to come; no bookmark before it)
            if bookmarks and now_t >= next_bookmark and current >= sent:
                sent = max(sent, current)
                out.append(self._bookmark_line(r, sent))
                flush()
                next_bookmark = now_t + self.bookmark_interval
                if now_t < pre_timeout < next_bookmark:
                    next_bookmark = pre_timeout

    # --- writes ---

    def _write(self, h, route, body):
        r = route.resource
        obj = None
        if body:
            try:
                obj = json.loads(body)
            except ValueError as e:
                return self._status(h, status(400, "BadRequest", "the body of the request was in "
                                              "an unknown format: %s" % e))
        if route.verb == "delete":
            pre = (obj or {}).get("preconditions")
            gone = self.store.remove(r, key_of(r, route.namespace, route.name), route.name, pre)
            details = {"name": route.name, "group": r.group, "kind": r.plural,
                       "uid": gone["metadata"].get("uid")}
            if not r.group:
                del details["group"]
            # rest.Store.Delete without ReturnDeletedObject: a Success Status.
            return self._send(h, 200, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                       "status": "Success", "details": details})
        if not isinstance(obj, dict):
            return self._status(h, status(400, "BadRequest", "the body of the request was in an "
                                          "unknown format"))
        if obj.get("kind") not in (None, r.kind):
            return self._status(h, status(400, "BadRequest", "the API version in the data (%s) "
                                          "does not match the expected API version (%s)" % (
                                              obj.get("apiVersion"), r.api_version)))
        meta = obj.setdefault("metadata", {})
        if r.namespaced:
            if meta.get("namespace") and meta["namespace"] != route.namespace:
                return self._status(h, status(400, "BadRequest", "the namespace of the provided "
                                              "object does not match the namespace sent on the "
                                              "request"))
            meta["namespace"] = route.namespace
        if route.verb == "create":
            if not meta.get("name") and meta.get("generateName"):
                meta["name"] = meta["generateName"] + "".join(
                    self._rng.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(5))
            if not meta.get("name"):
                return self._status(h, status(
                    422, "Invalid", '%s "" is invalid: metadata.name: Required value: name or '
                    "generateName is required" % r.kind, {"kind": r.kind, "causes": [{
                        "reason": "FieldValueRequired", "message": "Required value: name or "
                        "generateName is required", "field": "metadata.name"}]}))
            stored = self.store.create(r, obj)
            return self._send(h, 201, r.object_prefix + _item(stored)[1:])
        if meta.get("name") != route.name:
            return self._status(h, status(400, "BadRequest", "the name of the object (%s) does "
                                          "not match the name on the URL (%s)" % (
                                              meta.get("name"), route.name)))
        stored, created = self.store.update(r, key_of(r, route.namespace, route.name), obj)
        return self._send(h, 201 if created else 200, r.object_prefix + _item(stored)[1:])


_SHORT_NAMES = {"nodes": ["no"], "pods": ["po"], "daemonsets": ["ds"], "deployments": ["deploy"],
                "replicasets": ["rs"], "statefulsets": ["sts"]}


def discovery(path, port):
    """The legacy discovery documents (/api, /apis, /api/v1, /apis/GROUP/VERSION) for the
    resources served, so kubectl and client-go find them; None for other paths. Only the verbs
    the stand-in implements are listed (no patch, no deletecollection)."""
    groups = {}
    for r in RESOURCES.values():
        groups.setdefault((r.group, r.version), []).append(r)
    if path == "/api":
        return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:%d" % port}]}
    if path == "/apis":
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [
            {"name": g, "versions": [{"groupVersion": g + "/" + v, "version": v}],
             "preferredVersion": {"groupVersion": g + "/" + v, "version": v}}
            for g, v in sorted(groups) if g]}
    parts = [p for p in path.split("/") if p]
    key = ("", "v1") if parts == ["api", "v1"] else (
        (parts[1], parts[2]) if len(parts) == 3 and parts[0] == "apis" else None)
    if key not in groups:
        return None
    return {"kind": "APIResourceList", "apiVersion": "v1",
            "groupVersion": "/".join(filter(None, key)), "resources": [
                {"name": r.plural, "singularName": r.kind.lower(), "namespaced": r.namespaced,
                 "kind": r.kind, "verbs": ["create", "delete", "get", "list", "update", "watch"],
                 "shortNames": _SHORT_NAMES.get(r.plural, [])} for r in groups[key]]}


def _json_default(value):
    """Timestamps that YAML fixtures decode to datetimes, written back as RFC 3339."""
    if hasattr(value, "isoformat"):
        return value.isoformat().replace("+00:00", "Z")
    raise TypeError("not JSON: %r" % (value,))


def _item(obj):
    """The item form of a dict as the store encodes it."""
    return encode(obj, int(obj["metadata"]["resourceVersion"]))


__all__ = ["ApiServer", "RESOURCES", "decode_continue", "encode_continue"]
