// The FitError line against kube-scheduler's own test expectations: each case carries over the
// diagnosis and the expected message of an upstream test (named beside it), no code.
#include "explain/scheduler/fit_error.h"

#include <gtest/gtest.h>

namespace nodegate::explain {
namespace {

using admit::Code;

NodeStatus Unschedulable(std::string reason) { return {Code::kUnschedulable, {std::move(reason)}}; }
const NodeStatus kAbsentUnresolvable{Code::kUnschedulableAndUnresolvable, {}};

struct Case {
  const char* name;
  Diagnosis diagnosis;
  const char* want;
};

TEST(FitErrorTest, UpstreamFitErrorCases) {
  // pkg/scheduler/framework/types_test.go TestFitError_Error.
  const std::string pre = "Node(s) failed PreFilter plugin FalsePreFilter";
  const std::string f1 = "Node(s) failed Filter plugin FalseFilter-1";
  const std::string f2 = "Node(s) failed Filter plugin FalseFilter-2";
  const std::string post = "Error running PostFilter plugin FailedPostFilter";
  const std::vector<Case> cases = {
      {"nodes failed Prefilter plugin",
       {3,
        {{"node1", Unschedulable(pre)},
         {"node2", Unschedulable(pre)},
         {"node3", Unschedulable(pre)}},
        kAbsentUnresolvable,
        pre,
        ""},
       "0/3 nodes are available: Node(s) failed PreFilter plugin FalsePreFilter."},
      {"nodes failed Prefilter plugin and the preemption also failed",
       {3,
        {{"node1", Unschedulable(pre)},
         {"node2", Unschedulable(pre)},
         {"node3", Unschedulable(pre)}},
        kAbsentUnresolvable,
        pre,
        post},
       "0/3 nodes are available: Node(s) failed PreFilter plugin FalsePreFilter. Error running "
       "PostFilter plugin FailedPostFilter"},
      {"nodes failed one Filter plugin with an empty PostFilterMsg",
       {3,
        {{"node1", Unschedulable(f1)}, {"node2", Unschedulable(f1)}, {"node3", Unschedulable(f1)}},
        kAbsentUnresolvable,
        "",
        ""},
       "0/3 nodes are available: 3 Node(s) failed Filter plugin FalseFilter-1."},
      {"nodes failed one Filter plugin with a non-empty PostFilterMsg",
       {3,
        {{"node1", Unschedulable(f1)}, {"node2", Unschedulable(f1)}, {"node3", Unschedulable(f1)}},
        kAbsentUnresolvable,
        "",
        post},
       "0/3 nodes are available: 3 Node(s) failed Filter plugin FalseFilter-1. Error running "
       "PostFilter plugin FailedPostFilter"},
      {"nodes failed two Filter plugins with an empty PostFilterMsg",
       {3,
        {{"node1", Unschedulable(f1)}, {"node2", Unschedulable(f1)}, {"node3", Unschedulable(f2)}},
        kAbsentUnresolvable,
        "",
        ""},
       "0/3 nodes are available: 1 Node(s) failed Filter plugin FalseFilter-2, 2 Node(s) failed "
       "Filter plugin FalseFilter-1."},
      {"nodes failed two Filter plugins with a non-empty PostFilterMsg",
       {3,
        {{"node1", Unschedulable(f1)}, {"node2", Unschedulable(f1)}, {"node3", Unschedulable(f2)}},
        kAbsentUnresolvable,
        "",
        post},
       "0/3 nodes are available: 1 Node(s) failed Filter plugin FalseFilter-2, 2 Node(s) failed "
       "Filter plugin FalseFilter-1. Error running PostFilter plugin FailedPostFilter"},
      {"failed to Permit on node",
       {1,
        {{"node1", Unschedulable("Node failed Permit plugin Permit-1")}},
        kAbsentUnresolvable,
        "",
        ""},
       "0/1 nodes are available: 1 Node failed Permit plugin Permit-1."},
      {"failed to Reserve on node",
       {1,
        {{"node1", Unschedulable("Node failed Reserve plugin Reserve-1")}},
        kAbsentUnresolvable,
        "",
        ""},
       "0/1 nodes are available: 1 Node failed Reserve plugin Reserve-1."},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(FitErrorMessage(c.diagnosis), c.want) << c.name;
  }
}

TEST(FitErrorTest, UpstreamPreemptionMessages) {
  // pkg/scheduler/framework/plugins/defaultpreemption/default_preemption_test.go TestPostFilter:
  // the preemption's own FitError, nodes it did not try counted as not helpful, wrapped by the
  // plugin's "preemption: ".
  const NodeStatus not_helpful{Code::kUnschedulableAndUnresolvable,
                               {std::string(kPreemptionNotHelpful)}};
  const NodeStatus no_victims{Code::kUnschedulableAndUnresolvable,
                              {std::string(kNoPreemptionVictims)}};
  const NodeStatus cpu = Unschedulable("Insufficient cpu");
  const std::vector<Case> cases = {
      {"pod with tied priority is still unschedulable",
       {1, {{"node1", no_victims}}, not_helpful},
       "0/1 nodes are available: 1 No preemption victims found for incoming pod."},
      {"preemption should respect filteredNodesStatuses",
       {1, {}, not_helpful},
       "0/1 nodes are available: 1 Preemption is not helpful for scheduling."},
      {"no candidate nodes found, no enough resource after removing low priority pods",
       {2, {{"node1", cpu}, {"node2", cpu}}, not_helpful},
       "0/2 nodes are available: 2 Insufficient cpu."},
      {"no candidate nodes found with mixed reasons",
       {3, {{"node1", no_victims}, {"node2", cpu}, {"node3", no_victims}}, not_helpful},
       "0/3 nodes are available: 1 Insufficient cpu, 2 No preemption victims found for incoming "
       "pod."},
      {"2 UnschedulableAndUnresolvable nodes and 2 nodes don't have enough CPU resource",
       {4, {{"node1", cpu}, {"node2", cpu}}, not_helpful},
       "0/4 nodes are available: 2 Insufficient cpu, 2 Preemption is not helpful for "
       "scheduling."},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(FitErrorMessage(c.diagnosis), c.want) << c.name;
    EXPECT_EQ(PostFilterMessage({{PluginOutcome::Code::kUnschedulable,
                                  {"preemption: " + FitErrorMessage(c.diagnosis)}}}),
              std::string("preemption: ") + c.want)
        << c.name;
  }
}

TEST(FitErrorTest, HistogramSortsAsGoSortStrings) {
  // Byte order: "10 ..." before "9 ...", digits before letters.
  Diagnosis d;
  d.num_all_nodes = 19;
  for (int i = 0; i < 10; ++i) {
    d.node_statuses.push_back({"a" + std::to_string(i), Unschedulable("Insufficient cpu")});
  }
  for (int i = 0; i < 9; ++i) {
    d.node_statuses.push_back({"b" + std::to_string(i), Unschedulable("Insufficient memory")});
  }
  EXPECT_EQ(FitErrorMessage(d),
            "0/19 nodes are available: 10 Insufficient cpu, 9 Insufficient memory.");
}

TEST(FitErrorTest, EveryReasonOfANodeCountsAndAbsentNodesCountTheirStatus) {
  Diagnosis d;
  d.num_all_nodes = 5;
  d.node_statuses.push_back(
      {"n1", {Code::kUnschedulable, {"Insufficient cpu", "Insufficient memory"}}});
  d.absent = {Code::kUnschedulableAndUnresolvable, {AbsentNodesReason({"NodeAffinity"})}};
  EXPECT_EQ(FitErrorMessage(d),
            "0/5 nodes are available: 1 Insufficient cpu, 1 Insufficient memory, 4 node(s) "
            "didn't satisfy plugin(s) [NodeAffinity].");
}

TEST(FitErrorTest, PostFilterPluginsJoinUnlessOneSucceedsOrFailsHard) {
  using C = PluginOutcome::Code;
  EXPECT_EQ(PostFilterMessage({{C::kUnschedulable, {"no new claims to deallocate"}},
                               {C::kUnschedulable, {"preemption: x"}}}),
            "no new claims to deallocate, preemption: x");
  EXPECT_EQ(
      PostFilterMessage({{C::kUnschedulable, {"no new claims to deallocate"}}, {C::kSuccess, {}}}),
      "");
  EXPECT_EQ(PostFilterMessage({{C::kError, {"not found"}}, {C::kUnschedulable, {"later"}}}),
            "not found");
  EXPECT_EQ(PostFilterMessage({}), "");
}

}  // namespace
}  // namespace nodegate::explain
