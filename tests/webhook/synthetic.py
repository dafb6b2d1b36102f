"""Synthetic clusters for the stand-in of the API server's contract: nodes and pods as the API
server returns them, at any size, deterministic from a seed.

    cluster = synthetic.generate(nodes=5000, pods_per_node=100, seed=1, cache_dir="/tmp/x")
    api.load_cluster(cluster)

What is in it (see tests/webhook/README.md for the shape in numbers):
- nodes in five pools (general, compute, arm64, memory, GPU) over three zones, with the labels a
  cloud node carries (hostname, os, arch, zone, region, instance type, pool), capacity and
  allocatable, conditions, addresses, nodeInfo, an images list trimmed to 10-25 entries,
  managedFields; GPU nodes tainted, a few nodes cordoned, a few NotReady (unreachable taints);
- pods as the API server stores them after admission and defaulting, from DaemonSets (five per
  node: kube-proxy, a CNI agent, node-local-dns, node-exporter, fluent-bit; three with hostNetwork
  host ports), Deployments (via ReplicaSets), StatefulSets and Jobs: 2-4 containers (sidecars,
  some init containers) with requests/limits, env (values, fieldRefs, secret and config map
  refs), probes, volume mounts (including the kube-api-access projected volume), ports, labels,
  ownerReferences, managedFields, status with conditions and containerStatuses; on a tenth of
  them (chosen at random) a kubectl.kubernetes.io/last-applied-configuration annotation of about
  10 KB; priorities on system pods and a few workloads; about 0.3% Pending (no nodeName, a
  PodScheduled=False condition), 1% Succeeded and 0.2% Failed Job pods;
- the owning DaemonSets, Deployments, ReplicaSets, StatefulSets and Jobs.

Placement respects each node's allocatable pods, cpu and memory and the GPU pool's taint.
Objects are encoded once, in standin_store's canonical form (metadata.resourceVersion first), and
kept as bytes; per-replica parts (names, uids, IPs, times, container IDs) are spliced into each
workload's pre-encoded spec. Generation takes about 10 s per 100,000 pods here; with a cache_dir
the result is written there once and read back on the next call with the same parameters.
"""

import json
import os

from synthetic_objects import (BASE_TIME, GENERATOR_VERSION, TEAMS, LANGS, Rand, Workload,  # noqa
                               container, daemonsets, deployment, images, j, make_nodes,
                               node_object, stamp)


class Cluster:
    """A generated cluster: `records[resource]` lists (key, data, f0, f1, labels) as
    standin_store.Store.load takes them; `summary` counts what is in it."""

    def __init__(self, params, records, summary):
        self.params = params
        self.records = records
        self.summary = summary

    @property
    def nodes(self):
        return self.records["nodes"]

    @property
    def pods(self):
        return self.records["pods"]

    def objects(self, resource):
        """Each object of `resource` decoded, as a list API's items (no kind/apiVersion)."""
        for rec in self.records.get(resource, ()):
            yield json.loads(rec[1])

    def json_bytes(self, resource=None):
        """Bytes of JSON of every object (of one resource)."""
        names = [resource] if resource else list(self.records)
        return sum(len(rec[1]) for name in names for rec in self.records.get(name, ()))


_CACHE_MAGIC = b"nodegate-synthetic"


def _cache_path(cache_dir, params):
    return os.path.join(cache_dir, "cluster-v%d-n%d-p%d-s%d-rv%d.bin" % (
        GENERATOR_VERSION, params["nodes"], params["pods_per_node"], params["seed"],
        params["first_rv"]))


def _write_cache(path, cluster):
    tmp = "%s.%d.tmp" % (path, os.getpid())
    with open(tmp, "wb") as f:
        f.write(_CACHE_MAGIC + b" " + j({"params": cluster.params,
                                          "summary": cluster.summary}) + b"\n")
        for resource, records in cluster.records.items():
            f.write(b"#%s %d\n" % (resource.encode(), len(records)))
            for key, data, f0, f1, labels in records:
                f.write(b"%s\t%s\t%s\t%d\t%s\n" % (key.encode(), f0.encode(), f1.encode(),
                                                   len(data), j(labels)))
                f.write(data)
    os.replace(tmp, path)


def _read_cache(path):
    interned = {}
    records = {}
    with open(path, "rb") as f:
        head = f.readline()
        if not head.startswith(_CACHE_MAGIC + b" "):
            raise ValueError("not a synthetic cluster cache: " + path)
        meta = json.loads(head[len(_CACHE_MAGIC) + 1:])
        while True:
            line = f.readline()
            if not line:
                break
            resource, count = line[1:].split()
            out = records.setdefault(resource.decode(), [])
            for _ in range(int(count)):
                key, f0, f1, size, labels = f.readline().rstrip(b"\n").split(b"\t", 4)
                lab = interned.get(labels)
                if lab is None:
                    lab = interned[labels] = json.loads(labels)
                out.append((key.decode(), f.read(int(size)), f0.decode(), f1.decode(), lab))
    return Cluster(meta["params"], records, meta["summary"])


def generate(nodes=5000, pods_per_node=100, seed=1, cache_dir=None, first_rv=1000):
    """A cluster of `nodes` nodes and about `pods_per_node` pods each, the same for the same
    arguments. With `cache_dir`, read from (or written to) a file named by the arguments there."""
    params = {"nodes": nodes, "pods_per_node": pods_per_node, "seed": seed, "first_rv": first_rv,
              "version": GENERATOR_VERSION}
    path = None
    if cache_dir:
        os.makedirs(cache_dir, exist_ok=True)
        path = _cache_path(cache_dir, params)
        if os.path.exists(path):
            return _read_cache(path)
    cluster = _Generator(params).run()
    if path:
        _write_cache(path, cluster)
    return cluster


def _encode(obj, rv):
    """standin_store's canonical item form: metadata first, resourceVersion first in it."""
    meta = {"resourceVersion": str(rv)}
    meta.update((k, v) for k, v in obj["metadata"].items() if k != "resourceVersion")
    body = {"metadata": meta}
    body.update((k, v) for k, v in obj.items() if k != "metadata")
    return j(body)


def _replica_count(rng):
    x = rng.random()
    if x < 0.30:
        return rng.randint(1, 3)
    if x < 0.65:
        return rng.randint(4, 10)
    if x < 0.90:
        return rng.randint(11, 40)
    if x < 0.99:
        return rng.randint(41, 150)
    return rng.randint(151, 600)


class _Generator:
    def __init__(self, params):
        self.p = params
        self.rng = Rand(params["seed"])
        self.rv = params["first_rv"]
        self.records = {r: [] for r in ("nodes", "pods", "daemonsets", "deployments",
                                        "replicasets", "statefulsets", "jobs")}
        self.summary = {"pods": 0, "running": 0, "pending": 0, "succeeded": 0, "failed": 0,
                        "last_applied": 0, "host_port_pods": 0, "priority_pods": 0,
                        "containers": 0, "unplaced": 0}
        self.cursor = 0
        self.names = set()

    def next_rv(self):
        self.rv += 1
        return self.rv

    def run(self):
        rng = self.rng
        n_nodes = self.p["nodes"]
        catalog = images(rng)
        img = {c["repo"].rsplit("/", 1)[1]: c for c in catalog[:15]}
        app_images = catalog[15:]
        self.image_ids = {c["repo"] + ":" + c["tag"]: c["repo"] + "@" + c["digest"]
                          for c in catalog}
        nodes = make_nodes(rng, n_nodes, catalog)
        for node in nodes:
            obj = node_object(rng, node, BASE_TIME - rng.randint(30, 300) * 86400)
            self.records["nodes"].append((node.name, _encode(obj, self.next_rv()),
                                          "false" if node.schedulable else "true", "",
                                          obj["metadata"]["labels"]))
        self.app_nodes = [n for n in nodes if n.schedulable and n.ready and not n.gpu]
        self.gpu_nodes = [n for n in nodes if n.schedulable and n.ready and n.gpu]
        rng.shuffle(self.app_nodes)
        self.pending_message = self._pending_message(nodes)
        total = n_nodes * self.p["pods_per_node"]
        created = BASE_TIME - 200 * 86400
        sets = daemonsets(rng, img, created)[:min(5, self.p["pods_per_node"] // 4)]
        for ds in sets:
            for node in nodes:
                self._take(ds, node)
                self._emit(ds, node, "Running", rng.uniform(created, BASE_TIME - 86400))
            self._owner("daemonsets", ds, len(nodes))
        budget = max(0, total - len(sets) * n_nodes)
        jobs = round(budget * 0.012)
        pending = round(budget * 0.003)
        sts = round(budget * 0.03)
        deployments = budget - jobs - pending - sts
        self._system_deployments(img, app_images, n_nodes)
        deployments -= self.summary["pods"] - len(sets) * n_nodes
        self._team_deployments(img, app_images, deployments, pending)
        self._statefulsets(img, sts)
        self._jobs(img, app_images, jobs)
        self.summary["nodes"] = n_nodes
        self.summary["bytes"] = {r: sum(len(x[1]) for x in recs)
                                 for r, recs in self.records.items()}
        return Cluster(self.p, self.records, self.summary)

    def _pending_message(self, nodes):
        # The shape of kube-scheduler's FitError message (plausible counts; not asserted).
        counts = {}
        for n in nodes:
            if not n.ready:
                reason = "node(s) had untolerated taint {node.kubernetes.io/unreachable: }"
            elif not n.schedulable:
                reason = "node(s) were unschedulable"
            elif n.gpu:
                reason = "node(s) had untolerated taint {nvidia.com/gpu: present}"
            else:
                reason = "Insufficient cpu"
            counts[reason] = counts.get(reason, 0) + 1
        parts = ", ".join("%d %s" % (v, k) for k, v in sorted(counts.items(), key=lambda kv: kv[0]))
        helpful = counts.get("Insufficient cpu", 0)
        return ("0/%d nodes are available: %s. preemption: 0/%d nodes are available: %d No "
                "preemption victims found for incoming pod, %d Preemption is not helpful for "
                "scheduling." % (len(nodes), parts, len(nodes), helpful, len(nodes) - helpful))

    # --- placement ---

    @staticmethod
    def _fits(w, node):
        return (node.pods > 0 and node.cpu >= w.cpu and node.mem >= w.mem and
                not any(hp in node.ports for hp in w.host_ports))

    @staticmethod
    def _take(w, node):
        node.pods -= 1
        node.cpu -= w.cpu
        node.mem -= w.mem
        node.ports.update(w.host_ports)

    def _place(self, w):
        pool = self.gpu_nodes if w.gpu else self.app_nodes
        if not pool:
            return None
        for _ in range(min(len(pool), 200)):
            self.cursor = (self.cursor + 1) % len(pool)
            node = pool[self.cursor]
            if self._fits(w, node) and (not w.gpu or node.gpu > 0):
                self._take(w, node)
                if w.gpu:
                    node.gpu -= 1
                return node
        return None

    # --- workloads ---

    def _system_deployments(self, img, app_images, n_nodes):
        rng = self.rng
        created = BASE_TIME - 200 * 86400
        dns = deployment(rng, "kube-system", "coredns", "platform", img, [img["k8s-dns-node-cache"]],
                          created, False, priority_class="system-cluster-critical")
        self._replicas(dns, 2 + n_nodes // 64)
        ingress = deployment(rng, "ingress-nginx", "ingress-nginx-controller", "platform", img,
                             [img["controller"]], created, False,
                             host_ports=[(80, "TCP", "http"), (443, "TCP", "https")])
        self._replicas(ingress, max(1, n_nodes // 100))
        if self.gpu_nodes:
            ml = deployment(rng, "ml", "inference", "ml", img, app_images, created, False,
                            priority_class="high-priority", gpu=True)
            self._replicas(ml, len(self.gpu_nodes))

    def _team_deployments(self, img, app_images, budget, pending):
        rng = self.rng
        namespaces = []
        for team in TEAMS:
            for env in ("prod", "staging"):
                namespaces.append(("%s-%s" % (team, env), team, rng.random() < 0.3))
        made = 0
        i = 0
        while made < budget:
            ns, team, istio = namespaces[i % len(namespaces)]
            name = "%s-%s" % (LANGS[(i // len(namespaces)) % len(LANGS)], rng.suffix(4))
            i += 1
            created = BASE_TIME - rng.randint(1, 200) * 86400
            w = deployment(rng, ns, name, team, img, app_images, created, istio,
                            priority_class="high-priority" if rng.random() < 0.05 else None)
            n = min(_replica_count(rng), budget - made)
            self._replicas(w, n)
            made += n
        if pending:
            w = deployment(rng, "ml-staging", "trainer", "ml", img, app_images,
                           BASE_TIME - 86400, False, huge=True)
            w.unschedulable = True
            self._replicas(w, pending)

    def _replicas(self, w, n):
        rng = self.rng
        w.deployment_uid = rng.uid()
        for _ in range(n):
            node = self._place(w)
            phase = "Running" if node else "Pending"
            if node is None and not getattr(w, "unschedulable", False):
                self.summary["unplaced"] += 1  # no room left: Pending, as the scheduler leaves it
            self._emit(w, node, phase, rng.uniform(w.created, BASE_TIME - 60))
        dep = w.deployment_object(n)
        self.records["deployments"].append(("%s/%s" % (w.namespace, w.name),
                                            _encode(dep, self.next_rv()), "", "",
                                            dep["metadata"]["labels"]))
        self._owner("replicasets", w, n)

    def _statefulsets(self, img, budget):
        rng = self.rng
        kinds = [("postgres", img["postgres"], 5432), ("kafka", img["kafka"], 9092),
                 ("redis", img["redis"], 6379), ("elasticsearch", img["elasticsearch"], 9200)]
        made = 0
        i = 0
        while made < budget:
            base, image, port = kinds[i % len(kinds)]
            team = TEAMS[i % len(TEAMS)]
            ns = "%s-prod" % team
            name = "%s-%s" % (base, rng.suffix(4))
            i += 1
            n = min(rng.randint(3, 12), budget - made)
            c = container(rng, base, image, port=port, env_count=rng.randint(2, 5), downward=1,
                           cpu=(100, 250, 500), mem=(512, 1024, 2048),
                           mounts=[{"name": "data", "mountPath": "/var/lib/" + base}],
                           protocol_ports=[(port, "TCP", "tcp-" + base)])
            exporter = container(rng, "metrics", img["node-exporter"], port=9187, env_count=2,
                                  cpu=(10,), mem=(32,), probes=False)
            w = Workload(rng, "StatefulSet", ns, name, [c, exporter],
                          volumes=[{"name": "data", "persistentVolumeClaim": {
                              "claimName": "data-@@POD@@"}}],
                          labels={"app.kubernetes.io/name": base,
                                  "app.kubernetes.io/instance": name, "team": team},
                          created=BASE_TIME - rng.randint(10, 300) * 86400)
            for ordinal in range(n):
                node = self._place(w)
                self._emit(w, node, "Running" if node else "Pending",
                           rng.uniform(w.created, BASE_TIME - 60), ordinal=ordinal)
            self._owner("statefulsets", w, n)
            made += n

    def _jobs(self, img, app_images, budget):
        rng = self.rng
        pool = self.app_nodes or self.gpu_nodes
        for i in range(budget):
            team = TEAMS[i % len(TEAMS)]
            ns = "%s-prod" % team
            t = BASE_TIME - rng.randint(600, 6 * 86400)
            name = "report-%s-%d" % (rng.suffix(6), t // 60)
            phase = "Failed" if i % 6 == 5 else "Succeeded"
            c = container(rng, "report", rng.choice(app_images), env_count=rng.randint(1, 4),
                           cpu=(100, 250), mem=(128, 256), probes=False,
                           mounts=[{"name": "tmp", "mountPath": "/tmp"}])
            side = container(rng, "log-shipper", img["fluent-bit"], env_count=2, cpu=(5,),
                              mem=(16,), probes=False,
                              mounts=[{"name": "tmp", "mountPath": "/tmp"}])
            w = Workload(rng, "Job", ns, name, [c, side], volumes=[{"name": "tmp", "emptyDir": {}}],
                          labels={"app.kubernetes.io/name": "report", "team": team},
                          priority_class="batch-low", restart_policy="Never", created=t,
                          phase=phase)
            node = pool[rng.randrange(len(pool))] if pool else None  # finished: no capacity held
            self._emit(w, node, phase if node else "Pending", t + 2)
            self._owner("jobs", w, 1)

    def _owner(self, resource, w, replicas):
        obj, _ = w.object(self.rng, replicas, 0)
        self.records[resource].append(("%s/%s" % (w.namespace, w.owner_name),
                                       _encode(obj, self.next_rv()), "", "",
                                       obj["metadata"]["labels"]))

    # --- one pod ---

    def _emit(self, w, node, phase, created, ordinal=None):
        rng = self.rng
        created = int(created)
        ct = stamp(created).encode()
        if ordinal is not None:
            name = "%s-%d" % (w.owner_name, ordinal)
            labels = dict(w.labels)
            labels["statefulset.kubernetes.io/pod-name"] = name
            labels["apps.kubernetes.io/pod-index"] = str(ordinal)
            labels_b = j(labels)
        else:
            name = "%s-%s" % (w.owner_name, rng.suffix(5))
            while (w.namespace, name) in self.names:  # the controller retries a taken name
                name = "%s-%s" % (w.owner_name, rng.suffix(5))
            labels, labels_b = w.labels, w.labels_b
        self.names.add((w.namespace, name))
        name_b = name.encode()
        if node is not None:
            spec = w.spec_b.replace(b"@@NODE@@", node.name.encode())
            node.pod_seq += 1
            host_ip = node.ip
            pod_ip = host_ip if w.host_network else "100.%d.%d.%d" % (
                64 + node.index // 256, node.index % 256, 2 + node.pod_seq % 250)
        else:
            spec = w.pending_spec_b
            host_ip = pod_ip = None
            phase = "Pending"
        spec = spec.replace(b"@@KAA@@", rng.suffix(5).encode())
        if ordinal is not None:
            spec = spec.replace(b"@@POD@@", name_b)
        status = self._status(w, phase, host_ip, pod_ip, created)
        mf = [w.kcm_b.replace(b"@@T@@", ct)]
        if node is not None:
            mf.append(w.kubelet_b.replace(b"@@T@@", stamp(created + 20).encode()).replace(
                b"@@HIP@@", host_ip.encode()).replace(b"@@IP@@", pod_ip.encode()))
        if rng.random() < 0.1:
            annotations = w.last_applied_annotations(rng)
            self.summary["last_applied"] += 1
        else:
            annotations = w.annotations_b if w.annotations else None
        parts = [b'{"metadata":{"resourceVersion":"', str(self.next_rv()).encode(),
                 b'","name":"', name_b]
        if ordinal is None:
            parts += [b'","generateName":"', w.owner_name.encode(), b'-']
        parts += [b'","namespace":"', w.namespace.encode(), b'","uid":"', rng.uid().encode(),
                  b'","creationTimestamp":"', ct, b'","labels":', labels_b]
        if annotations:
            parts += [b',"annotations":', annotations]
        parts += [b',"ownerReferences":', w.owner_b, b',"managedFields":[', b",".join(mf),
                  b']},"spec":', spec, b',"status":', j(status), b"}"]
        data = b"".join(parts)
        self.records["pods"].append(("%s/%s" % (w.namespace, name), data,
                                     node.name if node is not None else "", phase, labels))
        s = self.summary
        s["pods"] += 1
        s[phase.lower()] += 1
        s["containers"] += len(w.containers)
        if w.host_ports:
            s["host_port_pods"] += 1
        if w.priority:
            s["priority_pods"] += 1

    def _status(self, w, phase, host_ip, pod_ip, created):
        rng = self.rng
        if phase == "Pending":
            return {"phase": "Pending", "conditions": [{
                "type": "PodScheduled", "status": "False", "lastProbeTime": None,
                "lastTransitionTime": stamp(created), "reason": "Unschedulable",
                "message": self.pending_message}], "qosClass": "Burstable"}
        running = phase == "Running"
        t = lambda d: stamp(created + d)
        if running:
            conds = [("PodReadyToStartContainers", "True", 3, None),
                     ("Initialized", "True", 4, None), ("Ready", "True", 16, None),
                     ("ContainersReady", "True", 16, None), ("PodScheduled", "True", 0, None)]
        else:
            why = "PodCompleted" if phase == "Succeeded" else "PodFailed"
            conds = [("PodReadyToStartContainers", "False", 90, None),
                     ("Initialized", "True", 4, why if phase == "Succeeded" else None),
                     ("Ready", "False", 90, why), ("ContainersReady", "False", 90, why),
                     ("PodScheduled", "True", 0, None)]
        conditions = []
        for ctype, st, d, reason in conds:
            c = {"type": ctype, "status": st, "lastProbeTime": None, "lastTransitionTime": t(d)}
            if reason:
                c["reason"] = reason
            conditions.append(c)
        out = {"phase": phase, "conditions": conditions, "hostIP": host_ip,
               "hostIPs": [{"ip": host_ip}], "podIP": pod_ip, "podIPs": [{"ip": pod_ip}],
               "startTime": t(1)}
        if w.init_containers:
            out["initContainerStatuses"] = [self._container_status(c, created, "init")
                                            for c in w.init_containers]
        out["containerStatuses"] = [self._container_status(c, created, phase)
                                    for c in w.containers]
        out["qosClass"] = "Burstable"
        return out

    def _container_status(self, c, created, phase):
        rng = self.rng
        cid = "containerd://" + rng.hex(64)
        image = c["image"]
        st = {"name": c["name"]}
        restarts = 0
        if phase == "Running":
            restarts = rng.choice((0, 0, 0, 0, 0, 0, 0, 1, 2, 5))
            st["state"] = {"running": {"startedAt": stamp(created + 8 + restarts * 60)}}
            st["lastState"] = {} if not restarts else {"terminated": {
                "exitCode": 137, "reason": "OOMKilled", "startedAt": stamp(created + 8),
                "finishedAt": stamp(created + restarts * 60), "containerID":
                "containerd://" + rng.hex(64)}}
        else:
            ok = phase in ("init", "Succeeded")
            st["state"] = {"terminated": {"exitCode": 0 if ok else 1,
                                          "reason": "Completed" if ok else "Error",
                                          "startedAt": stamp(created + 3),
                                          "finishedAt": stamp(created + (4 if phase == "init" else 85)),
                                          "containerID": cid}}
            st["lastState"] = {}
        st.update({"ready": phase == "Running", "restartCount": restarts, "image": image,
                   "imageID": self.image_ids.get(image, image), "containerID": cid,
                   "started": phase == "Running"})
        return st
