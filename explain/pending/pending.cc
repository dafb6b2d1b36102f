#include "explain/pending/pending.h"

#include <algorithm>
#include <map>
#include <set>

#include "admit/predicates/taint_toleration/taint_toleration.h"
#include "explain/scheduler/candidate.h"

namespace nodegate::explain {
namespace {

// Gathered: one blocker while the pods are read.
struct Gathered {
  std::map<std::string, std::set<std::string>> holders;  // owner (or pod) -> nodes
  std::set<std::string> nodes;
  std::map<std::string, BlockedPod> pods;
};

std::string Plural(size_t n, const std::string& one) {
  return std::to_string(n) + " " + one + (n == 1 ? "" : "s");
}

std::string PortKey(const PortHolding& h) {
  std::string key = "host port " + std::to_string(h.number) + "/" + h.protocol;
  const size_t on = h.port.find(" on ");
  if (on != std::string::npos && h.port.substr(on + 4) != "0.0.0.0") {
    key += " on " + h.port.substr(on + 4);
  }
  return key;
}

std::string HolderDetail(const std::map<std::string, std::set<std::string>>& holders) {
  std::vector<std::pair<size_t, std::string>> by_count;
  for (const auto& [holder, nodes] : holders) {
    by_count.emplace_back(nodes.size(), holder);
  }
  std::sort(by_count.begin(), by_count.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  std::string out;
  for (const auto& [count, holder] : by_count) {
    const bool controller = holder.rfind("pod ", 0) != 0;
    out += (out.empty() ? "held " : "; held ") + std::string("on ") + Plural(count, "node") +
           (controller ? " by pods of " : " by ") + holder;
  }
  return out;
}

// Gatherer: the blockers of the Pending pods, gathered as each pod's explanation is read.
class Gatherer {
 public:
  // Note: `pod` is blocked by `what` (on `node`, or everywhere when it is "").
  void Note(const std::string& what, const std::string& pod, const std::string& node,
            size_t tried) {
    Gathered& g = gathered_[what];
    if (!node.empty()) {
      g.nodes.insert(node);
    }
    BlockedPod& b = g.pods[pod];
    b.pod = pod;
    b.tried = tried;
    if (!node.empty()) {
      ++b.nodes;
    }
  }

  // NoteExplanation: every reason the explanation gives for its pod not being placed.
  void NoteExplanation(const PodExplanation& e, const CandidatePod& candidate) {
    const size_t tried = e.nodes.size();
    if (e.fitting > 0) {
      Note("fits now", e.pod, "", tried);
    }
    if (!e.pre_filter.empty()) {
      Note("PreFilter: " + e.pre_filter, e.pod, "", tried);
    }
    for (const std::string& gap : e.not_evaluated) {
      Note("needs Filters nodegate does not evaluate: " + gap.substr(0, gap.find(':')), e.pod, "",
           tried);
    }
    if (!candidate.scheduling_gates.empty()) {
      Note("scheduling gates", e.pod, "", tried);
    }
    for (const NodeVerdict& v : e.nodes) {
      if (v.state != NodeVerdict::State::kFails) {
        continue;
      }
      for (const Finding& f : v.findings) {
        NoteFinding(f, e.pod, v.node, tried);
      }
    }
  }

  // Blockers: one per reason, with its holders aggregated, the most pods first.
  std::vector<Blocker> Blockers() {
    std::vector<Blocker> blockers;
    for (auto& [what, g] : gathered_) {
      Blocker b;
      b.what = what;
      if (!g.holders.empty()) {
        b.detail = HolderDetail(g.holders);
      } else if (!g.nodes.empty()) {
        b.detail = "on " + Plural(g.nodes.size(), "node");
      }
      for (auto& [pod, blocked] : g.pods) {
        b.pods.push_back(std::move(blocked));
      }
      blockers.push_back(std::move(b));
    }
    std::stable_sort(blockers.begin(), blockers.end(), [](const Blocker& a, const Blocker& b) {
      return a.pods.size() > b.pods.size();
    });
    return blockers;
  }

 private:
  void NoteFinding(const Finding& f, const std::string& pod, const std::string& node,
                   size_t tried) {
    if (f.ports.empty()) {
      Note(f.taint ? "taint " + admit::taint_toleration::TaintToString(*f.taint) + " not tolerated"
                   : f.reason,
           pod, node, tried);
      return;
    }
    std::set<std::string> seen;
    for (const PortHolding& h : f.ports) {
      const std::string key = PortKey(h);
      if (!seen.insert(key).second) {
        continue;
      }
      Note(key, pod, node, tried);
      gathered_[key].holders[h.owner.empty() ? "pod " + h.holder : h.owner].insert(node);
    }
  }

  std::map<std::string, Gathered> gathered_;
};

}  // namespace

PendingReport ExplainPending(const Cluster& cluster, const Scheduler& scheduler,
                             const std::string& ns) {
  PendingReport report;
  report.scope = ns.empty() ? "all namespaces" : "namespace " + ns;
  Gatherer gatherer;
  for (const nlohmann::json& object : cluster.unbound()) {
    auto candidate = DecodeCandidate(object, "pod");
    if (!candidate.ok()) {
      report.unreadable.push_back(candidate.error().msg);
      continue;
    }
    if (!ns.empty() && candidate->pod.namespace_name != ns) {
      continue;
    }
    if (candidate->pod.phase != "Pending" && !candidate->pod.phase.empty()) {
      continue;
    }
    PodExplanation e = scheduler.Explain(*candidate);
    if (e.fitting > 0) {
      ++report.fit_now;
    } else {
      ++report.fit_nowhere;
    }
    gatherer.NoteExplanation(e, *candidate);
    report.pods.push_back(std::move(e));
  }
  report.blockers = gatherer.Blockers();
  return report;
}

}  // namespace nodegate::explain
