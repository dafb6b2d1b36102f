#pragma once
// Predicate: one Filter plugin, deciding whether a pod fits one node. Each lives in its own
// folder under admit/predicates/ with a Name, its upstream reason strings, a pure core that the
// kubelet profile and other tools reuse, and a factory registered by name (registry.h).

#include <memory>
#include <string_view>

#include "admit/framework/feature_gates.h"
#include "admit/framework/node_info.h"
#include "admit/framework/status.h"

namespace nodegate::admit {

// PredicateOptions: what a factory may need.
struct PredicateOptions {
  FeatureGates gates;
};

class Predicate {
 public:
  virtual ~Predicate() = default;
  virtual std::string_view Name() const = 0;
  // Filter: Success, or the failures with their reasons and details.
  virtual Status Filter(const PodInfo& pod, const NodeInfo& node) const = 0;
};

using PredicatePtr = std::unique_ptr<Predicate>;

}  // namespace nodegate::admit
