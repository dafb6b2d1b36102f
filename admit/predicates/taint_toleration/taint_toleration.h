#pragma once
// TaintToleration (pkg/scheduler/framework/plugins/tainttoleration/taint_toleration.go, matching
// in staging/src/k8s.io/api/core/v1/toleration.go and component-helpers scheduling/corev1):
// the scheduler fails a node on its first NoSchedule or NoExecute taint that no toleration
// tolerates; the kubelet looks at NoExecute taints only (and not for static pods).

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "admit/framework/predicate.h"

namespace nodegate::admit::taint_toleration {

inline constexpr std::string_view kName = "TaintToleration";
inline constexpr std::string_view kErrReasonNotMatch = "node(s) had untolerated taint(s)";
// The kubelet's wording (pkg/kubelet/lifecycle/predicate.go).
inline constexpr std::string_view kErrReasonKubelet =
    "node(s) had taints that the pod didn't tolerate";

// ToleratesTaint: effect empty or equal; key empty or equal; operator "" / Equal compares values,
// Exists matches any value, Lt / Gt compare canonical int64 values only when
// `comparison_operators` (TaintTolerationComparisonOperators) is on; anything else never matches.
bool ToleratesTaint(const Toleration& toleration, const Taint& taint, bool comparison_operators);

// TolerationsTolerateTaint: some toleration tolerates the taint.
bool TolerationsTolerateTaint(const std::vector<Toleration>& tolerations, const Taint& taint,
                              bool comparison_operators);

using TaintFilter = std::function<bool(const Taint&)>;

// FindMatchingUntoleratedTaint: the first taint (node order) accepted by `filter` that no
// toleration tolerates, or nullptr.
const Taint* FindMatchingUntoleratedTaint(const std::vector<Taint>& taints,
                                          const std::vector<Toleration>& tolerations,
                                          const TaintFilter& filter, bool comparison_operators);

// DoNotScheduleTaintsFilter: NoSchedule and NoExecute (the scheduler Filter).
bool DoNotScheduleTaintsFilter(const Taint& taint);

// TaintToString: "key=value:Effect" (kubectl's notation; "key:Effect" without a value).
std::string TaintToString(const Taint& taint);

PredicatePtr New(const PredicateOptions& options);

}  // namespace nodegate::admit::taint_toleration
