#include "admit/check/checker.h"

#include <optional>
#include <utility>

#include "admit/check/pod_facts.h"
#include "admit/predicates/registry.h"

namespace nodegate::admit {

std::string_view ProfileName(Profile profile) {
  return profile == Profile::kKubelet ? "kubelet" : "scheduler";
}

namespace {

Node NodeForProfile(Node node, const CheckOptions& options) {
  if (options.profile == Profile::kKubelet) {
    return kubelet::PrepareNode(std::move(node), options.host_os);
  }
  return node;
}

}  // namespace

Checker::Checker(Node node, CheckOptions options)
    : options_(std::move(options)), node_info_(NodeForProfile(std::move(node), options_)) {
  if (options_.profile == Profile::kScheduler) {
    scheduler_profile_ = NewSchedulerProfile(PredicateOptions{options_.gates});
  }
}

ExistingPodsSummary Checker::AddExistingPods(std::vector<Pod> pods) {
  ExistingPodsSummary summary;
  const std::string& node_name = node_info_.node().name;
  for (Pod& pod : pods) {
    if (pod.IsTerminal()) {
      ++summary.terminal;
      continue;
    }
    if (!pod.node_name.empty() && pod.node_name != node_name) {
      ++summary.other_node;
      continue;
    }
    if (node_info_.FindPod(pod.Key()) != nullptr) {
      ++summary.replaced;
    } else {
      ++summary.added;
    }
    node_info_.AddPod(MakePodFacts(pod, options_.gates, /*already_on_node=*/true));
  }
  return summary;
}

void Checker::AddExistingPod(PodFactsPtr pod) { node_info_.AddPod(std::move(pod)); }

PodVerdict Checker::Evaluate(const Pod& candidate) {
  PodVerdict v;
  v.pod = candidate.Key();
  v.source = candidate.source;
  if (options_.profile == Profile::kScheduler) {
    const PodInfo info = MakePodInfo(candidate, options_.gates, /*already_on_node=*/false);
    Status s = RunFilters(scheduler_profile_, info, node_info_);
    if (!s.IsSuccess()) {
      v.admitted = false;
      v.code = std::string(CodeName(s.code()));
      for (const Failure& f : s.failures()) {
        v.failures.push_back({s.plugin(), f.reason, f.detail});
      }
    }
    return v;
  }
  kubelet::KubeletOptions kopts{options_.host_os, options_.gates};
  kubelet::KubeletVerdict kv = kubelet::Admit(candidate, node_info_, kopts);
  v.admitted = kv.admitted;
  for (const kubelet::KubeletFailure& f : kv.failures) {
    v.failures.push_back({f.plugin, f.reason, f.detail});
  }
  v.admit_reason = kv.reason;
  v.admit_message = kv.message;
  v.evictions = std::move(kv.evictions);
  v.shortfall = std::move(kv.shortfall);
  v.critical = std::move(kv.critical);
  return v;
}

PodVerdict Checker::Check(const Pod& candidate) {
  // The previous version of the candidate leaves the node first, and comes back afterwards.
  PodFactsPtr previous = node_info_.FindPodPtr(candidate.Key());
  if (previous) {
    node_info_.RemovePod(candidate.Key());
  }
  PodVerdict v = Evaluate(candidate);
  v.replaced_previous = previous != nullptr;
  if (previous) {
    node_info_.AddPod(std::move(previous));
  }
  return v;
}

PodVerdict Checker::CheckAndAdmit(const Pod& candidate) {
  PodVerdict v = Check(candidate);
  if (v.admitted) {
    // The kubelet kills its victims before it starts the candidate.
    for (const kubelet::Eviction& e : v.evictions) {
      node_info_.RemovePod(e.pod);
    }
    node_info_.AddPod(MakePodFacts(candidate, options_.gates, /*already_on_node=*/false));
  }
  return v;
}

}  // namespace nodegate::admit
