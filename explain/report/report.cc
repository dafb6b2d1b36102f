#include "explain/report/report.h"

#include <cctype>

#include "admit/framework/resource.h"
#include "admit/predicates/taint_toleration/taint_toleration.h"

namespace nodegate::explain {
namespace {

using nlohmann::json;

constexpr size_t kListedAtMost = 10;

std::string Plural(size_t n, const std::string& one) {
  return std::to_string(n) + " " + one + (n == 1 ? "" : "s");
}

std::string VictimText(const Victim& v) {
  return v.pod + " (priority " + std::to_string(v.priority) +
         (v.owner.empty() ? "" : ", " + v.owner) + ")";
}

std::string VictimsText(const std::vector<Victim>& victims) {
  std::string out;
  for (const Victim& v : victims) {
    out += (out.empty() ? "" : ", ") + VictimText(v);
  }
  return out;
}

std::string Join(const std::vector<std::string>& parts, const std::string& separator) {
  std::string out;
  for (const std::string& p : parts) {
    out += (out.empty() ? "" : separator) + p;
  }
  return out;
}

// NodeLines: "  NAME  Plugin: reason" then the explanation, indented; without the name
// under a heading that has it.
void NodeLines(std::string& out, const NodeVerdict& v, const std::string& indent,
               bool with_name = true) {
  const std::string name = with_name ? v.node + "  " : "";
  if (v.state == NodeVerdict::State::kFits) {
    out += indent + name + "fits\n";
    return;
  }
  for (size_t i = 0; i < v.findings.size(); ++i) {
    const Finding& f = v.findings[i];
    out += indent + (i == 0 ? name : std::string(name.size(), ' ')) + v.plugin + ": " + f.reason +
           "\n";
    if (!f.explanation.empty()) {
      out += indent + std::string(name.size() + 2, ' ') + f.explanation + "\n";
    }
  }
}

void PreemptionLines(std::string& out, const Preemption& p) {
  if (!p.attempted) {
    if (!p.not_attempted.empty()) {
      out += "preemption: not tried (" + p.not_attempted + ")\n";
    }
    return;
  }
  if (p.candidates > 0) {
    out += "preemption: evicting pods of lower priority would make room on " +
           Plural(p.candidates, "node") + "; the scheduler would nominate " + p.nominated;
    if (!p.tied.empty()) {
      out += " (tied with " + Join(p.tied, ", ") + ": its evaluation order decides)";
    }
    out += "\n";
    size_t listed = 0;
    for (const PreemptionNode& n : p.nodes) {
      if (n.candidate && listed++ < kListedAtMost) {
        out += "  " + n.node + "  evict " + VictimsText(n.victims) + "\n";
      }
    }
    if (listed > kListedAtMost) {
      out += "  ... and " + Plural(listed - kListedAtMost, "more node") + "\n";
    }
  } else if (p.nodes.empty()) {
    out += "preemption: cannot help: no node failed for a reason that evicting pods resolves\n";
  } else {
    out += "preemption: cannot make room on any node\n";
  }
  size_t listed = 0;
  for (const PreemptionNode& n : p.nodes) {
    if (!n.candidate && listed++ < kListedAtMost) {
      out += "  " + n.node + "  " + Join(n.reasons, ", ") + "\n";
    }
  }
  if (listed > kListedAtMost) {
    out += "  ... and " + Plural(listed - kListedAtMost, "more node") + "\n";
  }
  for (const std::string& m : p.not_modelled) {
    out += "  (not modelled: " + m + ")\n";
  }
}

json FindingJson(const Finding& f) {
  json j = {{"reason", f.reason}, {"explanation", f.explanation}};
  if (!f.ports.empty()) {
    json ports = json::array();
    for (const PortHolding& h : f.ports) {
      ports.push_back({{"port", h.port},
                       {"protocol", h.protocol},
                       {"hostPort", h.number},
                       {"container", h.container},
                       {"holder", h.holder},
                       {"holderContainer", h.holder_container},
                       {"holderPort", h.holder_port},
                       {"holderOwner", h.owner}});
    }
    j["ports"] = std::move(ports);
  }
  if (f.shortage) {
    const Shortage& s = *f.shortage;
    json top = json::array();
    for (const Consumer& c : s.top) {
      top.push_back({{"pod", c.pod},
                     {"owner", c.owner},
                     {"amount", admit::FormatResourceAmount(s.resource, c.amount)}});
    }
    j["resource"] = {{"name", s.resource},
                     {"requested", admit::FormatResourceAmount(s.resource, s.requested)},
                     {"used", admit::FormatResourceAmount(s.resource, s.used)},
                     {"allocatable", admit::FormatResourceAmount(s.resource, s.capacity)},
                     {"consumers", s.consumers},
                     {"topConsumers", std::move(top)}};
  }
  if (f.taint) {
    j["taint"] = {{"key", f.taint->key}, {"value", f.taint->value}, {"effect", f.taint->effect}};
  }
  return j;
}

json VerdictJson(const NodeVerdict& v) {
  json j = {{"name", v.node}, {"fits", v.state == NodeVerdict::State::kFits}};
  if (v.state != NodeVerdict::State::kFits) {
    j["plugin"] = v.plugin;
    j["code"] = std::string(admit::CodeName(v.code));
    json reasons = json::array();
    for (const Finding& f : v.findings) {
      reasons.push_back(FindingJson(f));
    }
    j["reasons"] = std::move(reasons);
  }
  return j;
}

json VictimsJson(const std::vector<Victim>& victims) {
  json out = json::array();
  for (const Victim& v : victims) {
    out.push_back({{"pod", v.pod}, {"owner", v.owner}, {"priority", v.priority}});
  }
  return out;
}

json PreemptionJson(const Preemption& p) {
  json j = {{"attempted", p.attempted}};
  if (!p.not_attempted.empty()) {
    j["notAttempted"] = p.not_attempted;
  }
  if (p.attempted) {
    json nodes = json::array();
    for (const PreemptionNode& n : p.nodes) {
      json node = {{"name", n.node}, {"candidate", n.candidate}};
      if (n.candidate) {
        node["victims"] = VictimsJson(n.victims);
      } else {
        node["reasons"] = n.reasons;
      }
      nodes.push_back(std::move(node));
    }
    j["nodes"] = std::move(nodes);
    j["candidates"] = p.candidates;
    if (!p.nominated.empty()) {
      j["nominatedNode"] = p.nominated;
      j["tiedWith"] = p.tied;
    }
    j["notModelled"] = p.not_modelled;
  }
  return j;
}

}  // namespace

std::string PodText(const PodExplanation& e) {
  std::string out;
  if (e.summary) {
    out += *e.summary + "\n";
  } else if (e.fitting > 0) {
    std::vector<std::string> fits;
    for (const NodeVerdict& v : e.nodes) {
      if (v.state == NodeVerdict::State::kFits && fits.size() < kListedAtMost) {
        fits.push_back(v.node);
      }
    }
    out += "fits on " + std::to_string(e.fitting) + " of " +
           Plural(e.nodes.size() + e.not_considered, "node") + ": " + Join(fits, ", ") +
           (e.fitting > fits.size() ? ", ..." : "") + "\n";
  } else {
    out += "fits on no node; no summary line: " + e.summary_withheld + "\n";
  }
  out += "pod " + e.pod + (e.source.empty() ? "" : " from " + e.source) +
         (e.owner.empty() ? "" : " (" + e.owner + ")") + ", priority " +
         std::to_string(e.priority) + (e.phase.empty() ? "" : ", " + e.phase) + "\n";
  if (e.summary) {
    out +=
        "  (the line above is the FitError kube-scheduler builds for this state: the message "
        "of the FailedScheduling event kubectl describe pod shows)\n";
  }
  for (const std::string& n : e.notes) {
    out += "  note: " + n + "\n";
  }
  for (const std::string& g : e.not_evaluated) {
    out += "  not evaluated by nodegate: " + g + "\n";
  }
  if (!e.pre_filter.empty()) {
    out +=
        "PreFilter rejected the pod: " + e.pre_filter + " (" + e.not_considered_explanation + ")\n";
  }
  if (!e.nodes.empty() || e.not_considered > 0) {
    out += "nodes:\n";
    for (const NodeVerdict& v : e.nodes) {
      NodeLines(out, v, "  ");
    }
    if (e.not_considered > 0 && e.pre_filter.empty()) {
      out += "  " + Plural(e.not_considered, e.nodes.empty() ? "node" : "other node") + ": " +
             e.not_considered_reason + " (" + e.not_considered_explanation + ")\n";
    }
  }
  PreemptionLines(out, e.preemption);
  return out;
}

json PodJson(const PodExplanation& e) {
  json j = {{"kind", "PodExplanation"}, {"pod", e.pod},           {"owner", e.owner},
            {"phase", e.phase},         {"priority", e.priority}, {"fits", e.fitting > 0},
            {"fittingNodes", e.fitting}};
  if (!e.node_name.empty()) {
    j["nodeName"] = e.node_name;
  }
  if (!e.source.empty()) {
    j["source"] = e.source;
  }
  if (e.summary) {
    j["summary"] = *e.summary;
  } else if (!e.summary_withheld.empty()) {
    j["summaryWithheld"] = e.summary_withheld;
  }
  j["notes"] = e.notes;
  j["notEvaluated"] = e.not_evaluated;
  if (!e.pre_filter.empty()) {
    j["preFilter"] = e.pre_filter;
  }
  json nodes = json::array();
  for (const NodeVerdict& v : e.nodes) {
    nodes.push_back(VerdictJson(v));
  }
  j["nodes"] = std::move(nodes);
  if (e.not_considered > 0) {
    j["notConsidered"] = {{"nodes", e.not_considered},
                          {"reason", e.not_considered_reason},
                          {"explanation", e.not_considered_explanation}};
  }
  j["preemption"] = PreemptionJson(e.preemption);
  return j;
}

std::string DaemonSetText(const DaemonSetExplanation& e) {
  std::string out = "daemonset " + e.daemonset;
  if (e.host_network) {
    out += ": hostNetwork";
  }
  if (!e.host_ports.empty()) {
    out += std::string(e.host_network ? "," : ":") + " host ports " + Join(e.host_ports, ", ");
  }
  out += "\nshould run on " + std::to_string(e.desired) + " of " + Plural(e.nodes.size(), "node") +
         ": runs on " + std::to_string(e.running) + ", blocked on " + std::to_string(e.blocked);
  if (e.waiting > 0) {
    out += ", would fit but has no pod yet on " + std::to_string(e.waiting);
  }
  out += "\n";
  for (const std::string& n : e.notes) {
    out += "  note: " + n + "\n";
  }
  for (const std::string& g : e.not_evaluated) {
    out += "  not evaluated by nodegate: " + g + "\n";
  }
  for (const DaemonSetNode& n : e.nodes) {
    const std::string pad(n.node.size() + 4, ' ');
    switch (n.state) {
      case DaemonSetNode::State::kRuns:
        out += "  " + n.node + "  runs: " + Join(n.pods, ", ") + "\n";
        break;
      case DaemonSetNode::State::kNotWanted:
        out += "  " + n.node + "  should not run: " + n.why_not + "\n";
        break;
      case DaemonSetNode::State::kRunsUnwanted:
        out += "  " + n.node + "  should not run, yet runs " + Join(n.pods, ", ") + ": " +
               n.why_not +
               (n.should_continue_running ? " (a pod already running may stay)"
                                          : " (the controller deletes it)") +
               "\n";
        break;
      case DaemonSetNode::State::kWouldFit:
        out +=
            "  " + n.node + "  should run, " +
            (n.pending_pod.empty() ? "no pod of it yet; it would fit"
                                   : "its pod " + n.pending_pod + " fits and waits to be bound") +
            "\n";
        break;
      case DaemonSetNode::State::kBlocked:
        out += "  " + n.node + "  should run, " +
               (n.pending_pod.empty() ? std::string("no pod of it yet; its pod would not fit")
                                      : "its pod " + n.pending_pod + " is Pending") +
               ":\n";
        if (n.verdict) {
          NodeLines(out, *n.verdict, pad, /*with_name=*/false);
        }
        if (!n.victims.empty()) {
          out += pad + "preemption would make room by evicting " + VictimsText(n.victims) + "\n";
        }
        if (n.summary) {
          out += pad + "FitError: " + *n.summary + "\n";
        }
        break;
    }
  }
  return out;
}

json DaemonSetJson(const DaemonSetExplanation& e) {
  static const char* kStates[] = {"runs", "blocked", "wouldFit", "notWanted", "runsUnwanted"};
  json nodes = json::array();
  for (const DaemonSetNode& n : e.nodes) {
    json j = {{"name", n.node},
              {"state", kStates[static_cast<int>(n.state)]},
              {"shouldRun", n.state == DaemonSetNode::State::kRuns ||
                                n.state == DaemonSetNode::State::kBlocked ||
                                n.state == DaemonSetNode::State::kWouldFit},
              {"pods", n.pods}};
    if (!n.why_not.empty()) {
      j["whyNot"] = n.why_not;
      j["mayContinueRunning"] = n.should_continue_running;
    }
    if (!n.pending_pod.empty()) {
      j["pendingPod"] = n.pending_pod;
    }
    if (n.verdict) {
      j["verdict"] = VerdictJson(*n.verdict);
    }
    if (n.summary) {
      j["summary"] = *n.summary;
    }
    if (!n.victims.empty()) {
      j["preemptionVictims"] = VictimsJson(n.victims);
    }
    nodes.push_back(std::move(j));
  }
  return {{"kind", "DaemonSetExplanation"},
          {"daemonset", e.daemonset},
          {"hostNetwork", e.host_network},
          {"hostPorts", e.host_ports},
          {"desired", e.desired},
          {"running", e.running},
          {"blocked", e.blocked},
          {"waiting", e.waiting},
          {"notes", e.notes},
          {"notEvaluated", e.not_evaluated},
          {"nodes", std::move(nodes)}};
}

std::string PendingText(const PendingReport& r) {
  std::string out = "pending pods in " + r.scope + ": " + std::to_string(r.pods.size());
  if (!r.pods.empty()) {
    out += " (" + std::to_string(r.fit_nowhere) + " fit nowhere, " + std::to_string(r.fit_now) +
           " would fit now)";
  }
  out += "\n";
  for (const std::string& u : r.unreadable) {
    out += "  not read: " + u + "\n";
  }
  for (const Blocker& b : r.blockers) {
    out += "\n" + b.what + (b.detail.empty() ? "" : ": " + b.detail) + "\n";
    for (const BlockedPod& p : b.pods) {
      out += "  " + p.pod;
      if (p.nodes > 0) {
        out += " (" + std::to_string(p.nodes) + " of " + Plural(p.tried, "node") + " tried)";
      }
      out += "\n";
    }
  }
  if (!r.pods.empty()) {
    out += "\n";
  }
  for (const PodExplanation& e : r.pods) {
    out += e.pod + ": ";
    if (e.summary) {
      out += *e.summary;
    } else if (e.fitting > 0) {
      out += "fits on " + Plural(e.fitting, "node");
    } else {
      out += "fits on no node; no summary line: " + e.summary_withheld;
    }
    out += "\n";
  }
  return out;
}

json PendingJson(const PendingReport& r) {
  json blockers = json::array();
  for (const Blocker& b : r.blockers) {
    json pods = json::array();
    for (const BlockedPod& p : b.pods) {
      pods.push_back({{"pod", p.pod}, {"nodes", p.nodes}, {"tried", p.tried}});
    }
    blockers.push_back({{"what", b.what}, {"detail", b.detail}, {"pods", std::move(pods)}});
  }
  json pods = json::array();
  for (const PodExplanation& e : r.pods) {
    pods.push_back(PodJson(e));
  }
  return {{"kind", "PendingExplanation"}, {"scope", r.scope},
          {"fitNowhere", r.fit_nowhere},  {"fitNow", r.fit_now},
          {"unreadable", r.unreadable},   {"blockers", std::move(blockers)},
          {"pods", std::move(pods)}};
}

namespace {

void Yaml(std::string& out, const json& v, int indent, bool in_list_item);

std::string Scalar(const json& v) {
  if (v.is_string()) {
    return v.dump();  // JSON's escapes are YAML's double-quoted escapes
  }
  if (v.is_null()) {
    return "null";
  }
  return v.dump();
}

bool Inline(const json& v) { return !v.is_structured() || v.empty(); }

// Key: plain when it is a name no YAML reader turns into something else, else double-quoted.
std::string Key(const std::string& key) {
  bool plain = !key.empty() && std::isalpha(static_cast<unsigned char>(key[0]));
  for (char c : key) {
    plain = plain && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' ||
                      c == '.' || c == '/');
  }
  std::string lower;
  for (char c : key) {
    lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  for (const char* word : {"y", "n", "yes", "no", "true", "false", "on", "off", "null"}) {
    plain = plain && lower != word;
  }
  return plain ? key : json(key).dump();
}

void Yaml(std::string& out, const json& v, int indent, bool in_list_item) {
  const std::string pad(static_cast<size_t>(indent), ' ');
  if (v.is_object()) {
    bool first = true;
    for (const auto& [key, value] : v.items()) {
      out += (first && in_list_item ? "" : pad) + Key(key) + ":";
      first = false;
      if (Inline(value)) {
        out +=
            " " +
            (value.is_structured() ? std::string(value.is_object() ? "{}" : "[]") : Scalar(value)) +
            "\n";
      } else {
        out += "\n";
        Yaml(out, value, indent + 2, false);
      }
    }
    return;
  }
  if (v.is_array()) {
    for (const json& item : v) {
      out += pad + "- ";
      if (Inline(item)) {
        out += (item.is_structured() ? std::string(item.is_object() ? "{}" : "[]") : Scalar(item)) +
               "\n";
      } else if (item.is_object()) {
        Yaml(out, item, indent + 2, true);
      } else {
        out += "\n";
        Yaml(out, item, indent + 2, false);
      }
    }
    return;
  }
  out += pad + Scalar(v) + "\n";
}

}  // namespace

std::string ToYaml(const json& value) {
  std::string out;
  if (Inline(value)) {
    return (value.is_structured() ? std::string(value.is_object() ? "{}" : "[]") : Scalar(value)) +
           "\n";
  }
  Yaml(out, value, 0, false);
  return out;
}

}  // namespace nodegate::explain
