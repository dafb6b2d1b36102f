"""The versioned object store behind the stand-in of the API server's contract (standin_api.py).

It keeps what etcd and the API server's watch cache keep, in the form the stand-in serves:

- every object's JSON pre-encoded (bytes), in a canonical form that starts with
  `{"metadata":{"resourceVersion":"N",` so a new resourceVersion is spliced in without decoding;
  items of a list carry no kind/apiVersion (as the API server sends them), single objects and
  watch events get them prepended;
- one resourceVersion counter for every resource (etcd's revision: k8s.io/apiserver
  pkg/storage/etcd3 uses mod_revision as metadata.resourceVersion);
- the history of changes since the last compaction, per resource, so a list can be read at an
  older revision (a `continue` token carries the revision of the list's first page: etcd3
  store.go GetList reads every page `WithRev`) and a watch can be resumed;
- the fields a field selector can test (metadata.name/namespace from the key, plus per resource
  the ones upstream registers, e.g. spec.nodeName and status.phase for pods) and the labels, so
  a selector never decodes an object;
- an index of pods by spec.nodeName, as the watch cache keeps (pkg/registry/core/pod/storage:
  NodeNameTriggerFunc / the "f:spec.nodeName" indexer), so a per-node list is not a scan.

Keys are "namespace/name" (namespaced) or "name", kept sorted: etcd returns a range in key order
(/registry/<resource>/<namespace>/<name>) and a continue token names the next key.
"""

import bisect
import heapq
import json
import threading
import time
import uuid

RV_PREFIX = b'{"metadata":{"resourceVersion":"'


class Resource:
    """One API resource the stand-in serves: where it lives and what its selectors may test."""

    def __init__(self, plural, kind, group="", version="v1", namespaced=True, fields=(),
                 field_defaults=("", ""), create_on_update=False, bookmark_body=b"{}"):
        self.plural = plural
        self.kind = kind
        self.group = group
        self.version = version
        self.namespaced = namespaced
        # Selectable fields besides metadata.name/metadata.namespace, as registered upstream
        # (pkg/registry/core/pod/strategy.go ToSelectableFields, node/strategy.go, ...).
        self.fields = tuple(fields)
        # What a selector sees for an absent field (a Go zero value: "false" for a bool).
        self.field_defaults = tuple(field_defaults)
        # Strategy.AllowCreateOnUpdate(): true for leases (pkg/registry/coordination/lease/
        # strategy.go), so a PUT to a missing lease creates it; false here for the others.
        self.create_on_update = create_on_update
        api_version = (group + "/" + version) if group else version
        self.api_version = api_version
        self.list_kind = kind + "List"
        # What single objects and watch events carry in front of the stored item form.
        self.object_prefix = ('{"kind":"%s","apiVersion":"%s",' % (kind, api_version)).encode()
        # A BOOKMARK carries an empty object of the kind (cacher.go dispatchEvents: c.newFunc()
        # with only the resourceVersion set), encoded as Go encodes a zero struct.
        self.bookmark_body = bookmark_body

    @property
    def group_resource(self):
        """"pods", "leases.coordination.k8s.io": schema.GroupResource.String()."""
        return self.plural + ("." + self.group if self.group else "")


RESOURCES = {r.plural: r for r in (
    Resource("nodes", "Node", namespaced=False, fields=("spec.unschedulable",),
             field_defaults=("false", ""),
             bookmark_body=b'"spec":{},"status":{"daemonEndpoints":{"kubeletEndpoint":{"Port":0}},'
                           b'"nodeInfo":{"machineID":"","systemUUID":"","bootID":"","kernelVersion":"",'
                           b'"osImage":"","containerRuntimeVersion":"","kubeletVersion":"",'
                           b'"kubeProxyVersion":"","operatingSystem":"","architecture":""}}'),
    Resource("pods", "Pod", fields=("spec.nodeName", "status.phase"),
             bookmark_body=b'"spec":{"containers":null},"status":{}'),
    Resource("leases", "Lease", group="coordination.k8s.io", create_on_update=True,
             bookmark_body=b'"spec":{}'),
    Resource("daemonsets", "DaemonSet", group="apps"),
    Resource("deployments", "Deployment", group="apps"),
    Resource("replicasets", "ReplicaSet", group="apps"),
    Resource("statefulsets", "StatefulSet", group="apps"),
    Resource("jobs", "Job", group="batch"),
)}


class Obj:
    """One stored version of an object: its resourceVersion, its JSON (item form), the values of
    its two resource-specific selectable fields and its labels."""

    __slots__ = ("rv", "data", "f0", "f1", "labels")

    def __init__(self, rv, data, f0="", f1="", labels=None):
        self.rv = rv
        self.data = data
        self.f0 = f0
        self.f1 = f1
        self.labels = labels


class Event:
    __slots__ = ("rv", "type", "key", "new", "old")

    def __init__(self, rv, type_, key, new, old):
        self.rv = rv
        self.type = type_
        self.key = key
        self.new = new  # for DELETED: the last state, with the deletion's resourceVersion
        self.old = old  # None for ADDED


class StoreError(Exception):
    """A write refused as the API server refuses it; `status` is the metav1.Status to send."""

    def __init__(self, status):
        super().__init__(status.get("message", ""))
        self.status = status


def status(code, reason, message, details=None, **extra):
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}
    if not reason:
        del body["reason"]
    if details is not None:
        body["details"] = details
    body.update(extra)
    return body


def _details(resource, name, **more):
    d = {"name": name, "group": resource.group, "kind": resource.plural}
    if not resource.group:
        del d["group"]
    d.update(more)
    return d


def now_rfc3339():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def field_value(obj, path):
    """A field selector's view of a field: strings as they are, booleans as "true"/"false"."""
    value = obj
    for part in path.split("."):
        if not isinstance(value, dict):
            return ""
        value = value.get(part)
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, str) else ("" if value is None else str(value))


def encode(obj, rv):
    """The canonical item form: metadata first with resourceVersion first, no kind/apiVersion."""
    meta = obj.get("metadata") or {}
    out_meta = {"resourceVersion": str(rv)}
    for k, v in meta.items():
        if k != "resourceVersion":
            out_meta[k] = v
    body = {"metadata": out_meta}
    for k, v in obj.items():
        if k not in ("metadata", "kind", "apiVersion"):
            body[k] = v
    return json.dumps(body, separators=(",", ":")).encode()


def reversion(data, rv):
    """The same object JSON with another resourceVersion (the canonical prefix is ours)."""
    end = data.index(b'"', len(RV_PREFIX))
    return RV_PREFIX + str(rv).encode() + data[end:]


def decode(data):
    return json.loads(data)


def key_of(resource, namespace, name):
    return namespace + "/" + name if resource.namespaced else name


def split_key(resource, key):
    """(namespace, name) of a key."""
    if resource.namespaced:
        ns, _, name = key.partition("/")
        return ns, name
    return "", key


class _Table:
    """One resource's current objects, sorted keys, history and (pods) node index."""

    def __init__(self, resource):
        self.resource = resource
        self.objects = {}
        self.keys = []
        self.history = []
        self.history_rvs = []
        self.by_f0 = {} if resource.plural == "pods" else None

    def index_add(self, key, obj):
        if self.by_f0 is not None:
            self.by_f0.setdefault(obj.f0, set()).add(key)

    def index_remove(self, key, obj):
        if self.by_f0 is not None:
            keys = self.by_f0.get(obj.f0)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self.by_f0[obj.f0]


class Store:
    """Objects of every resource, one resourceVersion counter, the history since compaction.

    All methods are thread-safe; `cond` is notified on every change (watches wait on it)."""

    def __init__(self, first_rv=100, history_limit=None):
        self.cond = threading.Condition()
        self.rv = first_rv
        # Changes after `compacted` are in the history; reading or watching from an older
        # version is 410 Gone, as after an etcd compaction or past the watch cache's window.
        self.compacted = first_rv
        self.history_limit = history_limit
        self.history_size = 0
        self.tables = {name: _Table(r) for name, r in RESOURCES.items()}
        self.epoch = 0  # bumped by end_watches()

    def table(self, resource):
        return self.tables[resource if isinstance(resource, str) else resource.plural]

    # --- writes ---

    def _fields(self, resource, obj):
        f, d = resource.fields, resource.field_defaults
        return ((field_value(obj, f[0]) or d[0]) if len(f) > 0 else "",
                (field_value(obj, f[1]) or d[1]) if len(f) > 1 else "")

    def _record(self, table, type_, key, new, old):
        ev = Event(self.rv, type_, key, new, old)
        table.history.append(ev)
        table.history_rvs.append(ev.rv)
        self.history_size += 1
        if self.history_limit is not None and self.history_size > self.history_limit:
            self._trim(self.history_size - self.history_limit)
        self.cond.notify_all()

    def _trim(self, count):
        """Forgets the `count` oldest events of all resources (oldest first)."""
        heads = [(t.history_rvs[0], name) for name, t in self.tables.items() if t.history_rvs]
        heapq.heapify(heads)
        dropped = {name: 0 for name in self.tables}
        newest_dropped = self.compacted
        while count > 0 and heads:
            rv, name = heapq.heappop(heads)
            t = self.tables[name]
            dropped[name] += 1
            newest_dropped = max(newest_dropped, rv)
            count -= 1
            i = dropped[name]
            if i < len(t.history_rvs):
                heapq.heappush(heads, (t.history_rvs[i], name))
        for name, n in dropped.items():
            if n:
                t = self.tables[name]
                del t.history[:n]
                del t.history_rvs[:n]
                self.history_size -= n
        self.compacted = newest_dropped

    def _store(self, table, key, obj):
        old = table.objects.get(key)
        if old is None:
            bisect.insort(table.keys, key)
        else:
            table.index_remove(key, old)
        table.objects[key] = obj
        table.index_add(key, obj)
        return old

    def put(self, resource, obj):
        """Creates or replaces `obj` (a dict) unconditionally; returns (dict, created)."""
        resource = RESOURCES[resource] if isinstance(resource, str) else resource
        meta = obj.setdefault("metadata", {})
        if resource.namespaced:
            meta.setdefault("namespace", "default")
        meta.setdefault("uid", str(uuid.uuid4()))
        meta.setdefault("creationTimestamp", now_rfc3339())
        key = key_of(resource, meta.get("namespace", ""), meta["name"])
        f0, f1 = self._fields(resource, obj)
        labels = meta.get("labels") or None
        with self.cond:
            table = self.table(resource)
            self.rv += 1
            meta["resourceVersion"] = str(self.rv)
            new = Obj(self.rv, encode(obj, self.rv), f0, f1, labels)
            old = self._store(table, key, new)
            self._record(table, "MODIFIED" if old else "ADDED", key, new, old)
        return obj, old is None

    def delete(self, resource, key):
        """Deletes by key; returns the deleted object's dict (with the deletion's version)."""
        resource = RESOURCES[resource] if isinstance(resource, str) else resource
        with self.cond:
            table = self.table(resource)
            old = table.objects.pop(key)
            i = bisect.bisect_left(table.keys, key)
            del table.keys[i]
            table.index_remove(key, old)
            self.rv += 1
            gone = Obj(self.rv, reversion(old.data, self.rv), old.f0, old.f1, old.labels)
            self._record(table, "DELETED", key, gone, old)
        return decode(gone.data)

    def load(self, resource, records):
        """Bulk load: `records` of (key, data, f0, f1, labels), data in the canonical form with a
        resourceVersion each. Versions above the counter are kept (the counter follows), others
        are renumbered. Afterwards the store counts as compacted at its current version, as if
        etcd had compacted after these writes: older versions are gone."""
        resource = RESOURCES[resource] if isinstance(resource, str) else resource
        with self.cond:
            table = self.table(resource)
            added = 0
            for key, data, f0, f1, labels in records:
                end = data.index(b'"', len(RV_PREFIX))
                rv = int(data[len(RV_PREFIX):end])
                if rv <= self.rv:
                    rv = self.rv + 1
                    data = RV_PREFIX + str(rv).encode() + data[end:]
                self.rv = rv
                obj = Obj(rv, data, f0, f1, labels)
                old = table.objects.get(key)
                if old is not None:
                    table.index_remove(key, old)
                else:
                    added += 1
                table.objects[key] = obj
                table.index_add(key, obj)
            table.keys = sorted(table.objects)
            for t in self.tables.values():
                t.history.clear()
                t.history_rvs.clear()
            self.history_size = 0
            self.compacted = self.rv
            self.cond.notify_all()
        return added

    def compact(self):
        """Forgets all history: lists and watches at older versions get 410 Gone."""
        with self.cond:
            for t in self.tables.values():
                t.history.clear()
                t.history_rvs.clear()
            self.history_size = 0
            self.compacted = self.rv
            self.cond.notify_all()

    def end_watches(self):
        with self.cond:
            self.epoch += 1
            self.cond.notify_all()

    # --- conditional writes (the REST verbs) ---

    def create(self, resource, obj):
        """POST: 201 with the object, or StoreError (409 AlreadyExists)."""
        meta = obj.setdefault("metadata", {})
        name = meta.get("name")
        with self.cond:
            key = key_of(resource, meta.get("namespace", ""), name)
            if key in self.table(resource).objects:
                # errors.NewAlreadyExists (k8s.io/apimachinery pkg/api/errors/errors.go).
                raise StoreError(status(409, "AlreadyExists", '%s "%s" already exists' % (
                    resource.group_resource, name), _details(resource, name)))
            if meta.get("resourceVersion"):
                # etcd3 store.go Create: storage.ErrResourceVersionSetOnCreate, a 500.
                raise StoreError(status(500, "InternalError",
                                        "Internal error occurred: resourceVersion should not be "
                                        "set on objects to be created",
                                        {"causes": [{"message": "resourceVersion should not be "
                                                     "set on objects to be created"}]}))
            meta.pop("resourceVersion", None)
            meta["uid"] = str(uuid.uuid4())
            meta["creationTimestamp"] = now_rfc3339()
            return self.put(resource, obj)[0]

    def update(self, resource, key, obj):
        """PUT: (object, created) or StoreError: 409 Conflict on a stale resourceVersion
        (registry/generic/registry/store.go Update: NewConflict with OptimisticLockErrorMsg),
        422 without one (AllowUnconditionalUpdate false), 404 on a missing object unless the
        resource allows create on update (leases do: a PUT creates them, 201)."""
        meta = obj.setdefault("metadata", {})
        name = meta.get("name")
        with self.cond:
            current = self.table(resource).objects.get(key)
            if current is None:
                if not resource.create_on_update:
                    raise StoreError(status(404, "NotFound", '%s "%s" not found' % (
                        resource.group_resource, name), _details(resource, name)))
                meta.pop("resourceVersion", None)
                meta["uid"] = meta.get("uid") or str(uuid.uuid4())
                meta["creationTimestamp"] = now_rfc3339()
                return self.put(resource, obj)[0], True
            given = meta.get("resourceVersion") or ""
            if not given:
                raise StoreError(status(
                    422, "Invalid",
                    '%s "%s" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be '
                    "specified for an update" % (resource.group_resource, name),
                    {"name": name, "group": resource.group, "kind": resource.plural,
                     "causes": [{"reason": "FieldValueInvalid",
                                 "message": "Invalid value: 0x0: must be specified for an update",
                                 "field": "metadata.resourceVersion"}]}))
            if given != str(current.rv):
                raise StoreError(self._conflict(
                    resource, name, "the object has been modified; please apply your changes "
                    "to the latest version and try again"))
            stored = decode(current.data)["metadata"]
            if meta.get("uid") and meta["uid"] != stored.get("uid"):
                raise StoreError(status(
                    422, "Invalid", '%s "%s" is invalid: metadata.uid: Invalid value: "%s": '
                    "field is immutable" % (resource.group_resource, name, meta["uid"]),
                    {"name": name, "group": resource.group, "kind": resource.plural,
                     "causes": [{"reason": "FieldValueInvalid",
                                 "message": 'Invalid value: "%s": field is immutable' % meta["uid"],
                                 "field": "metadata.uid"}]}))
            meta["uid"] = stored.get("uid")
            meta["creationTimestamp"] = stored.get("creationTimestamp")
            return self.put(resource, obj)[0], False

    def remove(self, resource, key, name, preconditions=None):
        """DELETE: the deleted object's dict, or StoreError (404; 409 on a failed
        precondition, as etcd3 store.go conditionalDelete checks Preconditions)."""
        with self.cond:
            current = self.table(resource).objects.get(key)
            if current is None:
                raise StoreError(status(404, "NotFound", '%s "%s" not found' % (
                    resource.group_resource, name), _details(resource, name)))
            pre = preconditions or {}
            if pre.get("resourceVersion") and pre["resourceVersion"] != str(current.rv):
                raise StoreError(self._conflict(
                    resource, name, "Precondition failed: ResourceVersion in precondition: %s, "
                    "ResourceVersion in object meta: %d" % (pre["resourceVersion"], current.rv)))
            if pre.get("uid"):
                uid = decode(current.data)["metadata"].get("uid")
                if pre["uid"] != uid:
                    raise StoreError(self._conflict(
                        resource, name, "Precondition failed: UID in precondition: %s, UID in "
                        "object meta: %s" % (pre["uid"], uid)))
            return self.delete(resource, key)

    @staticmethod
    def _conflict(resource, name, why):
        # errors.NewConflict: "Operation cannot be fulfilled on %s %q: %v".
        return status(409, "Conflict", 'Operation cannot be fulfilled on %s "%s": %s' % (
            resource.group_resource, name, why), _details(resource, name))

    # --- reads ---

    def get(self, resource, key):
        with self.cond:
            return self.table(resource).objects.get(key)

    def wait_for(self, rv, timeout):
        """Waits until the store has reached `rv` (watchCache.waitUntilFreshAndBlock); False
        after `timeout` seconds."""
        end = time.monotonic() + timeout
        with self.cond:
            while self.rv < rv:
                left = end - time.monotonic()
                if left <= 0:
                    return False
                self.cond.wait(left)
        return True

    def snapshot(self, resource, at_rv, match, namespace="", start_key="", limit=0,
                 node_name=None):
        """The objects of `resource` as they were at `at_rv` (which must not be older than the
        compaction), in key order from `start_key`, those for which match(key, obj) holds, at
        most `limit` (0: all). Returns (objs, next_key, remaining): next_key is the key to
        continue from when more keys follow, remaining the number of keys after the page
        (for remainingItemCount). `node_name`, when given, uses the pods' node index."""
        with self.cond:
            table = self.table(resource)
            lo, hi = 0, len(table.keys)
            if namespace:
                lo = bisect.bisect_left(table.keys, namespace + "/")
                hi = bisect.bisect_left(table.keys, namespace + "0")  # "/" + 1
            lo = max(lo, bisect.bisect_left(table.keys, start_key)) if start_key else lo
            first = bisect.bisect_right(table.history_rvs, at_rv)
            overlay = {}
            for ev in reversed(table.history[first:]):
                overlay[ev.key] = ev.old  # ends as the state before the oldest later change
            if node_name is not None and table.by_f0 is not None:
                candidates = set(table.by_f0.get(node_name, ()))
                candidates.update(overlay)
                keys = sorted(k for k in candidates
                              if (not start_key or k >= start_key) and
                              (not namespace or k.startswith(namespace + "/")))
                source = iter(keys)
            elif overlay:
                extra = sorted(k for k, v in overlay.items()
                               if v is not None and k not in table.objects and
                               (not start_key or k >= start_key) and
                               (not namespace or k.startswith(namespace + "/")))
                source = heapq.merge(table.keys[lo:hi], extra)
            else:
                source = iter(table.keys[lo:hi])
            objects = table.objects
            out = []
            last = None
            next_key = None
            for key in source:
                if limit and len(out) >= limit:
                    next_key = last + "\x00"
                    break
                obj = overlay[key] if key in overlay else objects.get(key)
                if obj is None:
                    continue
                if match(key, obj):
                    out.append(obj)
                    last = key
            remaining = 0
            if next_key is not None:
                remaining = (hi - bisect.bisect_left(table.keys, next_key, lo, hi))
                for k, v in overlay.items():
                    if k >= next_key and (not namespace or k.startswith(namespace + "/")):
                        remaining += (v is not None) - (k in objects)
            return out, next_key, remaining

    def events_after(self, resource, rv, limit=4096):
        """Changes to `resource` after `rv`, oldest first (at most `limit`)."""
        table = self.table(resource)
        i = bisect.bisect_right(table.history_rvs, rv)
        return table.history[i:i + limit]
