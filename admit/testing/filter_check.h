#pragma once
// CheckFilter: one row of a predicate's Filter table test (the scheduler's tests are tables of
// pod, node and verdict). Runs the predicate and checks, with GoogleTest expectations:
// success when the row fits; otherwise the failure's code, its single reason, and a detail
// that contains `detail_part`.
//
//   for (const Case& c : cases) {
//     SCOPED_TRACE(c.name);
//     CheckFilter(*plugin, gates, {c.pod, c.node, {}}, c.want_fit,
//                 {Code::kUnschedulableAndUnresolvable, kErrReason}, c.pod.node_name);
//   }

#include <string>
#include <string_view>
#include <vector>

#include "admit/api/types.h"
#include "admit/framework/feature_gates.h"
#include "admit/framework/predicate.h"
#include "admit/framework/status.h"

namespace nodegate::admit::testing {

// The situation of a row: the candidate, the node, and the pods already on it.
struct FilterInput {
  Pod pod;
  Node node;
  std::vector<Pod> existing;
};

// How the predicate fails when a row does not fit.
struct FilterFailure {
  Code code = Code::kUnschedulable;
  std::string_view reason;
};

void CheckFilter(const Predicate& predicate, const FeatureGates& gates, const FilterInput& input,
                 bool want_fit, const FilterFailure& failure, std::string_view detail_part);

}  // namespace nodegate::admit::testing
