"""The seed story's objects and small builders of API objects, as the API server holds them
(after defaulting and admission), for tests/explain/explain_test.py and make demo
(scripts/demo-explain.py): a CoreDNS DaemonSet with hostNetwork on 53/UDP whose pod for one node
stays Pending because another DaemonSet's pod there declares 53/UDP.
"""

import copy

SYSTEM_NODE_CRITICAL = 2000001000
DS_TOLERATIONS = [  # what the DaemonSet controller adds to every daemon pod
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/network-unavailable", "operator": "Exists", "effect": "NoSchedule"},
]


def node(name, cpu="4", memory="8Gi", pods="110", labels=None, taints=None, cordoned=False):
    obj = {"apiVersion": "v1", "kind": "Node",
           "metadata": {"name": name, "labels": {"kubernetes.io/os": "linux",
                                                 "kubernetes.io/hostname": name,
                                                 **(labels or {})}},
           "spec": {},
           "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": pods},
                      "capacity": {"cpu": cpu, "memory": memory, "pods": pods}}}
    if taints:
        obj["spec"]["taints"] = taints
    if cordoned:
        obj["spec"]["unschedulable"] = True
    return obj


def pod(name, ns="default", node_name=None, cpu=None, host_ports=(), owner=None, priority=0,
        phase=None, host_network=False, labels=None, container="c", start=None):
    spec = {"containers": [{"name": container, "image": "registry.k8s.io/pause:3.9"}],
            "priority": priority, "schedulerName": "default-scheduler"}
    if cpu:
        spec["containers"][0]["resources"] = {"requests": {"cpu": cpu}}
    ports = []
    for number, proto in host_ports:
        ports.append({"containerPort": number, "protocol": proto} if host_network else
                     {"containerPort": number, "hostPort": number, "protocol": proto})
    if ports:
        spec["containers"][0]["ports"] = ports
    if host_network:
        spec["hostNetwork"] = True
        for p in ports:  # API defaulting of hostNetwork pods
            p["hostPort"] = p["containerPort"]
    meta = {"name": name, "namespace": ns, "labels": labels or {"app": name}}
    if owner:
        kind, owner_name = owner
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": kind, "name": owner_name,
                                    "uid": "uid-" + owner_name, "controller": True}]
    status = {"phase": phase or ("Running" if node_name else "Pending")}
    if start:
        status["startTime"] = start
    obj = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}
    if node_name:
        spec["nodeName"] = node_name
    return obj


def daemonset(name, ns, ports, priority_class="system-node-critical", container=None):
    return {"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": name, "namespace": ns, "uid": "uid-" + name},
            "spec": {"selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"hostNetwork": True,
                                           "priorityClassName": priority_class,
                                           "containers": [{"name": container or name.split("-")[0],
                                                           "image": "x",
                                                           "ports": [{"containerPort": p,
                                                                      "protocol": proto}
                                                                     for p, proto in ports]}]}}}}


def daemon_pod(ds, node_name, suffix, bound=True):
    """A pod as the DaemonSet controller creates it for node_name (bound once scheduled)."""
    tmpl = ds["spec"]["template"]
    obj = pod(ds["metadata"]["name"] + "-" + suffix, ns=ds["metadata"]["namespace"],
              node_name=node_name if bound else None, owner=("DaemonSet", ds["metadata"]["name"]),
              priority=SYSTEM_NODE_CRITICAL, host_network=True,
              host_ports=[(p["containerPort"], p["protocol"])
                          for p in tmpl["spec"]["containers"][0]["ports"]],
              labels=tmpl["metadata"]["labels"], container=tmpl["spec"]["containers"][0]["name"])
    obj["spec"]["priorityClassName"] = "system-node-critical"
    obj["spec"]["tolerations"] = copy.deepcopy(DS_TOLERATIONS)
    obj["spec"]["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In",
                                                "values": [node_name]}]}]}}}
    return obj


def seed_story(put):
    """Five nodes; DaemonSets coredns-node (53/UDP, 53/TCP) and node-local-dns (53/UDP), both
    system-node-critical; coredns-node runs on n1, n2, n4, n5; on n3 node-local-dns holds 53/UDP
    and coredns-node's pod for n3 is Pending. `put(resource, obj)` stores an object."""
    for i in range(1, 6):
        put("nodes", node("n%d" % i))
    coredns = daemonset("coredns-node", "kube-system", [(53, "UDP"), (53, "TCP")])
    nld = daemonset("node-local-dns", "kube-system", [(53, "UDP")], container="node-cache")
    put("daemonsets", coredns)
    put("daemonsets", nld)
    for i in (1, 2, 4, 5):
        put("pods", daemon_pod(coredns, "n%d" % i, "a%d" % i))
    put("pods", daemon_pod(nld, "n3", "q7fz2"))
    put("pods", daemon_pod(coredns, "n3", "x7k2q", bound=False))
    return coredns
