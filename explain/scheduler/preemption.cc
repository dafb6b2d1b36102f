#include "explain/scheduler/preemption.h"

#include <algorithm>
#include <climits>
#include <limits>

#include "explain/scheduler/scheduler.h"

namespace nodegate::explain {
namespace {

int32_t PriorityOfFacts(const admit::PodFacts& f) { return f.priority.value_or(0); }

// StartOf: GetPodStartTime: status.startTime, or now for a pod not started.
int64_t StartOf(const admit::PodFacts& f) {
  return f.start_time != 0 ? f.start_time : std::numeric_limits<int64_t>::max();
}

struct Selected {
  bool success = false;
  NodeStatus status;  // when not
  std::vector<admit::PodFactsPtr> victims;
};

// SelectVictimsOnNode, without PodDisruptionBudgets.
Selected SelectVictims(const Scheduler& scheduler, const admit::PodInfo& pod,
                       const std::string& self, const admit::NodeInfo& start) {
  Selected out;
  const int32_t priority = PriorityOf(pod.pod);
  std::vector<admit::PodFactsPtr> potential;
  for (const admit::PodFactsPtr& p : start.pods()) {
    if (PriorityOfFacts(*p) < priority) {
      potential.push_back(p);
    }
  }
  if (potential.empty()) {
    out.status = {admit::Code::kUnschedulableAndUnresolvable, {std::string(kNoPreemptionVictims)}};
    return out;
  }
  admit::NodeInfo node = start;
  for (const admit::PodFactsPtr& p : potential) {
    node.RemovePod(p->key);
  }
  std::optional<admit::NodeInfo> scratch;
  auto fits = [&](const admit::NodeInfo& n) -> NodeVerdict {
    return scheduler.Filter(pod, scheduler.WithNominated(n, priority, self, scratch));
  };
  NodeVerdict first = fits(node);
  if (first.state != NodeVerdict::State::kFits) {
    out.status.code = first.code;
    for (const Finding& f : first.findings) {
      out.status.reasons.push_back(f.reason);
    }
    return out;
  }
  std::stable_sort(potential.begin(), potential.end(),
                   [](const admit::PodFactsPtr& a, const admit::PodFactsPtr& b) {
                     return MoreImportant(*a, *b);
                   });
  for (const admit::PodFactsPtr& p : potential) {
    node.AddPod(p);
    if (fits(node).state != NodeVerdict::State::kFits) {
      node.RemovePod(p->key);
      out.victims.push_back(p);
    }
  }
  if (out.victims.empty()) {
    // Upstream turns this into an error status; it cannot happen when the node failed first.
    out.status = {admit::Code::kError, {"expected at least one victim pod on node"}};
    return out;
  }
  out.success = true;
  return out;
}

// PickNode: pickOneNodeForPreemption's default score functions, in order; ties stay.
std::vector<size_t> PickNodes(const std::vector<std::vector<admit::PodFactsPtr>>& victims) {
  std::vector<size_t> all(victims.size());
  for (size_t i = 0; i < all.size(); ++i) {
    all[i] = i;
  }
  const std::vector<std::function<int64_t(size_t)>> scores = {
      [](size_t) -> int64_t { return 0; },  // PDB violations: none known
      [&](size_t i) -> int64_t { return -static_cast<int64_t>(PriorityOfFacts(*victims[i][0])); },
      [&](size_t i) -> int64_t {
        int64_t sum = 0;
        for (const auto& v : victims[i]) {
          sum += static_cast<int64_t>(PriorityOfFacts(*v)) + int64_t{INT32_MAX} + 1;
        }
        return -sum;
      },
      [&](size_t i) -> int64_t { return -static_cast<int64_t>(victims[i].size()); },
      [&](size_t i) -> int64_t {
        // The earliest start among the victims of the highest priority: the later, the better.
        const int32_t top = PriorityOfFacts(*victims[i][0]);
        int64_t earliest = std::numeric_limits<int64_t>::max();
        for (const auto& v : victims[i]) {
          if (PriorityOfFacts(*v) == top) {
            earliest = std::min(earliest, StartOf(*v));
          }
        }
        return earliest;
      },
  };
  for (const auto& score : scores) {
    std::vector<size_t> best;
    int64_t max = std::numeric_limits<int64_t>::min();
    for (size_t i : all) {
      const int64_t s = score(i);
      if (s > max) {
        max = s;
        best.clear();
      }
      if (s == max) {
        best.push_back(i);
      }
    }
    all = std::move(best);
    if (all.size() == 1) {
      break;
    }
  }
  return all;
}

}  // namespace

bool MoreImportant(const admit::PodFacts& a, const admit::PodFacts& b) {
  if (PriorityOfFacts(a) != PriorityOfFacts(b)) {
    return PriorityOfFacts(a) > PriorityOfFacts(b);
  }
  return StartOf(a) < StartOf(b);
}

PluginOutcome Preempt(const Scheduler& scheduler, const CandidatePod& candidate,
                      const admit::PodInfo& pod, const PreemptionScope& scope, Preemption& report) {
  report.not_modelled = {
      "PodDisruptionBudgets are not read: every victim counts as violating none",
      "victims already terminating on the pod's nominated node are not looked for",
  };
  if (candidate.preemption_policy == "Never") {
    report.not_attempted = "the pod's preemptionPolicy is Never";
    return {PluginOutcome::Code::kUnschedulable, {"preemption: " + std::string(kNotEligibleNever)}};
  }
  report.attempted = true;
  Diagnosis d;
  d.num_all_nodes = scope.num_all_nodes;
  d.absent = {admit::Code::kUnschedulableAndUnresolvable, {std::string(kPreemptionNotHelpful)}};
  std::vector<std::vector<admit::PodFactsPtr>> candidate_victims;
  std::vector<size_t> candidate_nodes;
  const std::string self = candidate.pod.Key();
  for (size_t i = 0; i < scope.verdicts.size(); ++i) {
    const NodeVerdict& v = *scope.verdicts[i];
    if (v.state != NodeVerdict::State::kFails || v.code != admit::Code::kUnschedulable) {
      continue;
    }
    Selected s = SelectVictims(scheduler, pod, self, scope.node(v.node));
    PreemptionNode node;
    node.node = v.node;
    if (s.success) {
      node.candidate = true;
      for (const admit::PodFactsPtr& p : s.victims) {
        node.victims.push_back(Victim{p->key, p->Owner(), PriorityOfFacts(*p)});
      }
      candidate_nodes.push_back(report.nodes.size());
      candidate_victims.push_back(std::move(s.victims));
    } else {
      node.reasons = s.status.reasons;
      d.node_statuses.emplace_back(v.node, std::move(s.status));
    }
    report.nodes.push_back(std::move(node));
  }
  report.candidates = candidate_nodes.size();
  // calculateNumCandidates: 10% of the nodes tried, at least 100.
  const size_t sampled = std::max<size_t>(report.nodes.size() * 10 / 100, 100);
  if (candidate_nodes.empty()) {
    // Nodes with candidates would be absent from the map; there are none.
    return {PluginOutcome::Code::kUnschedulable, {"preemption: " + FitErrorMessage(d)}};
  }
  std::vector<size_t> picked = PickNodes(candidate_victims);
  report.nominated = report.nodes[candidate_nodes[picked.front()]].node;
  for (size_t k = 1; k < picked.size(); ++k) {
    report.tied.push_back(report.nodes[candidate_nodes[picked[k]]].node);
  }
  if (report.candidates > sampled) {
    report.not_modelled.push_back(
        "the scheduler tries at least 100 nodes (or 10%) from a random offset and stops when "
        "it has enough candidates: it may nominate another of the nodes listed");
  }
  return {PluginOutcome::Code::kSuccess, {}};
}

}  // namespace nodegate::explain
