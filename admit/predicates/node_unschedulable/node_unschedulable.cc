#include "admit/predicates/node_unschedulable/node_unschedulable.h"

#include "admit/predicates/taint_toleration/taint_toleration.h"

namespace nodegate::admit::node_unschedulable {
namespace {

class NodeUnschedulable final : public Predicate {
 public:
  explicit NodeUnschedulable(bool comparison_operators)
      : comparison_operators_(comparison_operators) {}

  std::string_view Name() const override { return kName; }

  Status Filter(const PodInfo& pod, const NodeInfo& node) const override {
    if (Fits(pod.pod, node.node(), comparison_operators_)) {
      return Status::Success();
    }
    return Status::Unresolvable(
        std::string(kErrReasonUnschedulable),
        "node \"" + node.node().name +
            "\" is cordoned (spec.unschedulable: true) and the pod does not tolerate " +
            std::string(kTaintNodeUnschedulable) + ":NoSchedule");
  }

 private:
  bool comparison_operators_;
};

}  // namespace

bool Fits(const Pod& pod, const Node& node, bool comparison_operators) {
  if (!node.unschedulable) {
    return true;
  }
  const Taint taint{std::string(kTaintNodeUnschedulable), "", "NoSchedule"};
  return taint_toleration::TolerationsTolerateTaint(pod.tolerations, taint, comparison_operators);
}

PredicatePtr New(const PredicateOptions& options) {
  return std::make_unique<NodeUnschedulable>(
      options.gates.Enabled(kGateTaintTolerationComparisonOperators));
}

}  // namespace nodegate::admit::node_unschedulable
