#include "admit/predicates/node_name/node_name.h"

namespace nodegate::admit::node_name {
namespace {

class NodeName final : public Predicate {
 public:
  std::string_view Name() const override { return kName; }

  Status Filter(const PodInfo& pod, const NodeInfo& node) const override {
    if (Fits(pod.pod, node.node())) {
      return Status::Success();
    }
    return Status::Unresolvable(std::string(kErrReason),
                                "the pod is bound to node \"" + pod.pod.node_name +
                                    "\" (spec.nodeName) but this node is \"" + node.node().name +
                                    "\"");
  }
};

}  // namespace

bool Fits(const Pod& pod, const Node& node) {
  return pod.node_name.empty() || pod.node_name == node.name;
}

PredicatePtr New(const PredicateOptions&) { return std::make_unique<NodeName>(); }

}  // namespace nodegate::admit::node_name
