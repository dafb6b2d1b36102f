#include "explain/scheduler/candidate.h"

#include <set>

#include "admit/api/decode.h"
#include "admit/api/priority.h"
#include "lib/base/result.h"
#include "lib/json/field.h"

namespace nodegate::explain {
namespace {

using nlohmann::json;

using json_field::MemberAt;
using json_field::StringAt;

bool NonEmptyList(const json* at) { return at != nullptr && at->is_array() && !at->empty(); }

// NotEvaluated: the default profile's Filters (pkg/scheduler/apis/config/v1/default_plugins.go)
// beyond nodegate's that this pod's own spec makes do something.
std::vector<std::string> NotEvaluated(const json& spec) {
  std::vector<std::string> out;
  if (NonEmptyList(MemberAt(
          spec, {"affinity", "podAffinity", "requiredDuringSchedulingIgnoredDuringExecution"}))) {
    out.push_back(
        "InterPodAffinity: "
        "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution");
  }
  if (NonEmptyList(MemberAt(spec, {"affinity", "podAntiAffinity",
                                   "requiredDuringSchedulingIgnoredDuringExecution"}))) {
    out.push_back(
        "InterPodAffinity: "
        "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution");
  }
  if (const json* spread = MemberAt(spec, {"topologySpreadConstraints"}); NonEmptyList(spread)) {
    for (const json& c : *spread) {
      // ScheduleAnyway only scores; DoNotSchedule (and anything else) filters.
      if (!c.is_object() || StringAt(c, {"whenUnsatisfiable"}) != "ScheduleAnyway") {
        out.push_back("PodTopologySpread: spec.topologySpreadConstraints (whenUnsatisfiable: " +
                      StringAt(c, {"whenUnsatisfiable"}) + ")");
        break;
      }
    }
  }
  if (const json* volumes = MemberAt(spec, {"volumes"}); NonEmptyList(volumes)) {
    std::set<std::string> kinds;
    std::string first;
    for (const json& v : *volumes) {
      if (!v.is_object()) {
        continue;
      }
      // Volumes that bind, attach or have node limits; secrets, config maps, emptyDir, hostPath,
      // projected and downwardAPI volumes are never filtered on.
      for (const char* kind : {"persistentVolumeClaim", "ephemeral", "csi", "gcePersistentDisk",
                               "awsElasticBlockStore", "azureDisk", "cinder", "rbd", "iscsi",
                               "portworxVolume", "vsphereVolume"}) {
        if (v.contains(kind)) {
          kinds.insert(kind);
          if (first.empty()) {
            first = StringAt(v, {"name"});
          }
        }
      }
    }
    if (!kinds.empty()) {
      std::string list;
      for (const std::string& k : kinds) {
        list += (list.empty() ? "" : ", ") + k;
      }
      out.push_back(
          "VolumeBinding, VolumeZone, VolumeRestrictions, NodeVolumeLimits: spec.volumes (" + list +
          ", e.g. volume \"" + first + "\")");
    }
  }
  if (NonEmptyList(MemberAt(spec, {"resourceClaims"}))) {
    out.push_back("DynamicResources: spec.resourceClaims");
  }
  return out;
}

bool ExpressionMatches(const json& e, const std::map<std::string, std::string>& labels) {
  const std::string key = StringAt(e, {"key"});
  const std::string op = StringAt(e, {"operator"});
  std::set<std::string> values;
  if (const json* v = MemberAt(e, {"values"}); v != nullptr && v->is_array()) {
    for (const json& s : *v) {
      if (s.is_string()) {
        values.insert(s.get<std::string>());
      }
    }
  }
  auto it = labels.find(key);
  if (op == "In") {
    return it != labels.end() && values.count(it->second) > 0;
  }
  if (op == "NotIn") {
    return it == labels.end() || values.count(it->second) == 0;
  }
  if (op == "Exists") {
    return it != labels.end();
  }
  if (op == "DoesNotExist") {
    return it == labels.end();
  }
  return false;  // an invalid selector matches nothing
}

std::string NamespaceOf(const std::string& key) { return key.substr(0, key.find('/')); }

}  // namespace

int32_t PriorityOf(const admit::Pod& pod) { return pod.priority.value_or(0); }

bool LabelSelectorMatches(const json& selector, const std::map<std::string, std::string>& labels) {
  if (!selector.is_object()) {
    return false;
  }
  if (const json* match = MemberAt(selector, {"matchLabels"});
      match != nullptr && match->is_object()) {
    for (const auto& [k, v] : match->items()) {
      auto it = labels.find(k);
      if (!v.is_string() || it == labels.end() || it->second != v.get<std::string>()) {
        return false;
      }
    }
  }
  if (const json* exprs = MemberAt(selector, {"matchExpressions"});
      exprs != nullptr && exprs->is_array()) {
    for (const json& e : *exprs) {
      if (!e.is_object() || !ExpressionMatches(e, labels)) {
        return false;
      }
    }
  }
  return true;
}

Result<CandidatePod> DecodeCandidate(const json& object, std::string_view where) {
  if (!object.is_object()) {
    return Error(kErrDecode, std::string(where) + ": not a JSON object");
  }
  const std::string kind = StringAt(object, {"kind"});
  if (!kind.empty() && kind != "Pod") {
    return Error(kErrDecode, std::string(where) + ": a " + kind + ", not a Pod");
  }
  NG_ASSIGN_OR_RETURN(auto pod, admit::DecodePod(object, where));
  CandidatePod c;
  c.pod = std::move(pod);
  static const json kEmpty = json::object();
  const json* spec = MemberAt(object, {"spec"});
  const json& s = spec != nullptr && spec->is_object() ? *spec : kEmpty;
  c.scheduler_name = StringAt(s, {"schedulerName"});
  c.preemption_policy = StringAt(s, {"preemptionPolicy"});
  c.nominated_node = StringAt(object, {"status", "nominatedNodeName"});
  if (const json* gates = MemberAt(s, {"schedulingGates"}); gates != nullptr && gates->is_array()) {
    for (const json& g : *gates) {
      c.scheduling_gates.push_back(g.is_object() ? StringAt(g, {"name"}) : "");
    }
  }
  c.not_evaluated = NotEvaluated(s);
  if (!c.pod.priority.has_value()) {
    // A pod not created yet: priority admission has not run. The built-in classes are known;
    // the cluster's own classes are not read.
    admit::Pod resolved = c.pod;
    if (admit::ResolvePriority(resolved, admit::PriorityClasses::BuiltIn()).ok() &&
        resolved.priority.has_value()) {
      c.pod.priority = resolved.priority;
    } else if (!c.pod.priority_class_name.empty()) {
      c.notes.push_back("priorityClassName " + c.pod.priority_class_name +
                        " is not read from the cluster: priority taken as 0");
    }
  }
  return c;
}

std::vector<std::string> AntiAffinityThreats(const Cluster& cluster, const admit::Pod& pod,
                                             size_t limit) {
  std::vector<std::string> out;
  size_t more = 0;
  for (const NodeEntry& entry : cluster.nodes()) {
    for (const AntiAffinityHolder& holder : entry.anti_affinity) {
      if (holder.pod == pod.Key()) {
        continue;
      }
      const json terms = json::parse(holder.terms, nullptr, /*allow_exceptions=*/false);
      if (!terms.is_array()) {
        continue;
      }
      for (const json& term : terms) {
        if (!term.is_object()) {
          continue;
        }
        const json* selector = MemberAt(term, {"labelSelector"});
        if (selector == nullptr || !LabelSelectorMatches(*selector, pod.labels)) {
          continue;
        }
        // The namespaces the term covers: its list, else (no namespaceSelector) the holder's.
        bool covers = false;
        const json* names = MemberAt(term, {"namespaces"});
        const json* ns_selector = MemberAt(term, {"namespaceSelector"});
        if (names != nullptr && names->is_array()) {
          for (const json& n : *names) {
            covers = covers || (n.is_string() && n.get<std::string>() == pod.namespace_name);
          }
        }
        if (ns_selector != nullptr && ns_selector->is_object()) {
          covers = true;  // namespace labels are not read: it may cover the pod's namespace
        } else if (names == nullptr || !names->is_array() || names->empty()) {
          covers = covers || NamespaceOf(holder.pod) == pod.namespace_name;
        }
        if (!covers) {
          continue;
        }
        if (out.size() < limit) {
          out.push_back("InterPodAffinity: pod " + holder.pod + " on node " + entry.node->name +
                        " has a required anti-affinity term (topologyKey " +
                        StringAt(term, {"topologyKey"}) + ") that matches this pod");
        } else {
          ++more;
        }
        break;
      }
    }
  }
  if (more > 0) {
    out.push_back("InterPodAffinity: " + std::to_string(more) +
                  " more pod(s) with required anti-affinity terms that match this pod");
  }
  return out;
}

}  // namespace nodegate::explain
