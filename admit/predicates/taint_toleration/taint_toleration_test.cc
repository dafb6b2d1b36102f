#include "admit/predicates/taint_toleration/taint_toleration.h"

#include <gtest/gtest.h>

#include "admit/testing/builders.h"
#include "admit/testing/filter_check.h"

namespace nodegate::admit::taint_toleration {
namespace {

using testing::MakeNode;
using testing::MakePod;

struct ToleratesCase {
  std::string name;
  Toleration toleration;
  Taint taint;
  bool comparison_operators;
  bool want;
};

Toleration Tol(std::string key, std::string op, std::string value, std::string effect) {
  return Toleration{std::move(key), std::move(op), std::move(value), std::move(effect),
                    std::nullopt};
}

// Cases from staging/src/k8s.io/api/core/v1/toleration_test.go TestTolerationToleratesTaint,
// plus every operator and effect rule of the spec.
TEST(ToleratesTaintTest, Table) {
  const Taint foo_bar_ns{"foo", "bar", "NoSchedule"};
  const std::vector<ToleratesCase> cases = {
      {"toleration and taint have the same key and effect, and operator is Exists, and taint has "
       "no value, expect tolerated",
       Tol("foo", "Exists", "", "NoSchedule"),
       {"foo", "", "NoSchedule"},
       false,
       true},
      {"toleration and taint have the same key and effect, and operator is Exists, and taint has "
       "some value, expect tolerated",
       Tol("foo", "Exists", "", "NoSchedule"), foo_bar_ns, false, true},
      {"toleration and taint have the same effect, toleration has empty key and operator is "
       "Exists, means match all taints, expect tolerated",
       Tol("", "Exists", "", "NoSchedule"), foo_bar_ns, false, true},
      {"toleration and taint have the same key, effect and value, and operator is Equal, expect "
       "tolerated",
       Tol("foo", "Equal", "bar", "NoSchedule"), foo_bar_ns, false, true},
      {"toleration and taint have the same key and effect, but different values, and operator "
       "is Equal, expect not tolerated",
       Tol("foo", "Equal", "value1", "NoSchedule"), foo_bar_ns, false, false},
      {"toleration and taint have the same key and value, but different effects, and operator "
       "is Equal, expect not tolerated",
       Tol("foo", "Equal", "bar", "NoExecute"), foo_bar_ns, false, false},
      {"empty operator means Equal", Tol("foo", "", "bar", "NoSchedule"), foo_bar_ns, false, true},
      {"empty operator with empty value matches only an empty taint value",
       Tol("foo", "", "", "NoSchedule"), foo_bar_ns, false, false},
      {"empty effect matches every effect",
       Tol("foo", "Equal", "bar", ""),
       {"foo", "bar", "NoExecute"},
       false,
       true},
      {"empty key and empty effect with Exists tolerates everything",
       Tol("", "Exists", "", ""),
       {"any", "thing", "PreferNoSchedule"},
       false,
       true},
      {"different key is not tolerated", Tol("other", "Exists", "", ""), foo_bar_ns, false, false},
      {"unknown operator never matches", Tol("foo", "Like", "bar", ""), foo_bar_ns, false, false},
      {"Lt with the gate off never matches",
       Tol("foo", "Lt", "10", ""),
       {"foo", "5", "NoSchedule"},
       false,
       false},
      {"Lt matches a smaller taint value",
       Tol("foo", "Lt", "10", ""),
       {"foo", "5", "NoSchedule"},
       true,
       true},
      {"Lt does not match an equal taint value",
       Tol("foo", "Lt", "10", ""),
       {"foo", "10", "NoSchedule"},
       true,
       false},
      {"Gt matches a larger taint value",
       Tol("foo", "Gt", "10", ""),
       {"foo", "11", "NoSchedule"},
       true,
       true},
      {"Gt does not match a smaller taint value",
       Tol("foo", "Gt", "10", ""),
       {"foo", "-3", "NoSchedule"},
       true,
       false},
      {"Gt with negative numbers",
       Tol("foo", "Gt", "-5", ""),
       {"foo", "-3", "NoSchedule"},
       true,
       true},
      {"Gt with a non-numeric taint value does not match",
       Tol("foo", "Gt", "1", ""),
       {"foo", "abc", "NoSchedule"},
       true,
       false},
      {"Lt with a non-canonical number (leading zero) does not match",
       Tol("foo", "Lt", "10", ""),
       {"foo", "05", "NoSchedule"},
       true,
       false},
      {"Lt with a plus sign does not match",
       Tol("foo", "Lt", "+10", ""),
       {"foo", "5", "NoSchedule"},
       true,
       false},
      {"Gt with an out-of-range value does not match",
       Tol("foo", "Gt", "1", ""),
       {"foo", "99999999999999999999", "NoSchedule"},
       true,
       false},
  };
  for (const ToleratesCase& c : cases) {
    EXPECT_EQ(ToleratesTaint(c.toleration, c.taint, c.comparison_operators), c.want) << c.name;
  }
}

struct FilterCase {
  std::string name;
  Pod pod;
  Node node;
  bool want_fit;
};

// Cases from pkg/scheduler/framework/plugins/tainttoleration/taint_toleration_test.go
// TestTaintTolerationFilter.
TEST(TaintTolerationTest, Filter) {
  const std::vector<FilterCase> cases = {
      {"A pod having no tolerations can't be scheduled onto a node with nonempty taints",
       MakePod("pod0").Obj(), MakeNode("nodeA").Taint("dedicated", "user1", "NoSchedule").Obj(),
       false},
      {"A pod which can be scheduled on a dedicated node assigned to user1 with effect "
       "NoSchedule",
       MakePod("pod1").Toleration("dedicated", "Equal", "user1", "NoSchedule").Obj(),
       MakeNode("nodeA").Taint("dedicated", "user1", "NoSchedule").Obj(), true},
      {"A pod which can't be scheduled on a dedicated node assigned to user2 with effect "
       "NoSchedule",
       MakePod("pod1").Toleration("dedicated", "Equal", "user2", "NoSchedule").Obj(),
       MakeNode("nodeA").Taint("dedicated", "user1", "NoSchedule").Obj(), false},
      {"A pod can be scheduled onto the node, with a toleration uses operator Exists that "
       "tolerates the taints on the node",
       MakePod("pod1").Toleration("foo", "Exists", "", "NoSchedule").Obj(),
       MakeNode("nodeA").Taint("foo", "bar", "NoSchedule").Obj(), true},
      {"A pod has multiple tolerations, node has multiple taints, all the taints are tolerated, "
       "pod can be scheduled onto the node",
       MakePod("pod1")
           .Toleration("dedicated", "Equal", "user2", "NoSchedule")
           .Toleration("foo", "Exists", "", "NoSchedule")
           .Obj(),
       MakeNode("nodeA")
           .Taint("dedicated", "user2", "NoSchedule")
           .Taint("foo", "bar", "NoSchedule")
           .Obj(),
       true},
      {"A pod has a toleration that keys and values match the taint on the node, but (non-empty) "
       "effect doesn't match, can't be scheduled onto the node",
       MakePod("pod1").Toleration("foo", "Equal", "bar", "PreferNoSchedule").Obj(),
       MakeNode("nodeA").Taint("foo", "bar", "NoSchedule").Obj(), false},
      {"The pod has a toleration that keys and values match the taint on the node, the effect of "
       "toleration is empty, and the effect of taint is NoSchedule. Pod can be scheduled onto "
       "the node",
       MakePod("pod1").Toleration("foo", "Equal", "bar", "").Obj(),
       MakeNode("nodeA").Taint("foo", "bar", "NoSchedule").Obj(), true},
      {"The pod has a toleration that key and value don't match the taint on the node, but the "
       "effect of taint on node is PreferNoSchedule. Pod can be scheduled onto the node",
       MakePod("pod1").Toleration("dedicated", "Equal", "user2", "NoSchedule").Obj(),
       MakeNode("nodeA").Taint("dedicated", "user1", "PreferNoSchedule").Obj(), true},
      {"The pod has no toleration, but the effect of taint on node is PreferNoSchedule. Pod can "
       "be scheduled onto the node",
       MakePod("pod1").Obj(),
       MakeNode("nodeA").Taint("dedicated", "user1", "PreferNoSchedule").Obj(), true},
      {"NoExecute taints are checked by the scheduler too", MakePod("pod1").Obj(),
       MakeNode("nodeA").Taint("node.kubernetes.io/not-ready", "", "NoExecute").Obj(), false},
  };
  const FeatureGates gates;
  auto plugin = New(PredicateOptions{gates});
  for (const FilterCase& c : cases) {
    SCOPED_TRACE(c.name);
    // The detail names the untolerated taint.
    const std::string taint = c.node.taints.empty() ? "" : TaintToString(c.node.taints[0]);
    testing::CheckFilter(*plugin, gates, {c.pod, c.node, {}}, c.want_fit,
                         {Code::kUnschedulableAndUnresolvable, kErrReasonNotMatch}, taint);
  }
}

TEST(TaintTolerationTest, DetailNamesFirstUntoleratedTaintInNodeOrder) {
  const FeatureGates gates;
  auto plugin = New(PredicateOptions{gates});
  NodeInfo node(MakeNode()
                    .Taint("a", "1", "NoSchedule")
                    .Taint("b", "2", "NoExecute")
                    .Taint("c", "", "NoSchedule")
                    .Obj());
  Status s = plugin->Filter(
      MakePodInfo(MakePod().Toleration("a", "Exists", "", "").Obj(), gates, false), node);
  ASSERT_FALSE(s.IsSuccess());
  EXPECT_NE(s.failures()[0].detail.find("taint b=2:NoExecute"), std::string::npos)
      << s.failures()[0].detail;
}

TEST(TaintTolerationTest, ComparisonOperatorsFollowTheFeatureGate) {
  const Pod pod = MakePod().Toleration("tier", "Gt", "2", "NoSchedule").Obj();
  const Node node = MakeNode().Taint("tier", "3", "NoSchedule").Obj();
  FeatureGates off;
  FeatureGates on;
  on.Set(kGateTaintTolerationComparisonOperators, true);
  EXPECT_FALSE(
      New(PredicateOptions{off})->Filter(MakePodInfo(pod, off, false), NodeInfo(node)).IsSuccess());
  EXPECT_TRUE(
      New(PredicateOptions{on})->Filter(MakePodInfo(pod, on, false), NodeInfo(node)).IsSuccess());
}

}  // namespace
}  // namespace nodegate::admit::taint_toleration
