#include "admit/cli/report.h"

#include <algorithm>

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

}  // namespace

nlohmann::json ReportToJson(const Report& report) {
  nlohmann::json out;
  out["node"] = report.node;
  out["nodeSource"] = report.node_source.empty() ? "host" : report.node_source;
  out["profile"] = std::string(ProfileName(report.profile));
  out["admitted"] = report.Admitted();
  out["existingPods"] = report.pods_on_node;
  nlohmann::json pods = nlohmann::json::array();
  for (size_t i = 0; i < report.pods.size(); ++i) {
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
    if (!v.source.empty()) {
      p["source"] = v.source;
    }
    if (v.replaced_previous) {
      p["replacesPrevious"] = true;
    }
    if (report.live) {
      p["warnings"] = WarningsToJson(WarningsOf(report, i));
    }
    pods.push_back(std::move(p));
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
    const PodVerdict& v = report.pods[i];
    s += "\n" + std::string(v.admitted ? "ADMITTED " : "REJECTED ") + v.pod;
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
    for (const FailureReport& f : v.failures) {
      s += "  " + f.plugin + ": " + f.reason + "\n";
      if (!f.detail.empty()) {
        s += "    " + f.detail + "\n";
      }
    }
    for (const ports::PortWarning& w : WarningsOf(report, i)) {
      s += "  warning (" + w.kind + "): hostPort " + w.key.ToString() + ": " + w.detail + "\n";
    }
  }
  const size_t rejected = static_cast<size_t>(std::count_if(
      report.pods.begin(), report.pods.end(), [](const PodVerdict& v) { return !v.admitted; }));
  s += "\n" + std::to_string(report.pods.size() - rejected) + " admitted, " +
       std::to_string(rejected) + " rejected\n";
  return s;
}

}  // namespace nodegate::admit
