#include "admit/predicates/node_affinity/node_affinity.h"

#include <gtest/gtest.h>

#include "admit/testing/builders.h"
#include "admit/testing/filter_check.h"

namespace nodegate::admit::node_affinity {
namespace {

using testing::MakeNode;
using testing::MakePod;
using testing::Req;

struct Case {
  std::string name;
  Pod pod;
  Node node;
  bool want_fit;
  std::string want_detail = "";  // a fragment of the explanation
};

// Cases from pkg/scheduler/framework/plugins/nodeaffinity/node_affinity_test.go TestNodeAffinity
// (node "node1" with the labels of each case), plus every operator of the spec.
TEST(NodeAffinityTest, Filter) {
  const Node foo_bar = MakeNode("node1").Label("foo", "bar").Obj();
  const Node gpu = MakeNode("node1").Label("GPU", "NVIDIA-GRID-K1").Obj();
  const std::vector<Case> cases = {
      {"no selector", MakePod().Obj(), MakeNode("node1").Obj(), true},
      {"missing labels", MakePod().NodeSelector("foo", "bar").Obj(), MakeNode("node1").Obj(), false,
       "nodeSelector foo=bar: node has no label foo"},
      {"same labels", MakePod().NodeSelector("foo", "bar").Obj(), foo_bar, true},
      {"node labels are superset", MakePod().NodeSelector("foo", "bar").Obj(),
       MakeNode("node1").Label("foo", "bar").Label("baz", "blah").Obj(), true},
      {"node labels are subset",
       MakePod().NodeSelector("foo", "bar").NodeSelector("baz", "blah").Obj(), foo_bar, false,
       "nodeSelector baz=blah"},
      {"nodeSelector value differs", MakePod().NodeSelector("foo", "baz").Obj(), foo_bar, false,
       "node has foo=bar"},
      {"Pod with matchExpressions using In operator that matches the existing node",
       MakePod().RequiredAffinityTerm({Req("foo", "In", {"bar", "value2"})}).Obj(), foo_bar, true},
      {"Pod with matchExpressions using Gt operator that matches the existing node",
       MakePod().RequiredAffinityTerm({Req("kernel-version", "Gt", {"0204"})}).Obj(),
       MakeNode("node1").Label("kernel-version", "0206").Obj(), true},
      {"Gt does not match an equal value",
       MakePod().RequiredAffinityTerm({Req("kernel-version", "Gt", {"206"})}).Obj(),
       MakeNode("node1").Label("kernel-version", "0206").Obj(), false,
       "kernel-version Gt 206: node has kernel-version=0206"},
      {"Lt matches a smaller value",
       MakePod().RequiredAffinityTerm({Req("cores", "Lt", {"64"})}).Obj(),
       MakeNode("node1").Label("cores", "8").Obj(), true},
      {"Lt with a non-integer label does not match",
       MakePod().RequiredAffinityTerm({Req("cores", "Lt", {"64"})}).Obj(),
       MakeNode("node1").Label("cores", "eight").Obj(), false},
      {"Gt with a missing label does not match",
       MakePod().RequiredAffinityTerm({Req("cores", "Gt", {"1"})}).Obj(), foo_bar, false,
       "node has no label cores"},
      {"Pod with matchExpressions using NotIn operator that matches the existing node",
       MakePod().RequiredAffinityTerm({Req("mem-type", "NotIn", {"DDR", "DDR2"})}).Obj(),
       MakeNode("node1").Label("mem-type", "DDR3").Obj(), true},
      {"NotIn matches a node lacking the key",
       MakePod().RequiredAffinityTerm({Req("mem-type", "NotIn", {"DDR"})}).Obj(), foo_bar, true},
      {"NotIn does not match a listed value",
       MakePod().RequiredAffinityTerm({Req("foo", "NotIn", {"bar"})}).Obj(), foo_bar, false,
       "foo NotIn [bar]: node has foo=bar"},
      {"Pod with matchExpressions using Exists operator that matches the existing node",
       MakePod().RequiredAffinityTerm({Req("GPU", "Exists")}).Obj(), gpu, true},
      {"Exists does not match a node lacking the key",
       MakePod().RequiredAffinityTerm({Req("GPU", "Exists")}).Obj(), foo_bar, false},
      {"DoesNotExist matches a node lacking the key",
       MakePod().RequiredAffinityTerm({Req("GPU", "DoesNotExist")}).Obj(), foo_bar, true},
      {"DoesNotExist does not match a node with the key",
       MakePod().RequiredAffinityTerm({Req("GPU", "DoesNotExist")}).Obj(), gpu, false},
      {"Pod with affinity that don't match node's labels won't schedule onto the node",
       MakePod().RequiredAffinityTerm({Req("foo", "NotIn", {"value1", "value2"})}).Obj(),
       MakeNode("node1").Label("foo", "value1").Obj(), false},
      {"Pod with empty MatchExpressions is not a valid value will match no objects and won't "
       "schedule onto the node",
       MakePod().RequiredAffinityTerm({}).Obj(), foo_bar, false, "empty term matches no node"},
      {"Pod with no Affinity will schedule onto a node", MakePod().Obj(), foo_bar, true},
      {"required affinity with no terms matches no node", MakePod().EmptyRequiredAffinity().Obj(),
       foo_bar, false, "no nodeSelectorTerms"},
      {"Pod with multiple matchExpressions ANDed that matches the existing node",
       MakePod()
           .RequiredAffinityTerm({Req("GPU", "Exists"), Req("GPU", "NotIn", {"AMD", "INTER"})})
           .Obj(),
       gpu, true},
      {"Pod with multiple matchExpressions ANDed that doesn't match the existing node",
       MakePod()
           .RequiredAffinityTerm({Req("GPU", "Exists"), Req("GPU", "In", {"AMD", "INTER"})})
           .Obj(),
       gpu, false, "matchExpressions[1] GPU In [AMD, INTER]"},
      {"Pod with multiple NodeSelectorTerms ORed in affinity, matches the node's labels and will "
       "schedule onto the node",
       MakePod()
           .RequiredAffinityTerm({Req("foo", "In", {"bar", "value2"})})
           .RequiredAffinityTerm({Req("diffkey", "In", {"wrong", "value2"})})
           .Obj(),
       foo_bar, true},
      {"Pod with an Affinity and a PodSpec.NodeSelector(the old thing that we are deprecating) "
       "both are satisfied, will schedule onto the node",
       MakePod().NodeSelector("foo", "bar").RequiredAffinityTerm({Req("foo", "Exists")}).Obj(),
       foo_bar, true},
      {"Pod with an Affinity matches node's labels but the PodSpec.NodeSelector(the old thing "
       "that we are deprecating) is not satisfied, won't schedule onto the node",
       MakePod().NodeSelector("foo", "bar").RequiredAffinityTerm({Req("foo", "Exists")}).Obj(),
       MakeNode("node1").Label("foo", "barrrrrr").Obj(), false},
      {"Pod with an invalid value in Affinity term won't be scheduled onto the node",
       MakePod().RequiredAffinityTerm({Req("foo", "NotIn", {"invalid value: ___@#$%^"})}).Obj(),
       foo_bar, false, "is invalid"},
      {"In with no values is invalid and matches nothing",
       MakePod().RequiredAffinityTerm({Req("foo", "In")}).Obj(), foo_bar, false, "is invalid"},
      {"Exists with values is invalid and matches nothing",
       MakePod().RequiredAffinityTerm({Req("foo", "Exists", {"bar"})}).Obj(), foo_bar, false,
       "is invalid"},
      {"Gt with a non-integer value is invalid and matches nothing",
       MakePod().RequiredAffinityTerm({Req("foo", "Gt", {"abc"})}).Obj(), foo_bar, false,
       "is invalid"},
      {"Gt with two values is invalid and matches nothing",
       MakePod().RequiredAffinityTerm({Req("foo", "Gt", {"1", "2"})}).Obj(), foo_bar, false,
       "is invalid"},
      {"unknown operator is invalid and matches nothing",
       MakePod().RequiredAffinityTerm({Req("foo", "Matches", {"bar"})}).Obj(), foo_bar, false,
       "is invalid"},
      {"an invalid term does not stop a later valid term from matching",
       MakePod()
           .RequiredAffinityTerm({Req("foo", "In")})
           .RequiredAffinityTerm({Req("foo", "In", {"bar"})})
           .Obj(),
       foo_bar, true},
      {"Pod with matchFields using In operator that matches the existing node",
       MakePod().RequiredAffinityTerm({}, {Req("metadata.name", "In", {"node1"})}).Obj(), foo_bar,
       true},
      {"Pod with matchFields using In operator that does not match the existing node",
       MakePod().RequiredAffinityTerm({}, {Req("metadata.name", "In", {"node2"})}).Obj(), foo_bar,
       false, "node name is \"node1\""},
      {"matchFields NotIn excludes the node",
       MakePod().RequiredAffinityTerm({}, {Req("metadata.name", "NotIn", {"node1"})}).Obj(),
       foo_bar, false},
      {"matchFields NotIn another node matches",
       MakePod().RequiredAffinityTerm({}, {Req("metadata.name", "NotIn", {"node2"})}).Obj(),
       foo_bar, true},
      {"matchFields on another field is invalid",
       MakePod().RequiredAffinityTerm({}, {Req("metadata.uid", "In", {"node1"})}).Obj(), foo_bar,
       false, "is invalid"},
      {"matchFields with two values is invalid",
       MakePod().RequiredAffinityTerm({}, {Req("metadata.name", "In", {"node1", "node2"})}).Obj(),
       foo_bar, false, "is invalid"},
      {"matchFields with Exists is invalid",
       MakePod().RequiredAffinityTerm({}, {Req("metadata.name", "Exists", {"node1"})}).Obj(),
       foo_bar, false, "is invalid"},
      {"Pod with two terms: matchFields does not match, but matchExpressions matches",
       MakePod()
           .RequiredAffinityTerm({}, {Req("metadata.name", "In", {"node2"})})
           .RequiredAffinityTerm({Req("foo", "In", {"bar"})})
           .Obj(),
       foo_bar, true},
      {"Pod with one term: matchFields does not match, but matchExpressions matches",
       MakePod()
           .RequiredAffinityTerm({Req("foo", "In", {"bar"})},
                                 {Req("metadata.name", "In", {"node2"})})
           .Obj(),
       foo_bar, false},
      {"Pod with one term: both matchFields and matchExpressions match",
       MakePod()
           .RequiredAffinityTerm({Req("foo", "In", {"bar"})},
                                 {Req("metadata.name", "In", {"node1"})})
           .Obj(),
       foo_bar, true},
      {"Pod with two terms: both matchFields and matchExpressions do not match",
       MakePod()
           .RequiredAffinityTerm({}, {Req("metadata.name", "In", {"node2"})})
           .RequiredAffinityTerm({Req("foo", "In", {"not-match-to-bar"})})
           .Obj(),
       foo_bar, false, "nodeSelectorTerms[1]"},
      {"matchFields are not evaluated against a node without a name",
       MakePod().RequiredAffinityTerm({}, {Req("metadata.name", "In", {"node2"})}).Obj(),
       MakeNode("").Obj(), true},
  };
  const FeatureGates gates;
  auto plugin = New(PredicateOptions{gates});
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    testing::CheckFilter(*plugin, gates, {c.pod, c.node, {}}, c.want_fit,
                         {Code::kUnschedulableAndUnresolvable, kErrReasonPod}, c.want_detail);
  }
}

}  // namespace
}  // namespace nodegate::admit::node_affinity
