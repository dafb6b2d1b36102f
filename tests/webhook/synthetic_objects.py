"""The parts of synthetic clusters (synthetic.py): nodes, containers and workloads (the pod
template each controller stamps its pods from), as the API server stores them after defaulting
and admission. Each Workload pre-encodes what its pods share; synthetic._Generator splices in
what differs per pod."""

import json
import random
import time

GENERATOR_VERSION = 2  # bump on any change to what is generated (it names the cache files)
BASE_TIME = 1764547200  # 2025-12-01T00:00:00Z: every generated time lies before it
NODE_POD_LIMIT = 110
SAFE = "bcdfghjklmnpqrstvwxz2456789"  # k8s.io/apimachinery rand.String alphabet

dumps = json.JSONEncoder(separators=(",", ":")).encode


def j(value):
    return dumps(value).encode()


def stamp(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


class Rand(random.Random):
    def uid(self):
        h = "%032x" % self.getrandbits(128)
        return "%s-%s-4%s-%s%s-%s" % (h[:8], h[8:12], h[13:16], "89ab"[int(h[16], 16) & 3],
                                      h[17:20], h[20:32])

    def hex(self, n):
        return "%0*x" % (n, self.getrandbits(4 * n))

    def suffix(self, n=5):
        x = self.getrandbits(5 * n)
        out = []
        for _ in range(n):
            out.append(SAFE[(x & 31) % 27])
            x >>= 5
        return "".join(out)


# --- managedFields: the FieldsV1 set of the fields an object (part) sets ---

_LIST_KEYS = {"containers": ("name",), "initContainers": ("name",), "env": ("name",),
              "ports": ("containerPort", "protocol"), "volumeMounts": ("mountPath",),
              "volumes": ("name",), "conditions": ("type",), "podIPs": ("ip",),
              "hostIPs": ("ip",), "ownerReferences": ("uid",), "addresses": ("type",),
              "containerStatuses": None, "images": None, "tolerations": None, "taints": None}


# Structs marked +structType=atomic in k8s.io/api/core/v1: owned as a whole.
_ATOMIC = {"fieldRef", "secretKeyRef", "configMapKeyRef", "resourceFieldRef", "capabilities",
           "nodeSelectorTerms", "matchFields"}


def fields_v1(value):
    out = {}
    for k, v in value.items():
        if k in _ATOMIC:
            out["f:" + k] = {}
        elif isinstance(v, dict) and v:
            child = {".": {}}
            child.update(fields_v1(v))
            out["f:" + k] = child
        elif isinstance(v, list) and _LIST_KEYS.get(k) and v and isinstance(v[0], dict):
            child = {".": {}}
            for item in v:
                spec = {kk: item[kk] for kk in _LIST_KEYS[k] if kk in item}
                entry = {".": {}}
                entry.update(fields_v1(item))
                child["k:" + dumps(spec)] = entry
            out["f:" + k] = child
        else:
            out["f:" + k] = {}
    return out


def managed(manager, t, fields, subresource=None, api_version="v1"):
    entry = {"manager": manager, "operation": "Update", "apiVersion": api_version, "time": t,
             "fieldsType": "FieldsV1", "fieldsV1": fields}
    if subresource:
        entry["subresource"] = subresource
    return entry


# --- nodes ---

POOLS = [  # name, share, instance type, arch, cpu, memory GiB, gpus
    ("general", 0.70, "m6i.4xlarge", "amd64", 16, 64, 0),
    ("compute", 0.12, "c6i.4xlarge", "amd64", 16, 32, 0),
    ("arm", 0.12, "m7g.4xlarge", "arm64", 16, 64, 0),
    ("memory", 0.03, "r6i.4xlarge", "amd64", 16, 128, 0),
    ("gpu", 0.03, "g5.4xlarge", "amd64", 16, 64, 1),
]
ZONES = ["us-east-1a", "us-east-1b", "us-east-1c"]
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}


class _Node:
    __slots__ = ("name", "ip", "index", "pool", "arch", "zone", "cpu", "mem", "pods", "gpu",
                 "schedulable", "ready", "pod_seq", "images", "ports")

    def __init__(self, **kw):
        for k, v in kw.items():
            setattr(self, k, v)


def _pool_of(i, n):
    """Pools by share, deterministically interleaved."""
    x = (i * 0.6180339887) % 1.0
    acc = 0.0
    for pool in POOLS:
        acc += pool[1]
        if x < acc:
            return pool
    return POOLS[0]


def make_nodes(rng, count, images_catalog):
    nodes = []
    for i in range(count):
        pool = _pool_of(i, count)
        n = i + 4096
        ip = "10.%d.%d.%d" % (16 + ((n >> 16) & 15), (n >> 8) & 255, n & 255)
        name = "ip-%s.ec2.internal" % ip.replace(".", "-")
        cpu_m = pool[4] * 1000 - 110
        mem_mi = pool[5] * 1024 - 1600
        state = rng.random()
        nodes.append(_Node(name=name, ip=ip, index=i, pool=pool, arch=pool[3],
                           zone=ZONES[i % 3], cpu=cpu_m, mem=mem_mi, pods=NODE_POD_LIMIT,
                           gpu=pool[6], schedulable=state >= 0.005, ready=not (0.005 <= state < 0.008),
                           pod_seq=0, images=rng.sample(images_catalog, rng.randint(10, 25)),
                           ports=set()))
    return nodes


def node_object(rng, node, created):
    pool = node.pool
    t = stamp(created)
    hb = stamp(BASE_TIME - rng.randint(1, 40))
    labels = {
        "beta.kubernetes.io/arch": node.arch, "beta.kubernetes.io/instance-type": pool[2],
        "beta.kubernetes.io/os": "linux", "eks.amazonaws.com/nodegroup": pool[0],
        "failure-domain.beta.kubernetes.io/region": "us-east-1",
        "failure-domain.beta.kubernetes.io/zone": node.zone, "k8s.io/cloud-provider-aws":
        "8f2b1c3d4e5f60718293a4b5c6d7e8f9", "kubernetes.io/arch": node.arch,
        "kubernetes.io/hostname": node.name, "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": pool[2], "topology.k8s.aws/zone-id": "use1-az%d" % (
            ZONES.index(node.zone) + 1),
        "topology.kubernetes.io/region": "us-east-1", "topology.kubernetes.io/zone": node.zone}
    instance = "i-0" + rng.hex(16)
    annotations = {"alpha.kubernetes.io/provided-node-ip": node.ip,
                   "csi.volume.kubernetes.io/nodeid": dumps({"ebs.csi.aws.com": instance}),
                   "node.alpha.kubernetes.io/ttl": "0",
                   "volumes.kubernetes.io/controller-managed-attach-detach": "true"}
    spec = {"podCIDR": "100.%d.%d.0/24" % (64 + node.index // 256, node.index % 256),
            "podCIDRs": ["100.%d.%d.0/24" % (64 + node.index // 256, node.index % 256)],
            "providerID": "aws:///%s/%s" % (node.zone, instance)}
    taints = []
    if node.gpu:
        taints.append(dict(GPU_TAINT))
    if not node.schedulable:
        spec["unschedulable"] = True
        taints.append({"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule",
                       "timeAdded": stamp(BASE_TIME - 3600)})
    if not node.ready:
        for effect in ("NoSchedule", "NoExecute"):
            taints.append({"key": "node.kubernetes.io/unreachable", "effect": effect,
                           "timeAdded": stamp(BASE_TIME - 600)})
    if taints:
        spec["taints"] = taints
    mem_ki = node.pool[5] * 1024 * 1024 - rng.randint(100000, 400000)
    capacity = {"cpu": str(pool[4]), "ephemeral-storage": "104845292Ki", "hugepages-1Gi": "0",
                "hugepages-2Mi": "0", "memory": "%dKi" % mem_ki, "pods": str(NODE_POD_LIMIT)}
    allocatable = {"cpu": "%dm" % node.cpu, "ephemeral-storage": "95551679124",
                   "hugepages-1Gi": "0", "hugepages-2Mi": "0",
                   "memory": "%dKi" % (mem_ki - 1600 * 1024), "pods": str(NODE_POD_LIMIT)}
    if node.gpu:
        capacity["nvidia.com/gpu"] = allocatable["nvidia.com/gpu"] = str(node.gpu)
    conds = []
    for ctype, reason, message in (
            ("MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
            ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
            ("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available")):
        conds.append({"type": ctype, "status": "False" if node.ready else "Unknown",
                      "lastHeartbeatTime": hb, "lastTransitionTime": t,
                      "reason": reason if node.ready else "NodeStatusUnknown",
                      "message": message if node.ready else "Kubelet stopped posting node status."})
    conds.append({"type": "Ready", "status": "True" if node.ready else "Unknown",
                  "lastHeartbeatTime": hb, "lastTransitionTime": stamp(created + 40),
                  "reason": "KubeletReady" if node.ready else "NodeStatusUnknown",
                  "message": "kubelet is posting ready status" if node.ready else
                  "Kubelet stopped posting node status."})
    kernel = "6.1.112-122.189.amzn2023.%s" % ("aarch64" if node.arch == "arm64" else "x86_64")
    status = {
        "capacity": capacity, "allocatable": allocatable, "conditions": conds,
        "addresses": [{"type": "InternalIP", "address": node.ip},
                      {"type": "InternalDNS", "address": node.name},
                      {"type": "Hostname", "address": node.name}],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        "nodeInfo": {"machineID": rng.hex(32), "systemUUID": "ec2" + rng.hex(29),
                     "bootID": rng.uid(), "kernelVersion": kernel,
                     "osImage": "Amazon Linux 2023.6.20241010",
                     "containerRuntimeVersion": "containerd://1.7.22",
                     "kubeletVersion": "v1.31.2-eks-7f9249a", "kubeProxyVersion": "v1.31.2-eks-7f9249a",
                     "operatingSystem": "linux", "architecture": node.arch},
        "images": [{"names": [img["repo"] + "@" + img["digest"], img["repo"] + ":" + img["tag"]],
                    "sizeBytes": img["size"]} for img in node.images]}
    meta = {"name": node.name, "uid": rng.uid(), "creationTimestamp": t, "labels": labels,
            "annotations": annotations,
            "managedFields": [
                managed("kubelet", t, {"f:metadata": fields_v1({"annotations": annotations,
                                                                 "labels": labels})}),
                managed("aws-cloud-controller-manager", t, {"f:spec": {"f:providerID": {}}}),
                managed("kube-controller-manager", t, {"f:metadata": {"f:annotations": {
                    "f:node.alpha.kubernetes.io/ttl": {}}}, "f:spec": {"f:podCIDR": {},
                                                                      "f:podCIDRs": {".": {}}}}),
                managed("kubelet", hb, {"f:status": fields_v1(
                    {k: v for k, v in status.items() if k != "images"})}, "status")]}
    return {"metadata": meta, "spec": spec, "status": status}


# --- workloads ---

LANGS = ["api", "web", "worker", "gateway", "auth", "billing", "search", "catalog", "orders",
          "payments", "notifications", "reports", "profile", "inventory", "checkout", "media",
          "ranking", "ingest", "scheduler", "metrics-adapter"]
TEAMS = ["retail", "payments", "identity", "growth", "data", "platform", "search", "ads",
          "logistics", "support", "mobile", "risk", "media", "ml", "finance", "ops"]


def images(rng):
    catalog = []
    for repo, tag in [("registry.k8s.io/kube-proxy", "v1.31.2"),
                      ("quay.io/cilium/cilium", "v1.16.3"),
                      ("registry.k8s.io/dns/k8s-dns-node-cache", "1.23.1"),
                      ("quay.io/prometheus/node-exporter", "v1.8.2"),
                      ("quay.io/brancz/kube-rbac-proxy", "v0.18.1"),
                      ("cr.fluentbit.io/fluent/fluent-bit", "3.1.9"),
                      ("docker.io/istio/proxyv2", "1.23.2"),
                      ("hashicorp/vault", "1.17.6"),
                      ("registry.k8s.io/ingress-nginx/controller", "v1.11.3"),
                      ("docker.io/library/postgres", "16.4"),
                      ("docker.io/bitnami/kafka", "3.8.0"),
                      ("docker.io/library/redis", "7.4.1"),
                      ("docker.elastic.co/elasticsearch/elasticsearch", "8.15.3"),
                      ("docker.io/library/busybox", "1.36.1"),
                      ("docker.io/library/python", "3.12-slim")]:
        catalog.append({"repo": repo, "tag": tag, "digest": "sha256:" + rng.hex(64),
                        "size": rng.randint(5, 400) * 1048576 + rng.randint(0, 1048575)})
    for i in range(60):
        team = TEAMS[i % len(TEAMS)]
        catalog.append({"repo": "registry.example.com/%s/%s" % (
            team, LANGS[i % len(LANGS)]), "tag": "v%d.%d.%d" % (rng.randint(1, 9),
                                                                  rng.randint(0, 40), rng.randint(0, 20)),
            "digest": "sha256:" + rng.hex(64), "size": rng.randint(30, 900) * 1048576})
    return catalog


def probe(rng, port, path):
    return {"httpGet": {"path": path, "port": port, "scheme": "HTTP"},
            "initialDelaySeconds": rng.choice([0, 5, 10, 15, 30]), "timeoutSeconds": 1,
            "periodSeconds": rng.choice([5, 10, 15]), "successThreshold": 1,
            "failureThreshold": 3}


def _resources(rng, cpu_choices, mem_choices, limit_cpu=False):
    cpu = rng.choice(cpu_choices)
    mem = rng.choice(mem_choices)
    res = {"requests": {"cpu": "%dm" % cpu, "memory": "%dMi" % mem},
           "limits": {"memory": "%dMi" % (mem * rng.choice([1, 2, 2, 4]))}}
    if limit_cpu:
        res["limits"]["cpu"] = "%dm" % (cpu * 2)
    return res, cpu, mem


def container(rng, name, image, port=None, env_count=6, cpu=(10, 25, 50, 50, 100, 100, 150, 250),
               mem=(32, 64, 128, 128, 256, 256, 384, 512), probes=True, mounts=(), limit_cpu=False,
               host_network=False, protocol_ports=None, downward=0, secure=False, host_port=False):
    c = {"name": name, "image": image["repo"] + ":" + image["tag"]}
    env = [{"name": n, "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": f}}}
           for n, f in (("POD_NAME", "metadata.name"), ("POD_NAMESPACE", "metadata.namespace"),
                        ("NODE_NAME", "spec.nodeName"))[:downward]]
    for i in range(env_count):
        kind = rng.random()
        ename = rng.choice(["LOG_LEVEL", "OTEL_EXPORTER_OTLP_ENDPOINT", "FEATURE_FLAGS",
                            "DB_HOST", "DB_PASSWORD", "CACHE_URL", "JAVA_TOOL_OPTIONS",
                            "GOMAXPROCS", "REGION", "API_TOKEN", "KAFKA_BROKERS", "TZ"]) + "_%d" % i
        if kind < 0.6:
            env.append({"name": ename, "value": rng.choice([
                "info", "http://otel-collector.observability.svc:4317", "us-east-1",
                "kafka-0.kafka-headless.data.svc:9092,kafka-1.kafka-headless.data.svc:9092",
                "-XX:MaxRAMPercentage=75.0 -XX:+UseG1GC", "UTC", "4"])})
        elif kind < 0.8:
            env.append({"name": ename, "valueFrom": {"secretKeyRef": {
                "name": name + "-secrets", "key": ename.lower()}}})
        else:
            env.append({"name": ename, "valueFrom": {"configMapKeyRef": {
                "name": name + "-config", "key": ename.lower()}}})
    if env:
        c["env"] = env
    res, cpu_m, mem_mi = _resources(rng, cpu, mem, limit_cpu)
    c["resources"] = res
    ports = []
    for p, proto, pname in protocol_ports or ([(port, "TCP", "http")] if port else []):
        entry = {"name": pname, "containerPort": p, "protocol": proto}
        if host_network or host_port:
            entry["hostPort"] = p  # for hostNetwork pods, defaulted from containerPort
        ports.append(entry)
    if ports:
        c["ports"] = ports
    if probes and port:
        c["livenessProbe"] = probe(rng, port, "/healthz")
        c["readinessProbe"] = probe(rng, port, "/readyz")
        if rng.random() < 0.1:
            c["startupProbe"] = dict(probe(rng, port, "/healthz"), failureThreshold=30)
    if mounts:
        c["volumeMounts"] = list(mounts)
    c["terminationMessagePath"] = "/dev/termination-log"
    c["terminationMessagePolicy"] = "File"
    c["imagePullPolicy"] = "IfNotPresent"
    if secure:
        c["securityContext"] = {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                "capabilities": {"drop": ["ALL"]}}
    return c, cpu_m, mem_mi


_KAA_VOLUME = {"name": "kube-api-access-@@KAA@@", "projected": {"sources": [
    {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
    {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
    {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {
        "apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}], "defaultMode": 420}}

_DEFAULT_TOLERATIONS = [  # added to every pod by the DefaultTolerationSeconds admission plugin
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
     "tolerationSeconds": 300},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
     "tolerationSeconds": 300}]

_DAEMON_TOLERATIONS = [  # what the DaemonSet controller adds (util.AddOrUpdateDaemonPodTolerations)
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}]

PRIORITIES = {"system-node-critical": 2000001000, "system-cluster-critical": 2000000000,
              "high-priority": 100000, "batch-low": -10}


KAA_MOUNT = {"name": "kube-api-access-@@KAA@@", "readOnly": True,
              "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}


class Workload:
    """One controller's pods: everything that is the same for all of them, pre-encoded."""

    def __init__(self, rng, kind, namespace, name, containers, init_containers=(), volumes=(),
                 labels=None, annotations=None, priority_class=None, host_network=False,
                 tolerations=(), node_selector=None, gpu=False, restart_policy="Always",
                 created=None, phase="Running", extra_spec=None):
        self.kind = kind  # of the owner: ReplicaSet, DaemonSet, StatefulSet, Job
        self.namespace = namespace
        self.name = name
        self.phase = phase
        self.created = created
        self.host_network = host_network
        self.gpu = gpu
        self.uid = rng.uid()
        self.hash = rng.suffix(10 if kind == "ReplicaSet" else 10)
        self.labels = dict(labels or {"app.kubernetes.io/name": name})
        self.template_labels = dict(self.labels)
        if kind == "ReplicaSet":
            self.labels["pod-template-hash"] = self.hash
            self.owner_name = "%s-%s" % (name, self.hash)
        elif kind == "DaemonSet":
            self.labels["controller-revision-hash"] = self.hash
            self.labels["pod-template-generation"] = "1"
            self.owner_name = name
        elif kind == "StatefulSet":
            self.labels["controller-revision-hash"] = "%s-%s" % (name, self.hash)
            self.owner_name = name
        else:  # Job
            self.labels.update({"batch.kubernetes.io/controller-uid": self.uid,
                                "batch.kubernetes.io/job-name": name,
                                "controller-uid": self.uid, "job-name": name})
            self.owner_name = name
        self.annotations = dict(annotations or {})
        self.priority_class = priority_class
        self.priority = PRIORITIES.get(priority_class, 0)
        self.containers = [c for c, _, _ in containers]
        self.init_containers = [c for c, _, _ in init_containers]
        self.images = {c["name"]: c["image"] for c in self.containers + self.init_containers}
        self.cpu = sum(cpu for _, cpu, _ in containers)
        self.mem = sum(mem for _, _, mem in containers)
        self.host_ports = [(p["hostPort"], p["protocol"]) for c in self.containers
                           for p in c.get("ports", ()) if "hostPort" in p]
        # The pod template as the workload carries it (defaulted by the API server).
        tmpl = {}
        if self.init_containers:
            tmpl["initContainers"] = self.init_containers
        tmpl["containers"] = self.containers
        tmpl["restartPolicy"] = restart_policy
        tmpl["terminationGracePeriodSeconds"] = 30
        tmpl["dnsPolicy"] = "ClusterFirstWithHostNet" if host_network else "ClusterFirst"
        if node_selector:
            tmpl["nodeSelector"] = node_selector
        tmpl["serviceAccountName"] = name if rng.random() < 0.6 else "default"
        tmpl["serviceAccount"] = tmpl["serviceAccountName"]
        if host_network:
            tmpl["hostNetwork"] = True
        tmpl["securityContext"] = {} if host_network else {"fsGroup": 65534, "runAsNonRoot": True}
        tmpl["schedulerName"] = "default-scheduler"
        if tolerations:
            tmpl["tolerations"] = list(tolerations)
        if priority_class:
            tmpl["priorityClassName"] = priority_class
        if volumes:
            tmpl["volumes"] = list(volumes)
        if extra_spec:
            tmpl.update(extra_spec)
        self.template_spec = tmpl
        # The pod's spec: the template plus what admission and the controllers add.
        spec = json.loads(dumps(tmpl))
        for c in spec.get("initContainers", []) + spec["containers"]:
            c.setdefault("volumeMounts", []).append(dict(KAA_MOUNT))
        spec["volumes"] = spec.get("volumes", []) + [json.loads(dumps(_KAA_VOLUME))]
        spec["nodeName"] = "@@NODE@@"
        if kind == "DaemonSet":
            spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In",
                                                        "values": ["@@NODE@@"]}]}]}}}
            spec["tolerations"] = spec.get("tolerations", []) + _DAEMON_TOLERATIONS
        else:
            spec["tolerations"] = spec.get("tolerations", []) + _DEFAULT_TOLERATIONS
        if kind == "StatefulSet":
            spec["hostname"] = "@@POD@@"
            spec["subdomain"] = name + "-headless"
        spec["priority"] = self.priority
        spec["enableServiceLinks"] = True
        spec["preemptionPolicy"] = "PreemptLowerPriority"
        self.spec_b = j(spec)
        self.pending_spec_b = j({k: v for k, v in spec.items()
                                  if k not in ("nodeName",)})
        self.owner_b = j([{"apiVersion": "batch/v1" if kind == "Job" else "apps/v1",
                            "kind": kind, "name": self.owner_name, "uid": self.uid,
                            "controller": True, "blockOwnerDeletion": True}])
        self.labels_b = j(self.labels)
        self.annotations_b = j(self.annotations)
        self._la_b = None
        meta_fields = {"generateName": "", "labels": self.labels, "ownerReferences": json.loads(
            self.owner_b)}
        if self.annotations:
            meta_fields["annotations"] = self.annotations
        kcm = managed("kube-controller-manager", "@@T@@", {
            "f:metadata": fields_v1(meta_fields),
            "f:spec": fields_v1({k: v for k, v in tmpl.items() if k != "serviceAccount"})})
        self.kcm_b = j(kcm)
        status_fields = {"conditions": [{"type": t} for t in (
            "ContainersReady", "Initialized", "PodReadyToStartContainers", "PodScheduled",
            "Ready")], "containerStatuses": [], "hostIP": "", "hostIPs": [{"ip": "@@HIP@@"}],
            "phase": "", "podIP": "", "podIPs": [{"ip": "@@IP@@"}], "startTime": ""}
        self.kubelet_b = j(managed("kubelet", "@@T@@", {"f:status": fields_v1(status_fields)},
                                    "status"))

    def last_applied_annotations(self, rng):
        """The annotations plus a ~10 KB last-applied-configuration (as kubectl apply leaves)."""
        if self._la_b is None:
            containers = []
            for c in self.containers:
                containers.append({k: c[k] for k in ("name", "image", "env", "ports", "resources")
                                   if k in c})
            manifest = {"apiVersion": "v1", "kind": "Pod", "metadata": {
                "annotations": {}, "labels": self.template_labels, "name": self.name,
                "namespace": self.namespace}, "spec": {"containers": containers}}
            flags = []
            size = len(dumps(manifest)) + 10
            while size < 9800:
                flags.append("--%s-%s=%s" % (rng.choice(["feature", "limit", "timeout", "cache"]),
                                             rng.suffix(8), rng.choice(["true", "30s", "512"])))
                size += len(flags[-1]) + 3
            manifest["spec"]["containers"][0]["args"] = flags
            ann = dict(self.annotations)
            ann["kubectl.kubernetes.io/last-applied-configuration"] = dumps(manifest) + "\n"
            self._la_b = j(ann)
        return self._la_b

    def object(self, rng, replicas, created_rv):
        """The owning object (DaemonSet, ReplicaSet, StatefulSet or Job), as a dict."""
        api = "batch/v1" if self.kind == "Job" else "apps/v1"
        t = stamp(self.created)
        meta = {"name": self.owner_name, "namespace": self.namespace, "uid": self.uid,
                "resourceVersion": str(created_rv), "generation": 1, "creationTimestamp": t,
                "labels": self.template_labels}
        selector = {"matchLabels": {k: v for k, v in self.labels.items()
                                    if k not in ("pod-template-generation",
                                                 "controller-revision-hash")}}
        template = {"metadata": {"labels": self.labels}, "spec": self.template_spec}
        spec = {"selector": selector, "template": template}
        if self.kind == "ReplicaSet":
            spec["replicas"] = replicas
            meta["annotations"] = {"deployment.kubernetes.io/desired-replicas": str(replicas),
                                   "deployment.kubernetes.io/max-replicas": str(replicas + 1),
                                   "deployment.kubernetes.io/revision": "1"}
            meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "Deployment",
                                        "name": self.name, "uid": self.deployment_uid,
                                        "controller": True, "blockOwnerDeletion": True}]
            status = {"replicas": replicas, "fullyLabeledReplicas": replicas,
                      "readyReplicas": replicas, "availableReplicas": replicas,
                      "observedGeneration": 1}
        elif self.kind == "DaemonSet":
            spec["updateStrategy"] = {"type": "RollingUpdate", "rollingUpdate": {
                "maxUnavailable": 1, "maxSurge": 0}}
            spec["revisionHistoryLimit"] = 10
            status = {"currentNumberScheduled": replicas, "numberMisscheduled": 0,
                      "desiredNumberScheduled": replicas, "numberReady": replicas,
                      "observedGeneration": 1, "updatedNumberScheduled": replicas,
                      "numberAvailable": replicas}
        elif self.kind == "StatefulSet":
            spec.update({"replicas": replicas, "serviceName": self.name + "-headless",
                         "podManagementPolicy": "OrderedReady", "updateStrategy": {
                             "type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
                         "revisionHistoryLimit": 10, "persistentVolumeClaimRetentionPolicy": {
                             "whenDeleted": "Retain", "whenScaled": "Retain"}})
            status = {"observedGeneration": 1, "replicas": replicas, "readyReplicas": replicas,
                      "currentReplicas": replicas, "updatedReplicas": replicas,
                      "currentRevision": self.labels["controller-revision-hash"],
                      "updateRevision": self.labels["controller-revision-hash"],
                      "collisionCount": 0, "availableReplicas": replicas}
        else:
            spec.update({"parallelism": 1, "completions": 1, "backoffLimit": 6,
                         "completionMode": "NonIndexed", "suspend": False})
            ok = self.phase == "Succeeded"
            status = {"startTime": t, "succeeded" if ok else "failed": 1 if ok else 7,
                      "conditions": [{"type": "Complete" if ok else "Failed", "status": "True",
                                      "lastProbeTime": t, "lastTransitionTime": t}]}
            if ok:
                status["completionTime"] = stamp(self.created + 95)
        return {"metadata": meta, "spec": spec, "status": status}, api

    def deployment_object(self, replicas):
        t = stamp(self.created)
        return {"metadata": {"name": self.name, "namespace": self.namespace,
                             "uid": self.deployment_uid, "generation": 1,
                             "creationTimestamp": t, "labels": self.template_labels,
                             "annotations": {"deployment.kubernetes.io/revision": "1"}},
                "spec": {"replicas": replicas, "selector": {"matchLabels": self.template_labels},
                         "template": {"metadata": {"labels": self.template_labels},
                                      "spec": self.template_spec},
                         "strategy": {"type": "RollingUpdate", "rollingUpdate": {
                             "maxUnavailable": "25%", "maxSurge": "25%"}},
                         "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600},
                "status": {"observedGeneration": 1, "replicas": replicas,
                           "updatedReplicas": replicas, "readyReplicas": replicas,
                           "availableReplicas": replicas}}


def daemonsets(rng, img, created):
    """The five DaemonSets of a typical cluster; three use hostNetwork and so host ports."""
    hp = lambda path: {"name": path.strip("/").replace("/", "-") or "root",
                       "hostPath": {"path": path, "type": ""}}
    out = []
    c = container(rng, "kube-proxy", img["kube-proxy"], env_count=0, cpu=(100,), mem=(64,),
                   probes=False, mounts=[{"name": "xtables-lock", "mountPath": "/run/xtables.lock"},
                                         {"name": "lib-modules", "mountPath": "/lib/modules",
                                          "readOnly": True}], host_network=True)
    c[0]["securityContext"] = {"privileged": True}
    out.append(Workload(rng, "DaemonSet", "kube-system", "kube-proxy", [c],
                         volumes=[hp("/run/xtables.lock"), hp("/lib/modules")],
                         labels={"k8s-app": "kube-proxy"}, priority_class="system-node-critical",
                         host_network=True, tolerations=[{"operator": "Exists"}], created=created))
    agent = container(rng, "cilium-agent", img["cilium"], env_count=4, cpu=(100,), mem=(512,),
                       port=9879, host_network=True, mounts=[
                           {"name": "cilium-run", "mountPath": "/var/run/cilium"},
                           {"name": "bpf-maps", "mountPath": "/sys/fs/bpf"}],
                       protocol_ports=[(9962, "TCP", "prometheus"), (9964, "TCP", "envoy-metrics")])
    init = [container(rng, n, img["cilium"], env_count=1, cpu=(10,), mem=(32,), probes=False,
                       host_network=True) for n in ("config", "mount-cgroup", "clean-cilium-state")]
    out.append(Workload(rng, "DaemonSet", "kube-system", "cilium", [agent], init_containers=init,
                         volumes=[hp("/var/run/cilium"), hp("/sys/fs/bpf")],
                         labels={"k8s-app": "cilium", "app.kubernetes.io/name": "cilium-agent",
                                 "app.kubernetes.io/part-of": "cilium"},
                         priority_class="system-node-critical", host_network=True,
                         tolerations=[{"operator": "Exists"}], created=created))
    dns = container(rng, "node-cache", img["k8s-dns-node-cache"], env_count=0, cpu=(25,),
                     mem=(30,), port=8080, host_network=True,
                     protocol_ports=[(53, "UDP", "dns"), (53, "TCP", "dns-tcp"),
                                     (9253, "TCP", "metrics")])
    out.append(Workload(rng, "DaemonSet", "kube-system", "node-local-dns", [dns],
                         labels={"k8s-app": "node-local-dns"}, priority_class="system-node-critical",
                         host_network=True, tolerations=[{"operator": "Exists"}], created=created))
    exporter = container(rng, "node-exporter", img["node-exporter"], env_count=0, cpu=(100,),
                          mem=(180,), host_network=True, port=9100,
                          protocol_ports=[(9100, "TCP", "http")])
    rbac = container(rng, "kube-rbac-proxy", img["kube-rbac-proxy"], env_count=1, cpu=(10,),
                      mem=(20,), probes=False, host_network=True)
    out.append(Workload(rng, "DaemonSet", "monitoring", "node-exporter", [exporter, rbac],
                         labels={"app.kubernetes.io/name": "node-exporter",
                                 "app.kubernetes.io/component": "exporter",
                                 "app.kubernetes.io/part-of": "kube-prometheus",
                                 "app.kubernetes.io/version": "1.8.2"},
                         host_network=True, tolerations=[{"operator": "Exists"}], created=created,
                         extra_spec={"hostPID": True}))
    fb = container(rng, "fluent-bit", img["fluent-bit"], env_count=3, cpu=(50,), mem=(64,),
                    port=2020, mounts=[{"name": "varlog", "mountPath": "/var/log"},
                                       {"name": "config", "mountPath": "/fluent-bit/etc/"}])
    out.append(Workload(rng, "DaemonSet", "logging", "fluent-bit", [fb],
                         volumes=[hp("/var/log"), {"name": "config", "configMap": {
                             "name": "fluent-bit", "defaultMode": 420}}],
                         labels={"app.kubernetes.io/name": "fluent-bit",
                                 "app.kubernetes.io/instance": "fluent-bit"},
                         tolerations=[{"operator": "Exists"}], created=created))
    return out


def deployment(rng, namespace, name, team, img_by_name, app_images, created, istio,
                priority_class=None, gpu=False, huge=False, host_ports=None):
    """A Deployment's ReplicaSet. `host_ports`: [(port, protocol, name)] its app container
    declares with hostPort; `gpu`: it asks for a GPU and tolerates the GPU pool's taint; `huge`:
    it asks for more cpu than any node has (its pods stay Pending)."""
    port = host_ports[0][0] if host_ports else rng.choice([8080, 8080, 8000, 3000, 9000])
    app_img = rng.choice(app_images)
    mounts = [{"name": "config", "mountPath": "/etc/%s" % name, "readOnly": True},
              {"name": "tmp", "mountPath": "/tmp"}]
    app = container(rng, name, app_img, port=port, env_count=rng.randint(0, 3),
                     mounts=mounts, limit_cpu=rng.random() < 0.3, downward=2,
                     secure=rng.random() < 0.5, protocol_ports=host_ports,
                     host_port=bool(host_ports),
                     cpu=(24000,) if huge else (10, 25, 50, 50, 75, 100),
                     mem=(512,) if huge else (32, 64, 96, 128, 192, 256))
    if gpu:
        app[0]["resources"]["limits"]["nvidia.com/gpu"] = "1"
    containers = [app]
    init = []
    volumes = [{"name": "config", "configMap": {"name": name + "-config", "defaultMode": 420}},
               {"name": "tmp", "emptyDir": {}}]
    if rng.random() < 0.25:
        containers.append(container(rng, "worker", app_img, env_count=rng.randint(0, 2),
                                     cpu=(10, 25, 50), mem=(32, 64, 128), probes=False,
                                     mounts=mounts))
    if istio:
        proxy = container(rng, "istio-proxy", img_by_name["proxyv2"], port=15090, env_count=0,
                           downward=2,
                           cpu=(10, 20), mem=(40, 64), probes=False,
                           protocol_ports=[(15090, "TCP", "http-envoy-prom")],
                           mounts=[{"name": "istio-envoy", "mountPath": "/etc/istio/proxy"}])
        proxy[0]["readinessProbe"] = probe(rng, 15021, "/healthz/ready")
        containers.append(proxy)
        init.append(container(rng, "istio-init", img_by_name["proxyv2"], env_count=0,
                               cpu=(10,), mem=(40,), probes=False))
        volumes.append({"name": "istio-envoy", "emptyDir": {"medium": "Memory"}})
    if len(containers) < 4 and rng.random() < (0.5 if len(containers) == 1 else 0.1):
        containers.append(container(rng, "log-shipper", img_by_name["fluent-bit"], env_count=0,
                                     cpu=(5, 10), mem=(16, 32), probes=False,
                                     mounts=[{"name": "tmp", "mountPath": "/tmp"}]))
    if len(containers) < 2:
        containers.append(container(rng, "vault-agent", img_by_name["vault"], env_count=1,
                                     cpu=(5, 10), mem=(16, 32), probes=False,
                                     mounts=[{"name": "tmp", "mountPath": "/tmp"}]))
    labels = {"app.kubernetes.io/name": name, "app.kubernetes.io/instance": name + "-prod",
              "app.kubernetes.io/component": rng.choice(["server", "worker", "api", "frontend"]),
              "app.kubernetes.io/part-of": team, "app.kubernetes.io/version": app_img["tag"],
              "team": team}
    annotations = {"prometheus.io/scrape": "true", "prometheus.io/port": str(port)}
    if istio:
        labels.update({"security.istio.io/tlsMode": "istio",
                       "service.istio.io/canonical-name": name,
                       "service.istio.io/canonical-revision": app_img["tag"]})
        annotations["sidecar.istio.io/status"] = dumps({
            "initContainers": ["istio-init"], "containers": ["istio-proxy"],
            "volumes": ["workload-socket", "credential-socket", "workload-certs", "istio-envoy",
                        "istio-data", "istio-podinfo", "istio-token", "istiod-ca-cert"],
            "imagePullSecrets": None, "revision": "default"})
        annotations["kubectl.kubernetes.io/default-container"] = name
    if rng.random() < 0.2:
        annotations["kubectl.kubernetes.io/restartedAt"] = stamp(created + rng.randint(0, 86400))
    tolerations = [dict(GPU_TAINT, operator="Equal")] if gpu else ()
    return Workload(rng, "ReplicaSet", namespace, name, containers, init_containers=init,
                     volumes=volumes, labels=labels, annotations=annotations,
                     priority_class=priority_class, gpu=gpu, tolerations=tolerations,
                     node_selector={"eks.amazonaws.com/nodegroup": "gpu"} if gpu else None,
                     created=created)
