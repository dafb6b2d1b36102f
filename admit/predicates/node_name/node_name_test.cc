#include "admit/predicates/node_name/node_name.h"

#include <gtest/gtest.h>

#include "admit/testing/builders.h"
#include "admit/testing/filter_check.h"

namespace nodegate::admit::node_name {
namespace {

using testing::MakeNode;
using testing::MakePod;

struct Case {
  std::string name;
  Pod pod;
  Node node;
  bool want_fit;
};

// Cases from pkg/scheduler/framework/plugins/nodename/node_name_test.go TestNodeName.
TEST(NodeNameTest, Filter) {
  const std::vector<Case> cases = {
      {"no host specified", MakePod().Obj(), MakeNode("foo").Obj(), true},
      {"host matches", MakePod().Node("foo").Obj(), MakeNode("foo").Obj(), true},
      {"host doesn't match", MakePod().Node("bar").Obj(), MakeNode("foo").Obj(), false},
      {"host comparison is case-sensitive", MakePod().Node("Foo").Obj(), MakeNode("foo").Obj(),
       false},
  };
  const FeatureGates gates;
  auto plugin = New(PredicateOptions{gates});
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    testing::CheckFilter(*plugin, gates, {c.pod, c.node, {}}, c.want_fit,
                         {Code::kUnschedulableAndUnresolvable, kErrReason}, c.pod.node_name);
  }
}

}  // namespace
}  // namespace nodegate::admit::node_name
