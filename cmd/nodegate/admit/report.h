#pragma once
// Report rendering for `nodegate admit`: a short text report for people and one JSON object for
// tools (the contract of issue 6):
//   {"node": NAME, "profile": P, "admitted": BOOL,
//    "pods": [{"pod": "NS/NAME", "admitted": BOOL,
//              "failures": [{"plugin": PLUGIN, "reason": REASON, "detail": TEXT}],
//              "admitReason": R, "admitMessage": M}]}          (admitReason/Message: kubelet only)
// plus "nodeSource" ("host" or the --node file) and "existingPods"; with --live each pod also
// has "warnings": [{"kind", "hostIP", "protocol", "port", "detail"}] (issue 12); a critical pod
// the kubelet admits by evicting pods has "evicts": [{"pod": "NS/NAME", "qos": CLASS,
// "frees": {RESOURCE: QUANTITY}}] (issue 17), and its text verdict is
// "ADMITTED (evicts ns/a, ns/b: frees cpu 1500m, memory 2Gi)".

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "admit/check/checker.h"
#include "ports/warnings.h"

namespace nodegate::admit {

struct Report {
  std::string node;
  std::string node_source;   // "" when the node is this machine
  std::string host_summary;  // "2 CPUs, 7.8Gi memory, 110 pods" when the node is this machine
  Profile profile = Profile::kScheduler;
  ExistingPodsSummary existing;
  size_t pods_on_node = 0;
  std::vector<PodVerdict> pods;
  // --live: the live host-port warnings of each pod, index-aligned with `pods`.
  bool live = false;
  std::vector<std::vector<ports::PortWarning>> warnings;

  bool Admitted() const;
};

nlohmann::json ReportToJson(const Report& report);
// EvictedPods: "ns/a, ns/b", the pods the verdict evicts.
std::string EvictedPods(const PodVerdict& verdict);
// FreedInTotal: per resource the node was short of, what the evicted pods free together.
std::vector<std::pair<std::string, int64_t>> FreedInTotal(const PodVerdict& verdict);
std::string ReportToText(const Report& report);

}  // namespace nodegate::admit
