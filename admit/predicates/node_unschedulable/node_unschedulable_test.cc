#include "admit/predicates/node_unschedulable/node_unschedulable.h"

#include <gtest/gtest.h>

#include "admit/testing/builders.h"
#include "admit/testing/filter_check.h"

namespace nodegate::admit::node_unschedulable {
namespace {

using testing::MakeNode;
using testing::MakePod;

struct Case {
  std::string name;
  Pod pod;
  Node node;
  bool want_fit;
};

// Cases from pkg/scheduler/framework/plugins/nodeunschedulable/node_unschedulable_test.go.
TEST(NodeUnschedulableTest, Filter) {
  const std::vector<Case> cases = {
      {"Does not schedule pod to unschedulable node (node.Spec.Unschedulable==true)",
       MakePod().Obj(), MakeNode().Unschedulable().Obj(), false},
      {"Schedule pod to normal node", MakePod().Obj(), MakeNode().Obj(), true},
      {"Schedule pod with toleration to unschedulable node (node.Spec.Unschedulable==true)",
       MakePod().Toleration("node.kubernetes.io/unschedulable", "Exists", "", "NoSchedule").Obj(),
       MakeNode().Unschedulable().Obj(), true},
      {"toleration with empty operator matches the synthetic taint's empty value",
       MakePod().Toleration("node.kubernetes.io/unschedulable", "", "", "NoSchedule").Obj(),
       MakeNode().Unschedulable().Obj(), true},
      {"operator Exists with empty key tolerates everything",
       MakePod().Toleration("", "Exists", "", "").Obj(), MakeNode().Unschedulable().Obj(), true},
      {"toleration for NoExecute does not tolerate the NoSchedule taint",
       MakePod().Toleration("node.kubernetes.io/unschedulable", "Exists", "", "NoExecute").Obj(),
       MakeNode().Unschedulable().Obj(), false},
      {"toleration with a value does not match the empty taint value",
       MakePod()
           .Toleration("node.kubernetes.io/unschedulable", "Equal", "true", "NoSchedule")
           .Obj(),
       MakeNode().Unschedulable().Obj(), false},
  };
  const FeatureGates gates;
  auto plugin = New(PredicateOptions{gates});
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    testing::CheckFilter(*plugin, gates, {c.pod, c.node, {}}, c.want_fit,
                         {Code::kUnschedulableAndUnresolvable, kErrReasonUnschedulable},
                         "cordoned");
  }
}

}  // namespace
}  // namespace nodegate::admit::node_unschedulable
