"""deploy/webhook checked as a whole (CTest webhook_manifests_test, label unit).

- Every YAML file there parses, each object is of a kind and apiVersion this test knows, in the
  namespace it belongs to.
- The objects name each other consistently: selectors and labels, the Service's target ports
  and the container's, the webhook's service, path and port, the TLS Secret that cert-manager
  writes and the Deployment mounts, cert-manager's chain of Issuers and Certificates, the
  ServiceMonitor and the Service, the RBAC subjects and the ServiceAccount.
- The hardening: namespaceSelector without nodegate and kube-system, required hostname
  anti-affinity, PodDisruptionBudget, our own PriorityClass, probes, a grace period covering
  --shutdown-delay + --timeout, the image `make image` builds.
- The Deployment's args are flags that `nodegate webhook --help` lists, and they start the
  built binary (against tests/webhook/standin.py, which refuses with 403 every verb and
  resource rbac.yaml does not grant): its probes answer as the Deployment asks them, it judges
  a pod each way and records the allowed one's claim in a Lease, and every API request it
  makes is one that rbac.yaml allows; rbac.yaml grants exactly the rights in RBAC_USED.
- The alerts: promtool (from Debian's prometheus package, scripts/install-deps.sh) checks them
  and runs their unit tests (testdata/monitoring_rules_test.yaml); they name only metrics the
  webhook exports (webhook/metrics/names.h), Prometheus's `up`, or the API server's, and the
  running binary exports every one of its own they read.
- make-cert.sh --fill makes a copy of webhook.yaml use its CA.

What it cannot show: how a real API server, cert-manager or Prometheus Operator accepts these
objects (no schema validation: none of them runs here).
"""

import base64
import glob
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import standin  # noqa: E402
from standin_store import RESOURCES  # noqa: E402

SRC = os.environ.get("NODEGATE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.environ.get("NODEGATE_BIN_DIR", os.path.join(SRC, "build", "bin"))
NODEGATE = os.path.join(BIN, "nodegate")
DEPLOY = os.path.join(SRC, "deploy", "webhook")
MAKE_CERT = os.path.join(DEPLOY, "make-cert.sh")
RULES_TEST = os.path.join(SRC, "tests", "webhook", "testdata", "monitoring_rules_test.yaml")
WAIT = 30  # seconds: the longest a condition below may take (a hang, not a performance bound)

KNOWN_KINDS = {
    ("v1", "Namespace"), ("v1", "ServiceAccount"), ("v1", "Service"),
    ("apps/v1", "Deployment"), ("policy/v1", "PodDisruptionBudget"),
    ("scheduling.k8s.io/v1", "PriorityClass"),
    ("rbac.authorization.k8s.io/v1", "ClusterRole"),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
    ("rbac.authorization.k8s.io/v1", "Role"), ("rbac.authorization.k8s.io/v1", "RoleBinding"),
    ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration"),
    ("cert-manager.io/v1", "Issuer"), ("cert-manager.io/v1", "Certificate"),
    ("monitoring.coreos.com/v1", "ServiceMonitor"), ("monitoring.coreos.com/v1", "PrometheusRule"),
}
CLUSTER_SCOPED = {"Namespace", "PriorityClass", "ClusterRole", "ClusterRoleBinding",
                  "ValidatingWebhookConfiguration"}
NAMESPACE = "nodegate"

# The API calls of nodegate webhook: nodes and pods cluster-wide for its cache (kube/reflector)
# and the reads before it has synced; in its own namespace one Lease per node for the claims,
# read, created and updated (webhook/claims/claims.cc). (group, resource, namespace or None for
# cluster-wide): verbs. rbac.yaml must grant exactly these; the running binary's requests are
# checked against rbac.yaml itself.
ALL_VERBS = {"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}
RBAC_USED = {
    ("", "nodes", None): {"get", "list", "watch"},
    ("", "pods", None): {"get", "list", "watch"},
    ("coordination.k8s.io", "leases", NAMESPACE): {"get", "create", "update"},
}

# Alert expressions may name only the metrics nodegate webhook exports (every name in
# webhook/metrics/names.h), Prometheus's own `up`, and these of the API server
# (k8s.io/apiserver pkg/admission/metrics: counters labelled name, type, ...).
METRIC_NAMES_H = os.path.join(SRC, "webhook", "metrics", "names.h")
APISERVER_METRICS = {"apiserver_admission_webhook_fail_open_count",
                     "apiserver_admission_webhook_rejection_count"}


def webhook_metrics():
    with open(METRIC_NAMES_H) as f:
        names = set(re.findall(r'"((?:nodegate_webhook|process)_[a-z_]+)"', f.read()))
    if len(names) < 10:
        raise AssertionError("no metric names read from " + METRIC_NAMES_H)
    return names


def load_docs(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def project_version():
    with open(os.path.join(SRC, "CMakeLists.txt")) as f:
        m = re.search(r"^project\(nodegate VERSION ([0-9][0-9.]*)", f.read(), re.M)
    return m.group(1)


def go_duration(text):
    """Seconds in a Go duration of the forms the Deployment uses (4s, 500ms, 1m30s, 2h)."""
    units = {"h": 3600, "m": 60, "s": 1, "ms": 0.001}
    parts = re.findall(r"([0-9.]+)(ms|h|m|s)", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError("not a duration: " + text)
    return sum(float(n) * units[u] for n, u in parts)


def help_flags():
    out = subprocess.run([NODEGATE, "webhook", "--help"], capture_output=True, text=True,
                         timeout=WAIT)
    if out.returncode != 0:
        raise AssertionError("nodegate webhook --help: exit %d: %s" % (out.returncode, out.stderr))
    return set(re.findall(r"^\s+(?:-\w,)?(--[a-z][a-z0-9-]*)", out.stdout, re.M))


def split_flag(arg):
    """'--flag=value' -> ('--flag', 'value'); the Deployment writes every flag so."""
    if not arg.startswith("--") or "=" not in arg:
        raise AssertionError("Deployment arg %r is not --flag=value" % arg)
    return tuple(arg.split("=", 1))


def promql_metric_names(expr):
    """The metric names an expression reads: identifiers left once strings, label matchers,
    ranges, grouping lists, function calls and keywords are taken out."""
    expr = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    expr = re.sub(r"\{[^}]*\}", " ", expr)
    expr = re.sub(r"\[[^\]]*\]", " ", expr)
    expr = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", expr)
    expr = re.sub(r"\boffset\s+\w+", " ", expr)
    names = set()
    for m in re.finditer(r"\b([a-zA-Z_:][a-zA-Z0-9_:]*)\b(\s*\()?", expr):
        word, call = m.group(1), m.group(2)
        if call or word in ("and", "or", "unless", "bool", "inf", "nan"):
            continue
        names.add(word)
    return names


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def promtool(tmp):
    """promtool from the prometheus .deb that scripts/install-deps.sh keeps in the cache."""
    deb = subprocess.run(
        ["bash", "-c", 'source "$1/scripts/lib/arch.sh" && cached_deb prometheus "$HOST_ARCH"',
         "_", SRC], capture_output=True, text=True).stdout.strip()
    if not deb:
        raise AssertionError("no prometheus .deb in the cache: run scripts/install-deps.sh")
    path = os.path.join(tmp, "promtool")
    with open(path, "wb") as f:
        subprocess.run("dpkg-deb --fsys-tarfile '%s' | tar -xO ./usr/bin/promtool" % deb,
                       shell=True, check=True, stdout=f)
    os.chmod(path, 0o755)
    return path


class Manifests:
    """Every object of deploy/webhook, by kind; the Deployment's container and friends."""

    def __init__(self):
        self.files = sorted(glob.glob(os.path.join(DEPLOY, "*.yaml")))
        self.by_file = {os.path.basename(p): load_docs(p) for p in self.files}
        self.objects = [d for docs in self.by_file.values() for d in docs]

    def all(self, kind):
        return [o for o in self.objects if o.get("kind") == kind]

    def one(self, kind, name=None):
        found = [o for o in self.all(kind) if name is None or o["metadata"]["name"] == name]
        if len(found) != 1:
            raise AssertionError("%d %s objects named %s" % (len(found), kind, name or "(any)"))
        return found[0]

    @property
    def deployment(self):
        return self.one("Deployment")

    @property
    def pod_spec(self):
        return self.deployment["spec"]["template"]["spec"]

    @property
    def container(self):
        [c] = self.pod_spec["containers"]
        return c

    @property
    def service(self):
        return self.one("Service")

    @property
    def hook(self):
        [hook] = self.one("ValidatingWebhookConfiguration")["webhooks"]
        return hook

    def flags(self):
        return dict(split_flag(a) for a in self.container["args"][1:])

    def container_port(self, name):
        [port] = [p["containerPort"] for p in self.container["ports"] if p["name"] == name]
        return port

    def service_port(self, port):
        [p] = [p for p in self.service["spec"]["ports"] if p["port"] == port]
        return p


def selects(selector, labels):
    return all(labels.get(k) == v for k, v in selector.get("matchLabels", {}).items())


def granted(m):
    """What rbac.yaml grants the Deployment's ServiceAccount: (group, resource, namespace or
    None for cluster-wide): verbs."""
    sa = (m.pod_spec["serviceAccountName"], m.deployment["metadata"]["namespace"])
    m.one("ServiceAccount", sa[0])
    rights = {}
    for binding_kind, role_kind in (("ClusterRoleBinding", "ClusterRole"),
                                    ("RoleBinding", "Role")):
        for b in m.all(binding_kind):
            subjects = {(s["name"], s["namespace"]) for s in b["subjects"]
                        if s["kind"] == "ServiceAccount"}
            if sa not in subjects:
                continue
            if b["roleRef"]["kind"] != role_kind:
                raise AssertionError("%s %s binds a %s" % (binding_kind, b["metadata"]["name"],
                                                          b["roleRef"]["kind"]))
            role = m.one(role_kind, b["roleRef"]["name"])
            scope = role["metadata"].get("namespace")
            if scope != b["metadata"].get("namespace"):
                raise AssertionError("Role and RoleBinding %s in different namespaces" % scope)
            for rule in role["rules"]:
                if "resourceNames" in rule:
                    raise AssertionError("resourceNames: the Lease names are per node")
                for g in rule["apiGroups"]:
                    for r in rule["resources"]:
                        rights.setdefault((g, r, scope), set()).update(rule["verbs"])
    return rights


class ManifestTest(unittest.TestCase):
    """The objects, read as the API server and the controllers will read them."""

    @classmethod
    def setUpClass(cls):
        cls.m = Manifests()

    def test_every_manifest_parses_and_is_known(self):
        self.assertGreaterEqual(len(self.m.files), 5, self.m.files)
        for name, docs in self.m.by_file.items():
            self.assertTrue(docs, name + " holds no object")
            for d in docs:
                what = "%s: %s/%s" % (name, d.get("kind"), d.get("metadata", {}).get("name"))
                self.assertIn((d.get("apiVersion"), d.get("kind")), KNOWN_KINDS, what)
                self.assertTrue(d["metadata"].get("name"), what)
                if d["kind"] in CLUSTER_SCOPED:
                    self.assertNotIn("namespace", d["metadata"], what)
                else:
                    self.assertEqual(d["metadata"].get("namespace"), NAMESPACE, what)
        self.assertEqual(self.m.one("Namespace")["metadata"]["name"], NAMESPACE)
        keys = [(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"])
                for o in self.m.objects]
        self.assertEqual(len(keys), len(set(keys)), "an object defined twice")

    def test_selectors_labels_and_ports(self):
        d = self.m.deployment
        labels = d["spec"]["template"]["metadata"]["labels"]
        self.assertTrue(selects(d["spec"]["selector"], labels), "Deployment selector")
        pdb = self.m.one("PodDisruptionBudget")
        self.assertTrue(selects(pdb["spec"]["selector"], labels), "PDB selector")
        self.assertLess(pdb["spec"]["minAvailable"], d["spec"]["replicas"],
                        "a PDB with minAvailable >= replicas blocks every drain")
        self.assertGreaterEqual(d["spec"]["replicas"], 2)
        svc = self.m.service["spec"]
        self.assertEqual(svc["selector"], {k: labels[k] for k in svc["selector"]},
                         "Service selector")
        names = {p["name"] for p in self.m.container["ports"]}
        for p in svc["ports"]:
            self.assertIn(p["targetPort"], names, "Service port %s targets no container port" % p)
        flags = self.m.flags()
        self.assertEqual(flags["--listen"].rsplit(":", 1)[1], str(self.m.container_port("https")))
        self.assertEqual(flags["--metrics-listen"].rsplit(":", 1)[1],
                         str(self.m.container_port("metrics")))

    def test_scheduling_and_disruption(self):
        spec = self.m.pod_spec
        labels = self.m.deployment["spec"]["template"]["metadata"]["labels"]
        [term] = spec["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        self.assertEqual(term["topologyKey"], "kubernetes.io/hostname")
        self.assertTrue(selects(term["labelSelector"], labels), "anti-affinity selector")
        # One replica per node: a surge pod could find no node, so replace without surging.
        rolling = self.m.deployment["spec"]["strategy"]["rollingUpdate"]
        self.assertEqual((rolling["maxSurge"], rolling["maxUnavailable"]), (0, 1))
        pc = self.m.one("PriorityClass", spec["priorityClassName"])
        self.assertFalse(spec["priorityClassName"].startswith("system-"))
        self.assertLess(pc["value"], 1000000000, "user-defined classes stay at 1e9 or below")
        self.assertGreater(pc["value"], 0)
        self.assertFalse(pc.get("globalDefault"))

    def test_container_hardening_probes_and_grace_period(self):
        spec, c = self.m.pod_spec, self.m.container
        self.assertEqual(c["image"], "localhost/nodegate:" + project_version(),
                         "the image make image builds (scripts/webhook-image.sh)")
        with open(os.path.join(SRC, "deploy", "webhook", "Containerfile")) as f:
            [user] = re.findall(r"^USER\s+(\d+)", f.read(), re.M)
        self.assertEqual(spec["securityContext"]["runAsUser"], int(user), "the image's USER")
        self.assertTrue(spec["securityContext"]["runAsNonRoot"])
        sc = c["securityContext"]
        self.assertEqual((sc["allowPrivilegeEscalation"], sc["readOnlyRootFilesystem"],
                          sc["capabilities"]["drop"]), (False, True, ["ALL"]))
        for probe, path in (("startupProbe", "/healthz"), ("livenessProbe", "/healthz"),
                            ("readinessProbe", "/readyz")):
            get = c[probe]["httpGet"]
            self.assertEqual(get["path"], path, probe)
            self.assertIn(get["port"], {p["name"] for p in c["ports"]}, probe)
        res = c["resources"]
        self.assertIn("memory", res["requests"])
        self.assertIn("memory", res["limits"])
        self.assertNotIn("cpu", res["limits"], "a CPU limit throttles reviews into timeouts")
        flags = self.m.flags()
        grace = spec["terminationGracePeriodSeconds"]
        self.assertGreaterEqual(
            grace, go_duration(flags["--shutdown-delay"]) + go_duration(flags["--timeout"]),
            "the grace period must cover --shutdown-delay and the reviews in flight")
        # The downward API gives the claims' namespace and the replica's identity.
        env = {e["name"]: e["valueFrom"]["fieldRef"]["fieldPath"] for e in c["env"]}
        self.assertEqual(flags["--claims-namespace"], "$(POD_NAMESPACE)")
        self.assertEqual(flags["--identity"], "$(POD_NAME)")
        self.assertEqual(env, {"POD_NAMESPACE": "metadata.namespace", "POD_NAME": "metadata.name"})
        self.assertEqual(flags["--log-format"], "json")
        # The TLS pair: the keys of a kubernetes.io/tls Secret, in the mounted Secret.
        [mount] = c["volumeMounts"]
        [vol] = [v for v in spec["volumes"] if v["name"] == mount["name"]]
        self.assertEqual(flags["--tls-cert"], mount["mountPath"] + "/tls.crt")
        self.assertEqual(flags["--tls-key"], mount["mountPath"] + "/tls.key")
        self.assertEqual(vol["secret"]["secretName"], "nodegate-webhook-tls")

    def test_webhook_configuration(self):
        hook, svc = self.m.hook, self.m.service
        ref = hook["clientConfig"]["service"]
        self.assertEqual((ref["name"], ref["namespace"], ref["path"]),
                         (svc["metadata"]["name"], svc["metadata"]["namespace"], "/validate"))
        self.assertEqual(self.m.service_port(ref["port"])["targetPort"], "https")
        self.assertEqual(hook["admissionReviewVersions"], ["v1"])
        # Allowed pods are recorded in Leases, never for a dry run.
        self.assertEqual(hook["sideEffects"], "NoneOnDryRun")
        self.assertEqual(hook["failurePolicy"], "Ignore")
        self.assertTrue(1 <= hook["timeoutSeconds"] <= 30)
        self.assertLess(go_duration(self.m.flags()["--timeout"]), hook["timeoutSeconds"],
                        "the webhook must answer before the API server gives up")
        [rule] = hook["rules"]
        self.assertEqual((rule["operations"], rule["apiGroups"], rule["resources"]),
                         (["CREATE"], [""], ["pods"]))
        conditions = " ".join(c["expression"] for c in hook["matchConditions"])
        for needed in ("object.spec.nodeName", "system:nodes", "kubernetes.io/config.mirror"):
            self.assertIn(needed, conditions)
        [expr] = hook["namespaceSelector"]["matchExpressions"]
        self.assertEqual((expr["key"], expr["operator"]), ("kubernetes.io/metadata.name", "NotIn"))
        self.assertTrue({NAMESPACE, "kube-system"} <= set(expr["values"]), expr)
        # cert-manager's injector fills caBundle; one in the file would be reset by every apply.
        self.assertNotIn("caBundle", hook["clientConfig"])

    def test_cert_manager_objects_reference_each_other(self):
        vwc = self.m.one("ValidatingWebhookConfiguration")
        ns, name = vwc["metadata"]["annotations"]["cert-manager.io/inject-ca-from"].split("/")
        serving = self.m.one("Certificate", name)
        self.assertEqual(serving["metadata"]["namespace"], ns)
        self.assertEqual(serving["spec"]["secretName"],
                         next(v["secret"]["secretName"] for v in self.m.pod_spec["volumes"]))
        ref = self.m.hook["clientConfig"]["service"]
        self.assertIn("%s.%s.svc" % (ref["name"], ref["namespace"]), serving["spec"]["dnsNames"])
        self.assertEqual(serving["spec"]["privateKey"]["rotationPolicy"], "Always")
        self.assertIn("server auth", serving["spec"]["usages"])
        duration = go_duration(serving["spec"]["duration"])
        renew = go_duration(serving["spec"]["renewBefore"])
        self.assertLess(renew, duration)
        # So that the 30-day warning of monitoring.yaml means a renewal that failed.
        self.assertGreater(renew, 30 * 86400)
        ca_issuer = self.m.one("Issuer", serving["spec"]["issuerRef"]["name"])
        self.assertEqual(serving["spec"]["issuerRef"].get("kind", "Issuer"), "Issuer")
        self.assertEqual(ca_issuer["metadata"]["namespace"], ns)
        [ca] = [c for c in self.m.all("Certificate")
                if c["spec"]["secretName"] == ca_issuer["spec"]["ca"]["secretName"]]
        self.assertTrue(ca["spec"]["isCA"])
        # Renewing the CA keeps its key, so certificates signed before still verify.
        self.assertEqual(ca["spec"]["privateKey"]["rotationPolicy"], "Never")
        self.assertGreater(go_duration(ca["spec"]["duration"]), duration)
        root = self.m.one("Issuer", ca["spec"]["issuerRef"]["name"])
        self.assertEqual(root["spec"], {"selfSigned": {}})

    def test_rbac_is_exactly_what_the_webhook_uses(self):
        self.assertEqual(granted(self.m), RBAC_USED)
        self.assertEqual(self.m.flags()["--claims-namespace"], "$(POD_NAMESPACE)")

    def test_monitoring_objects(self):
        sm, svc = self.m.one("ServiceMonitor"), self.m.service
        self.assertTrue(selects(sm["spec"]["selector"], svc["metadata"]["labels"]))
        self.assertIn(svc["metadata"]["namespace"], sm["spec"]["namespaceSelector"]["matchNames"])
        [endpoint] = sm["spec"]["endpoints"]
        [port] = [p for p in svc["spec"]["ports"] if p["name"] == endpoint["port"]]
        self.assertEqual(port["targetPort"], "metrics")
        self.assertEqual(endpoint["path"], "/metrics")
        rules = [r for g in self.m.one("PrometheusRule")["spec"]["groups"] for r in g["rules"]]
        self.assertGreaterEqual(len(rules), 7)
        job = svc["metadata"]["name"]  # a ServiceMonitor's targets carry job=<Service name>
        hook_name = self.m.hook["name"]
        for r in rules:
            what = r.get("alert", r.get("record"))
            self.assertIn(r["labels"]["severity"], ("warning", "critical"), what)
            for a in ("summary", "description", "runbook"):
                self.assertGreater(len(r["annotations"].get(a, "")), 20, "%s: %s" % (what, a))
            names = promql_metric_names(r["expr"])
            self.assertTrue(names, what)
            unknown = names - webhook_metrics() - APISERVER_METRICS - {"up"}
            self.assertFalse(unknown, "%s reads metrics nobody exports: %s" % (what, unknown))
            for j in re.findall(r'\bjob="([^"]*)"', r["expr"]):
                self.assertEqual(j, job, what)
            if names & APISERVER_METRICS:
                self.assertIn('name="%s"' % hook_name, r["expr"], what)
        # The memory alert's figure is the Deployment's limit.
        [memory] = [r for r in rules if "process_resident_memory_bytes" in r["expr"]]
        limit = self.m.container["resources"]["limits"]["memory"]
        self.assertRegex(limit, r"^\d+Mi$")
        self.assertIn(str(int(limit[:-2]) * 1024 * 1024), memory["expr"])

    def test_alerts_with_promtool(self):
        tmp = tempfile.mkdtemp(prefix="manifests_test.")
        self.addCleanup(shutil.rmtree, tmp, ignore_errors=True)
        tool = promtool(tmp)
        groups = self.m.one("PrometheusRule")["spec"]["groups"]
        with open(os.path.join(tmp, "full.yaml"), "w") as f:
            yaml.safe_dump({"groups": groups}, f)
        out = subprocess.run([tool, "check", "rules", os.path.join(tmp, "full.yaml")],
                             capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        # The unit tests compare annotations too; those are checked above.
        bare = [{**g, "rules": [{k: v for k, v in r.items() if k != "annotations"}
                                for r in g["rules"]]} for g in groups]
        with open(os.path.join(tmp, "rules.yaml"), "w") as f:
            yaml.safe_dump({"groups": bare}, f)
        shutil.copy(RULES_TEST, tmp)
        out = subprocess.run([tool, "test", "rules", os.path.basename(RULES_TEST)], cwd=tmp,
                             capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        self.assertIn("SUCCESS", out.stdout)
        # Every alert has a case in which it fires.
        fired = {t["alertname"] for case in load_docs(RULES_TEST)[0]["tests"]
                 for t in case["alert_rule_test"] if t["exp_alerts"]}
        alerts = {r["alert"] for g in groups for r in g["rules"]}
        self.assertEqual(alerts - fired, set(), "alerts no promtool case shows firing")

    def test_make_cert_fills_a_copy_of_the_webhook_configuration(self):
        tmp = tempfile.mkdtemp(prefix="manifests_cert.")
        self.addCleanup(shutil.rmtree, tmp, ignore_errors=True)
        hook = os.path.join(tmp, "webhook.yaml")
        shutil.copy(os.path.join(DEPLOY, "webhook.yaml"), hook)
        for _ in range(2):  # a second run replaces the certificate, keeps the CA and caBundle
            subprocess.run(["bash", MAKE_CERT, "--fill", hook, tmp + "/certs"], check=True,
                           stderr=subprocess.DEVNULL)
        [filled] = load_docs(hook)
        entry = filled["webhooks"][0]
        with open(tmp + "/certs/ca.crt", "rb") as f:
            self.assertEqual(base64.b64decode(entry["clientConfig"].pop("caBundle")), f.read())
        self.assertNotIn("annotations", filled["metadata"])
        [original] = load_docs(os.path.join(DEPLOY, "webhook.yaml"))
        del original["metadata"]["annotations"]
        self.assertEqual(filled, original, "--fill changes only caBundle and the annotation")
        out = subprocess.run(["openssl", "verify", "-CAfile", tmp + "/certs/ca.crt",
                              tmp + "/certs/tls.crt"], capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        text = subprocess.run(["openssl", "x509", "-noout", "-ext", "subjectAltName", "-in",
                               tmp + "/certs/tls.crt"], capture_output=True, text=True).stdout
        ref = entry["clientConfig"]["service"]
        self.assertIn("DNS:%s.%s.svc" % (ref["name"], ref["namespace"]), text)


# What every authenticated client may GET by the default ClusterRoles system:discovery and
# system:public-info-viewer: discovery documents and the API server's health and version.
DEFAULT_READABLE = re.compile(r"^/(api|apis|version|healthz|livez|readyz)(/[^/]+){0,2}$")


def rbac_request(method, path):
    """The (verb, group, resource, namespace) RBAC checks for one API request; None for a GET
    that DEFAULT_READABLE allows anyone."""
    url, _, query = path.partition("?")
    if method == "GET" and DEFAULT_READABLE.match(url) and not url.startswith("/api/v1/"):
        return None
    parts = url.strip("/").split("/")
    if parts[0] == "api":
        group, rest = "", parts[2:]
    elif parts[0] == "apis":
        group, rest = parts[1], parts[3:]
    else:
        raise AssertionError("%s %s: a non-resource URL that needs its own RBAC" % (method, path))
    namespace = None
    if rest[:1] == ["namespaces"] and len(rest) >= 3:
        namespace, rest = rest[1], rest[2:]
    resource, name = rest[0], (rest[1] if len(rest) > 1 else None)
    watch = re.search(r"(^|&)watch=(1|true)(&|$)", query) is not None
    verb = {"GET": "watch" if watch else ("get" if name else "list"), "POST": "create",
            "PUT": "update", "PATCH": "patch",
            "DELETE": "delete" if name else "deletecollection"}[method]
    return verb, group, resource, namespace


class DeploymentArgsTest(unittest.TestCase):
    """The Deployment's container, run as the kubelet would run it, against the stand-in API
    server: its flags, its probes, its API requests against rbac.yaml, its exit on SIGTERM."""

    def test_args_are_flags_of_the_binary(self):
        m = Manifests()
        self.assertEqual(m.container["args"][0], "webhook")
        unknown = set(m.flags()) - help_flags()
        self.assertFalse(unknown, "the Deployment passes flags nodegate webhook does not have")
        names = {e["name"] for e in m.container["env"]}
        for value in m.flags().values():
            for var in re.findall(r"\$\(([A-Z_]+)\)", value):
                self.assertIn(var, names, "$(%s) is no env of the container" % var)

    def test_the_deployment_runs_the_webhook(self):
        m = Manifests()
        tmp = tempfile.mkdtemp(prefix="manifests_run.")
        self.addCleanup(shutil.rmtree, tmp, ignore_errors=True)
        ref = m.hook["clientConfig"]["service"]
        certs = os.path.join(tmp, "certs")
        subprocess.run(["bash", MAKE_CERT, certs, ref["name"], ref["namespace"]], check=True,
                       stderr=subprocess.DEVNULL,
                       env={"EXTRA_SANS": "IP:127.0.0.1", "PATH": "/usr/bin:/bin"})
        ca, crt, key = (os.path.join(certs, f) for f in ("ca.crt", "tls.crt", "tls.key"))
        api = standin.ApiServer(crt, key)
        self.addCleanup(api.stop)
        # RBAC as rbac.yaml grants it (by verb and resource; the namespaces are checked on
        # the requests' log below).
        rights = granted(m)
        for resource in RESOURCES.values():
            allowed = set().union(*[v for (g, r, _), v in rights.items()
                                    if (g, r) == (resource.group, resource.plural)])
            for verb in sorted(ALL_VERBS - allowed):
                api.forbid(verb, resource.plural)
        token = os.path.join(tmp, "token")
        with open(token, "w") as f:
            f.write(api.token + "\n")
        kubeconfig = os.path.join(tmp, "kubeconfig")
        standin.kubeconfig(kubeconfig, api.port, ca, token)
        api.put("nodes", {"apiVersion": "v1", "kind": "Node",
                          "metadata": {"name": "worker-1", "labels": {"kubernetes.io/os": "linux"}},
                          "status": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110"},
                                     "capacity": {"cpu": "2", "memory": "4Gi", "pods": "110"}}})

        # The container as the kubelet starts it: $(VAR) from the downward API, the Secret at
        # its mount path (here below tmp), listening on free loopback ports.
        mount = m.container["volumeMounts"][0]["mountPath"]
        os.makedirs(tmp + mount)
        shutil.copy(crt, tmp + mount + "/tls.crt")
        shutil.copy(key, tmp + mount + "/tls.key")
        env = {"POD_NAMESPACE": m.deployment["metadata"]["namespace"],
               "POD_NAME": "nodegate-webhook-5c9d7b8f4-x2x7q"}
        ports = {"https": free_port(), "metrics": free_port()}
        args = ["webhook"]
        for flag, value in m.flags().items():
            value = re.sub(r"\$\(([A-Z_]+)\)", lambda v: env[v.group(1)], value)
            if flag in ("--tls-cert", "--tls-key"):
                value = tmp + value
            elif flag == "--listen":
                value = "127.0.0.1:%d" % ports["https"]
            elif flag == "--metrics-listen":
                value = "127.0.0.1:%d" % ports["metrics"]
            args.append("%s=%s" % (flag, value))
        args.append("--kubeconfig=" + kubeconfig)
        log = open(os.path.join(tmp, "webhook.log"), "w+")
        self.addCleanup(log.close)
        proc = subprocess.Popen([NODEGATE] + args, stderr=log)

        def stop():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        self.addCleanup(stop)

        def get(probe):
            get = m.container[probe]["httpGet"]
            url = "%s://127.0.0.1:%d%s" % (get["scheme"].lower(), ports[get["port"]], get["path"])
            insecure = ssl.create_default_context()  # the kubelet does not verify probes
            insecure.check_hostname = False
            insecure.verify_mode = ssl.CERT_NONE
            try:
                with urllib.request.urlopen(url, timeout=5, context=insecure) as r:
                    return r.status
            except urllib.error.HTTPError as e:
                return e.code
            except OSError:
                return None

        def wait_for(cond, what):
            end = time.monotonic() + WAIT
            while time.monotonic() < end:
                if proc.poll() is not None:
                    log.seek(0)
                    raise AssertionError("nodegate webhook exited %d: %s" % (proc.returncode, log.read()))
                if cond():
                    return
                time.sleep(0.1)
            log.seek(0)
            raise AssertionError("not within %d s: %s\n%s" % (WAIT, what, log.read()))

        wait_for(lambda: get("startupProbe") == 200, "the startup probe answers 200")
        wait_for(lambda: get("readinessProbe") == 200, "the readiness probe answers 200 (synced)")
        self.assertEqual(get("livenessProbe"), 200)

        # One pod that fits (no dry run: with claims, a Lease is written) and one that does not.
        client = standin.WebhookClient(ports["https"], ca,
                                       server_name="%s.%s.svc" % (ref["name"], ref["namespace"]),
                                       webhook_name=m.hook["name"],
                                       timeout_seconds=m.hook["timeoutSeconds"])

        def pod(name, cpu):
            return {"apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": name, "namespace": "default"},
                    "spec": {"nodeName": "worker-1", "containers": [
                        {"name": "c", "image": "busybox",
                         "resources": {"requests": {"cpu": cpu}}}]}}
        response, _ = client.review(pod("fits", "500m"))
        self.assertTrue(response["allowed"], response)
        _, error = client.review(pod("too-big", "3"))
        self.assertIn("(OutOfcpu)", error)
        client.connection().close()

        # Every metric an alert reads of the webhook is exported, and the allowed pod's claim
        # was recorded in a Lease.
        def metrics():
            with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % ports["metrics"],
                                        timeout=5) as r:
                return r.read().decode()
        wait_for(lambda: re.search(r'^nodegate_webhook_claims_total\{result="recorded"\} [1-9]',
                                   metrics(), re.M), "the allowed pod's claim recorded")
        text = metrics()
        exported = set(re.findall(r"^# TYPE (\S+)", text, re.M))
        read = set()
        for g in m.one("PrometheusRule")["spec"]["groups"]:
            for r in g["rules"]:
                read |= promql_metric_names(r["expr"]) & webhook_metrics()
        self.assertEqual(read - exported, set(),
                         "metrics the alerts read that the webhook does not export")

        # Every request it made is allowed by rbac.yaml.
        with api.lock:
            requests = [(method, path) for method, path, _ in api.requests]
        seen = {rbac_request(m, p)[:3] for m, p in requests if rbac_request(m, p)}
        for needed in (("list", "", "nodes"), ("watch", "", "nodes"), ("list", "", "pods"),
                       ("watch", "", "pods")):
            self.assertIn(needed, seen, "the webhook's API requests: %s" % sorted(seen))
        for method, path in requests:
            if rbac_request(method, path) is None:
                continue
            verb, group, resource, namespace = rbac_request(method, path)
            allowed = rights.get((group, resource, None), set())
            if namespace is not None:
                allowed = allowed | rights.get((group, resource, namespace), set())
            self.assertIn(verb, allowed, "%s %s is not allowed by rbac.yaml" % (method, path))

        # SIGTERM: it exits 0 within the grace period.
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        grace = m.pod_spec["terminationGracePeriodSeconds"]
        try:
            code = proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            raise AssertionError("still running %d s after SIGTERM (the grace period)" % grace)
        self.assertEqual(code, 0)
        self.assertLess(time.monotonic() - t0, grace)


if __name__ == "__main__":
    unittest.main(verbosity=2)
