#include "explain/daemonset/daemonset.h"

#include <map>

#include "admit/api/decode.h"
#include "admit/predicates/node_affinity/node_affinity.h"
#include "admit/predicates/taint_toleration/taint_toleration.h"
#include "explain/scheduler/candidate.h"
#include "lib/base/result.h"
#include "lib/json/field.h"

namespace nodegate::explain {
namespace {

using nlohmann::json;

using json_field::StringAt;

// AddToleration: AddOrUpdateTolerationInPodSpec: appended unless an equal one is there.
void AddToleration(json& spec, const std::string& key, const std::string& effect) {
  json& list = spec["tolerations"];
  if (!list.is_array()) {
    list = json::array();
  }
  for (const json& t : list) {
    if (t.is_object() && StringAt(t, {"key"}) == key && StringAt(t, {"operator"}) == "Exists" &&
        StringAt(t, {"value"}).empty() && StringAt(t, {"effect"}) == effect) {
      return;
    }
  }
  list.push_back({{"key", key}, {"operator", "Exists"}, {"effect", effect}});
}

std::string TolerationsAdded(bool host_network) {
  return std::string(
             "the controller adds tolerations for not-ready and unreachable (NoExecute), "
             "disk-, memory-, pid-pressure and unschedulable (NoSchedule)") +
         (host_network ? " and network-unavailable (NoSchedule)" : "");
}

}  // namespace

json DaemonPodFor(const json& daemonset, const std::string& node) {
  json pod = {{"apiVersion", "v1"}, {"kind", "Pod"}};
  const std::string name = StringAt(daemonset, {"metadata", "name"});
  json meta = json::object();
  meta["name"] = node.empty() ? name : name + "-" + node;
  meta["namespace"] = StringAt(daemonset, {"metadata", "namespace"});
  const json tmpl = daemonset.contains("spec") && daemonset["spec"].is_object() &&
                            daemonset["spec"].contains("template")
                        ? daemonset["spec"]["template"]
                        : json::object();
  if (tmpl.is_object() && tmpl.contains("metadata") && tmpl["metadata"].is_object()) {
    for (const char* key : {"labels", "annotations"}) {
      if (tmpl["metadata"].contains(key)) {
        meta[key] = tmpl["metadata"][key];
      }
    }
  }
  meta["ownerReferences"] = json::array({{{"apiVersion", "apps/v1"},
                                          {"kind", "DaemonSet"},
                                          {"name", name},
                                          {"uid", StringAt(daemonset, {"metadata", "uid"})},
                                          {"controller", true}}});
  pod["metadata"] = std::move(meta);
  json spec = tmpl.is_object() && tmpl.contains("spec") ? tmpl["spec"] : json::object();
  if (!spec.is_object()) {
    spec = json::object();
  }
  const bool host_network = spec.contains("hostNetwork") && spec["hostNetwork"].is_boolean() &&
                            spec["hostNetwork"].get<bool>();
  AddToleration(spec, "node.kubernetes.io/not-ready", "NoExecute");
  AddToleration(spec, "node.kubernetes.io/unreachable", "NoExecute");
  AddToleration(spec, "node.kubernetes.io/disk-pressure", "NoSchedule");
  AddToleration(spec, "node.kubernetes.io/memory-pressure", "NoSchedule");
  AddToleration(spec, "node.kubernetes.io/pid-pressure", "NoSchedule");
  AddToleration(spec, "node.kubernetes.io/unschedulable", "NoSchedule");
  if (host_network) {
    AddToleration(spec, "node.kubernetes.io/network-unavailable", "NoSchedule");
  }
  if (!node.empty()) {
    // ReplaceDaemonSetPodNodeNameNodeAffinity: one term naming the node, instead of the
    // template's terms (the controller has already checked those).
    json term = {{"matchFields", json::array({{{"key", "metadata.name"},
                                               {"operator", "In"},
                                               {"values", json::array({node})}}})}};
    json& affinity = spec["affinity"];
    if (!affinity.is_object()) {
      affinity = json::object();
    }
    json& node_affinity = affinity["nodeAffinity"];
    if (!node_affinity.is_object()) {
      node_affinity = json::object();
    }
    node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {
        {"nodeSelectorTerms", json::array({term})}};
  }
  pod["spec"] = std::move(spec);
  pod["status"] = {{"phase", "Pending"}};
  return pod;
}

std::string PinnedNode(const json& pod) {
  auto decoded = admit::DecodePod(pod, "pod");
  if (!decoded.ok()) {
    return "";
  }
  std::optional<std::vector<std::string>> names = NodeNamesOfAffinity(*decoded);
  return names && names->size() == 1 ? names->front() : "";
}

namespace {

// DaemonPods: where a DaemonSet's pods are: bound ones by node, waiting ones by the node they
// name.
struct DaemonPods {
  std::map<std::string, std::vector<std::string>> bound;
  std::map<std::string, const json*> waiting;
};

DaemonPods FindDaemonPods(const Cluster& cluster, const std::string& owner) {
  DaemonPods pods;
  for (const PodRef& p : cluster.owned()) {
    if (!p.node.empty() && p.phase != "Succeeded" && p.phase != "Failed") {
      pods.bound[p.node].push_back(p.key + " (" + (p.phase.empty() ? "no phase" : p.phase) + ")");
    }
  }
  for (const json& object : cluster.unbound()) {
    auto c = DecodeCandidate(object, "pod");
    if (c.ok() && admit::OwnerName(c->pod) == owner) {
      const std::string node = PinnedNode(object);
      if (!node.empty()) {
        pods.waiting.emplace(node, &object);
      }
    }
  }
  return pods;
}

// ShouldRun: the controller's NodeShouldRunDaemonPod for the template on `node`; when it
// should not, n.why_not and n.should_continue_running say why and whether a running pod stays.
bool ShouldRun(const admit::Pod& tmpl, const admit::Node& node, bool comparison, DaemonSetNode& n) {
  std::string why;
  if (!tmpl.node_name.empty() && tmpl.node_name != node.name) {
    n.why_not = "the template names node " + tmpl.node_name;
    n.should_continue_running = false;
    return false;
  }
  if (!admit::node_affinity::PodMatchesNode(tmpl, node, &why)) {
    n.why_not = "node selector / affinity: " + why;
    n.should_continue_running = false;
    return false;
  }
  const admit::Taint* t = admit::taint_toleration::FindMatchingUntoleratedTaint(
      node.taints, tmpl.tolerations, admit::taint_toleration::DoNotScheduleTaintsFilter,
      comparison);
  if (t == nullptr) {
    return true;
  }
  n.why_not = "taint " + admit::taint_toleration::TaintToString(*t) + " is not tolerated (" +
              TolerationsAdded(tmpl.host_network) + ")";
  n.should_continue_running =
      admit::taint_toleration::FindMatchingUntoleratedTaint(
          node.taints, tmpl.tolerations,
          [](const admit::Taint& taint) { return taint.effect == "NoExecute"; },
          comparison) == nullptr;
  return false;
}

// PlaceMissing: for a node where the daemon pod should run and does not, the scheduler's
// verdict for its pod there (the Pending pod when there is one, else the pod the controller
// would make), into n.
Status PlaceMissing(const json& daemonset, const std::string& daemonset_key, const json* pending,
                    const Scheduler& scheduler, DaemonSetNode& n) {
  Result<CandidatePod> pod = Error(kErrDecode, "");
  if (pending != nullptr) {
    pod = DecodeCandidate(*pending, "pod");
    if (pod.ok()) {
      n.pending_pod = pod->pod.Key();
    }
  }
  if (!pod.ok()) {
    pod = DecodeCandidate(DaemonPodFor(daemonset, n.node), "daemonset " + daemonset_key);
    if (!pod.ok()) {
      return pod.error();
    }
  }
  PodExplanation placed = scheduler.Explain(*pod);
  for (NodeVerdict& v : placed.nodes) {
    if (v.node == n.node) {
      n.verdict = std::move(v);
    }
  }
  if (n.verdict && n.verdict->state == NodeVerdict::State::kFits) {
    n.state = DaemonSetNode::State::kWouldFit;
    return OkStatus();
  }
  n.state = DaemonSetNode::State::kBlocked;
  if (!n.pending_pod.empty()) {
    n.summary = placed.summary;
  }
  for (const PreemptionNode& p : placed.preemption.nodes) {
    if (p.node == n.node && p.candidate) {
      n.victims = p.victims;
    }
  }
  return OkStatus();
}

}  // namespace

Result<DaemonSetExplanation> ExplainDaemonSet(const json& daemonset, const Cluster& cluster,
                                              const Scheduler& scheduler) {
  if (!daemonset.is_object() || StringAt(daemonset, {"kind"}) != "DaemonSet") {
    return Error(kErrDecode, "not a DaemonSet");
  }
  const std::string ns = StringAt(daemonset, {"metadata", "namespace"});
  const std::string name = StringAt(daemonset, {"metadata", "name"});
  // The controller's own check: the template with its tolerations, its own affinity.
  NG_ASSIGN_OR_RETURN(auto would_be,
                      DecodeCandidate(DaemonPodFor(daemonset, ""), "daemonset " + ns + "/" + name));
  const admit::Pod& tmpl = would_be.pod;
  const bool comparison =
      scheduler.options().gates.Enabled(admit::kGateTaintTolerationComparisonOperators);

  DaemonSetExplanation e;
  e.daemonset = ns + "/" + name;
  e.host_network = tmpl.host_network;
  for (const admit::WantedPort& p : admit::GetHostPorts(tmpl)) {
    e.host_ports.push_back(p.port.ToString());
  }
  e.not_evaluated = would_be.not_evaluated;
  e.notes = would_be.notes;
  const DaemonPods pods = FindDaemonPods(cluster, "DaemonSet " + ns + "/" + name);

  for (const NodeEntry& entry : cluster.nodes()) {
    const admit::Node& node = *entry.node;
    DaemonSetNode n;
    n.node = node.name;
    if (auto it = pods.bound.find(node.name); it != pods.bound.end()) {
      n.pods = it->second;
    }
    if (!ShouldRun(tmpl, node, comparison, n)) {
      n.state =
          n.pods.empty() ? DaemonSetNode::State::kNotWanted : DaemonSetNode::State::kRunsUnwanted;
      e.nodes.push_back(std::move(n));
      continue;
    }
    ++e.desired;
    if (!n.pods.empty()) {
      n.state = DaemonSetNode::State::kRuns;
      ++e.running;
      e.nodes.push_back(std::move(n));
      continue;
    }
    // It should run here and does not: the scheduler's verdict for its pod.
    auto w = pods.waiting.find(node.name);
    const json* pending = w != pods.waiting.end() ? w->second : nullptr;
    NG_RETURN_IF_ERROR(PlaceMissing(daemonset, e.daemonset, pending, scheduler, n));
    if (n.state == DaemonSetNode::State::kWouldFit) {
      ++e.waiting;
    } else {
      ++e.blocked;
    }
    e.nodes.push_back(std::move(n));
  }
  return e;
}

}  // namespace nodegate::explain
