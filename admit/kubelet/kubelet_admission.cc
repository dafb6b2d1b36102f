#include "admit/kubelet/kubelet_admission.h"

#include "admit/api/resource_names.h"
#include "admit/predicates/node_affinity/node_affinity.h"
#include "admit/predicates/node_name/node_name.h"
#include "admit/predicates/node_ports/node_ports.h"
#include "admit/predicates/node_resources_fit/node_resources_fit.h"
#include "admit/predicates/taint_toleration/taint_toleration.h"

namespace nodegate::admit::kubelet {
namespace {

std::string PredicateMessage(std::string_view plugin, std::string_view reason) {
  return "Predicate " + std::string(plugin) + " failed: " + std::string(reason);
}

void AddPredicateFailure(KubeletVerdict& v, std::string_view plugin, std::string_view reason,
                         std::string detail) {
  v.failures.push_back(KubeletFailure{std::string(plugin), std::string(reason), std::move(detail),
                                      std::string(plugin), PredicateMessage(plugin, reason)});
}

void Finish(KubeletVerdict& v) {
  v.admitted = v.failures.empty();
  if (!v.admitted) {
    v.reason = v.failures.front().admit_reason;
    v.message = v.failures.front().admit_message;
  }
}

}  // namespace

Node PrepareNode(Node node, std::string_view host_os) {
  node.labels[std::string(kLabelOs)] = std::string(host_os);
  return node;
}

Pod RemoveMissingExtendedResources(const Pod& pod, const Node& node) {
  Pod copy = pod;
  for (auto* list : {&copy.containers, &copy.init_containers}) {
    for (Container& c : *list) {
      std::erase_if(c.requests, [&](const auto& entry) {
        return IsExtendedResourceName(entry.first) && node.allocatable.count(entry.first) == 0;
      });
    }
  }
  return copy;
}

std::string InsufficientResourceMessage(const InsufficientResource& r) {
  return "Node didn't have enough resource: " + r.resource +
         ", requested: " + std::to_string(r.requested) + ", used: " + std::to_string(r.used) +
         ", capacity: " + std::to_string(r.capacity);
}

namespace {

// OsAndGroupsFailure: steps 1-3, which no eviction can fix; the kubelet stops at the first.
std::optional<KubeletFailure> OsAndGroupsFailure(const Pod& candidate, const Node& n,
                                                 const KubeletOptions& options) {
  // 1. The pod's kubernetes.io/os LABEL (not its nodeSelector) against the kubelet's OS.
  if (auto it = candidate.labels.find(std::string(kLabelOs));
      it != candidate.labels.end() && it->second != options.host_os) {
    return KubeletFailure{"PodOS", std::string(kMessageOsSelectorMismatch),
                          "the pod label kubernetes.io/os=" + it->second +
                              " but the kubelet runs on " + options.host_os,
                          std::string(kReasonOsSelectorMismatch),
                          std::string(kMessageOsSelectorMismatch)};
  }
  // 2. spec.os.name.
  if (!candidate.os_name.empty() && candidate.os_name != options.host_os) {
    return KubeletFailure{
        "PodOS", std::string(kMessageOsNotSupported),
        "spec.os.name is " + candidate.os_name + " but the kubelet runs on " + options.host_os,
        std::string(kReasonOsNotSupported), std::string(kMessageOsNotSupported)};
  }
  // 3. supplementalGroupsPolicy: Strict needs node support (gate at least beta).
  if (options.gates.Enabled(kGateSupplementalGroupsPolicy) &&
      candidate.supplemental_groups_policy == "Strict" &&
      !n.supports_supplemental_groups_policy.value_or(false)) {
    return KubeletFailure{
        "SupplementalGroupsPolicy", std::string(kMessageSupplementalGroupsPolicyNotSupported),
        "spec.securityContext.supplementalGroupsPolicy is Strict and the node does not report "
        "status.features.supplementalGroupsPolicy: true",
        std::string(kReasonSupplementalGroupsPolicyNotSupported),
        std::string(kMessageSupplementalGroupsPolicyNotSupported)};
  }
  return std::nullopt;
}

void AddPortConflicts(KubeletVerdict& v, const PodInfo& info, const NodeInfo& node) {
  auto conflicts = node_ports::FindConflicts(info.ports, node.used_ports());
  if (conflicts.empty()) {
    return;
  }
  std::string detail;
  for (const auto& c : conflicts) {
    detail += (detail.empty() ? "" : "; ") + node_ports::ExplainConflict(c);
  }
  AddPredicateFailure(v, node_ports::kName, node_ports::kErrReason, detail);
}

// GeneralFilter: steps 5 and 6 on the pod without unknown extended resources.
void GeneralFilter(KubeletVerdict& v, const Pod& pod, const NodeInfo& node,
                   const KubeletOptions& options) {
  const Node& n = node.node();
  const PodInfo info = MakePodInfo(pod, options.gates, /*already_on_node=*/false);
  // 5. AdmissionCheck with all failures: resources, affinity, name, ports.
  for (const auto& insufficient : node_resources_fit::Fits(info, node)) {
    const std::string resource = insufficient.numbers.resource;
    v.failures.push_back(
        KubeletFailure{std::string(node_resources_fit::kName), insufficient.reason,
                       node_resources_fit::Explain(insufficient, node), "OutOf" + resource,
                       InsufficientResourceMessage(insufficient.numbers), insufficient.numbers});
  }
  std::string why;
  if (!node_affinity::PodMatchesNode(pod, n, &why)) {
    AddPredicateFailure(v, node_affinity::kName, node_affinity::kErrReasonPod, why);
  }
  if (!node_name::Fits(pod, n)) {
    AddPredicateFailure(v, node_name::kName, node_name::kErrReason,
                        "the pod is bound to node \"" + pod.node_name +
                            "\" (spec.nodeName) but this node is \"" + n.name + "\"");
  }
  AddPortConflicts(v, info, node);
  // 6. NoExecute taints, except for static pods.
  if (!pod.IsStaticPod()) {
    const Taint* taint = taint_toleration::FindMatchingUntoleratedTaint(
        n.taints, pod.tolerations, [](const Taint& t) { return t.effect == "NoExecute"; },
        options.gates.Enabled(kGateTaintTolerationComparisonOperators));
    if (taint != nullptr) {
      AddPredicateFailure(v, taint_toleration::kName, taint_toleration::kErrReasonKubelet,
                          "taint " + taint_toleration::TaintToString(*taint) +
                              " is not tolerated (the kubelet checks NoExecute taints only)");
    }
  }
}

Eviction ToEviction(const Preemptee& victim, const AdmissionRequirements& shortfall) {
  Eviction e{victim.pod->key, victim.qos(), {}};
  for (const AdmissionRequirement& r : shortfall) {
    if (const int64_t amount = victim.Request(r.resource); amount != 0) {
      e.frees.emplace_back(r.resource, amount);
    }
  }
  return e;
}

}  // namespace

KubeletVerdict Admit(const Pod& candidate, const NodeInfo& node, const KubeletOptions& options) {
  KubeletVerdict v;
  if (auto failure = OsAndGroupsFailure(candidate, node.node(), options)) {
    v.failures.push_back(std::move(*failure));
    Finish(v);
    return v;
  }
  // 4. Extended resources the node does not know are cluster-level: dropped.
  GeneralFilter(v, RemoveMissingExtendedResources(candidate, node.node()), node, options);
  Finish(v);
  if (!v.admitted) {
    HandleAdmissionFailure(candidate, node, v);
  }
  return v;
}

void HandleAdmissionFailure(const Pod& candidate, const NodeInfo& node, KubeletVerdict& v) {
  v.critical = CriticalReason(candidate);
  if (v.critical.empty()) {
    return;
  }
  // A critical pod is never rejected for resources: with any other failure, the first of those
  // is the rejection; with none, pods are evicted.
  AdmissionRequirements shortfall;
  for (const KubeletFailure& f : v.failures) {
    if (!f.insufficient.has_value()) {
      v.reason = f.admit_reason;
      v.message = f.admit_message;
      return;
    }
    shortfall.push_back(RequirementFor(*f.insufficient));
  }
  const std::vector<Preemptee> pods = MakePreemptees(node.pods());
  auto victims = PodsToPreempt(candidate, pods, shortfall);
  if (!victims.ok()) {
    v.reason = std::string(kReasonUnexpectedAdmissionError);
    v.message =
        "Unexpected error while attempting to recover from admission failure: preemption: error "
        "finding a set of pods to preempt: " +
        victims.error().msg;
    return;
  }
  for (const Preemptee& victim : *victims) {
    v.evictions.push_back(ToEviction(victim, shortfall));
  }
  v.shortfall = std::move(shortfall);
  v.failures.clear();
  v.admitted = true;
  v.reason.clear();
  v.message.clear();
}

}  // namespace nodegate::admit::kubelet
