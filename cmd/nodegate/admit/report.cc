#include "cmd/nodegate/admit/report.h"

#include <algorithm>

#include "admit/framework/resource.h"

namespace nodegate::admit {

bool Report::Admitted() const {
  for (const PodVerdict& v : pods) {
    if (!v.admitted) {
      return false;
    }
  }
  return true;
}

namespace {

const std::vector<ports::PortWarning>& WarningsOf(const Report& report, size_t i) {
  static const std::vector<ports::PortWarning> kNone;
  return i < report.warnings.size() ? report.warnings[i] : kNone;
}

nlohmann::json WarningsToJson(const std::vector<ports::PortWarning>& warnings) {
  nlohmann::json out = nlohmann::json::array();
  for (const ports::PortWarning& w : warnings) {
    out.push_back({{"kind", w.kind},
                   {"hostIP", w.key.host_ip},
                   {"protocol", w.key.protocol},
                   {"port", w.key.port},
                   {"detail", w.detail}});
  }
  return out;
}

nlohmann::json EvictionsToJson(const std::vector<kubelet::Eviction>& evictions) {
  nlohmann::json out = nlohmann::json::array();
  for (const kubelet::Eviction& e : evictions) {
    nlohmann::json frees = nlohmann::json::object();
    for (const auto& [resource, amount] : e.frees) {
      frees[resource] = FormatResourceAmount(resource, amount);
    }
    out.push_back({{"pod", e.pod},
                   {"qos", std::string(kubelet::QosClassName(e.qos))},
                   {"frees", std::move(frees)}});
  }
  return out;
}

nlohmann::json PodToJson(const Report& report, size_t i) {
  const PodVerdict& v = report.pods[i];
  nlohmann::json p;
  p["pod"] = v.pod;
  p["admitted"] = v.admitted;
  nlohmann::json failures = nlohmann::json::array();
  for (const FailureReport& f : v.failures) {
    failures.push_back({{"plugin", f.plugin}, {"reason", f.reason}, {"detail", f.detail}});
  }
  p["failures"] = std::move(failures);
  if (!v.code.empty()) {
    p["code"] = v.code;  // scheduler status: Unschedulable or UnschedulableAndUnresolvable
  }
  if (!v.admitted && report.profile == Profile::kKubelet) {
    p["admitReason"] = v.admit_reason;
    p["admitMessage"] = v.admit_message;
  }
  if (!v.evictions.empty()) {
    p["evicts"] = EvictionsToJson(v.evictions);
  }
  if (!v.source.empty()) {
    p["source"] = v.source;
  }
  if (v.replaced_previous) {
    p["replacesPrevious"] = true;
  }
  if (report.live) {
    p["warnings"] = WarningsToJson(WarningsOf(report, i));
  }
  return p;
}

// AmountsToText: "cpu 1500m, memory 2Gi".
std::string AmountsToText(const std::vector<std::pair<std::string, int64_t>>& amounts) {
  std::string s;
  for (const auto& [resource, amount] : amounts) {
    s += (s.empty() ? "" : ", ") + resource + " " + FormatResourceAmount(resource, amount);
  }
  return s;
}

// VerdictWord: "ADMITTED", "REJECTED", or "ADMITTED (evicts ns/a, ns/b: frees cpu 1500m)".
std::string VerdictWord(const PodVerdict& v) {
  if (!v.admitted) {
    return "REJECTED";
  }
  if (v.evictions.empty()) {
    return "ADMITTED";
  }
  return "ADMITTED (evicts " + EvictedPods(v) + ": frees " + AmountsToText(FreedInTotal(v)) + ")";
}

std::string EvictionsToText(const PodVerdict& v) {
  std::vector<std::pair<std::string, int64_t>> short_of;
  for (const kubelet::AdmissionRequirement& r : v.shortfall) {
    short_of.emplace_back(r.resource, r.quantity);
  }
  std::string s = "  kubelet: a critical pod (" + v.critical + ") short of " +
                  AmountsToText(short_of) + " is admitted by evicting, in this order:\n";
  for (const kubelet::Eviction& e : v.evictions) {
    s += "    " + e.pod + " (" + std::string(kubelet::QosClassName(e.qos)) + "): frees " +
         (e.frees.empty() ? std::string("nothing it was short of") : AmountsToText(e.frees)) + "\n";
  }
  return s;
}

std::string PodToText(const Report& report, size_t i) {
  const PodVerdict& v = report.pods[i];
  std::string s = "\n" + VerdictWord(v) + " " + v.pod;
  if (!v.source.empty()) {
    s += " (" + v.source + ")";
  }
  if (v.replaced_previous) {
    s += " [replaces the previous version]";
  }
  s += "\n";
  if (!v.admitted && report.profile == Profile::kKubelet) {
    s += "  kubelet: " + v.admit_reason + ": " + v.admit_message + "\n";
  }
  if (!v.evictions.empty()) {
    s += EvictionsToText(v);
  }
  for (const FailureReport& f : v.failures) {
    s += "  " + f.plugin + ": " + f.reason + "\n";
    if (!f.detail.empty()) {
      s += "    " + f.detail + "\n";
    }
  }
  for (const ports::PortWarning& w : WarningsOf(report, i)) {
    s += "  warning (" + w.kind + "): hostPort " + w.key.ToString() + ": " + w.detail + "\n";
  }
  return s;
}

}  // namespace

std::string EvictedPods(const PodVerdict& verdict) {
  std::string s;
  for (const kubelet::Eviction& e : verdict.evictions) {
    s += (s.empty() ? "" : ", ") + e.pod;
  }
  return s;
}

std::vector<std::pair<std::string, int64_t>> FreedInTotal(const PodVerdict& verdict) {
  std::vector<std::pair<std::string, int64_t>> total;
  for (const kubelet::AdmissionRequirement& r : verdict.shortfall) {
    int64_t sum = 0;
    for (const kubelet::Eviction& e : verdict.evictions) {
      for (const auto& [resource, amount] : e.frees) {
        sum += resource == r.resource ? amount : 0;
      }
    }
    total.emplace_back(r.resource, sum);
  }
  return total;
}

nlohmann::json ReportToJson(const Report& report) {
  nlohmann::json out;
  out["node"] = report.node;
  out["nodeSource"] = report.node_source.empty() ? "host" : report.node_source;
  out["profile"] = std::string(ProfileName(report.profile));
  out["admitted"] = report.Admitted();
  out["existingPods"] = report.pods_on_node;
  nlohmann::json pods = nlohmann::json::array();
  for (size_t i = 0; i < report.pods.size(); ++i) {
    pods.push_back(PodToJson(report, i));
  }
  out["pods"] = std::move(pods);
  return out;
}

std::string ReportToText(const Report& report) {
  std::string s = "node " + report.node;
  if (report.node_source.empty()) {
    s += " (this machine, no --node given: " + report.host_summary + ")";
  } else {
    s += " (from " + report.node_source + ")";
  }
  s += "\nprofile " + std::string(ProfileName(report.profile)) + ", " +
       std::to_string(report.pods_on_node) + " pod(s) on the node";
  if (report.existing.terminal + report.existing.other_node > 0) {
    s += " (skipped " + std::to_string(report.existing.terminal) + " terminated, " +
         std::to_string(report.existing.other_node) + " bound to other nodes)";
  }
  s += "\n";
  for (size_t i = 0; i < report.pods.size(); ++i) {
    s += PodToText(report, i);
  }
  const size_t rejected = static_cast<size_t>(std::count_if(
      report.pods.begin(), report.pods.end(), [](const PodVerdict& v) { return !v.admitted; }));
  s += "\n" + std::to_string(report.pods.size() - rejected) + " admitted, " +
       std::to_string(rejected) + " rejected\n";
  return s;
}

}  // namespace nodegate::admit
