#include "webhook/state/node_states.h"

#include <gtest/gtest.h>

#include "admit/testing/builders.h"
#include "webhook/testing/records.h"

namespace nodegate::webhook {
namespace {

using admit::testing::MakeNode;
using admit::testing::MakePod;

using testing::Facts;
using testing::NodeRec;
using testing::Nodes;
using testing::Rec;
using testing::Recs;

admit::CheckOptions Kubelet() {
  admit::CheckOptions options;
  options.profile = admit::Profile::kKubelet;
  return options;
}

class NodeStatesTest : public ::testing::Test {
 protected:
  NodeStates states_{Kubelet(), std::chrono::seconds(30), [this] { return now_; }};
  Clock::time_point now_ = Clock::time_point(std::chrono::hours(1));

  static admit::Node TwoPodNode() {
    return MakeNode("n1")
        .Label("kubernetes.io/os", "linux")
        .Allocatable({{"cpu", "2"}, {"pods", "2"}})
        .Obj();
  }
  static admit::Pod Candidate(const std::string& name) {
    return MakePod(name).Uid("uid-" + name).Node("n1").Container("c", {{"cpu", "100m"}}).Obj();
  }
};

TEST_F(NodeStatesTest, UnknownNodeIsNotJudged) {
  EXPECT_FALSE(states_.JudgeCached(Candidate("a"), true).node_known);
  states_.UpsertPod(Rec(MakePod("p").Uid("u").Node("ghost").Obj()));  // pods of a node not yet seen
  EXPECT_FALSE(states_.JudgeCached(MakePod("b").Node("ghost").Obj(), true).node_known);
}

TEST_F(NodeStatesTest, AssumedPodHoldsTheLastSlotUntilTheWatchShowsIt) {
  states_.ReplaceNodes(Nodes({TwoPodNode()}));
  states_.ReplacePods(Recs({MakePod("old").Uid("u-old").Node("n1").Obj()}));
  NodeVerdict first = states_.JudgeCached(Candidate("a"), /*assume=*/true);
  ASSERT_TRUE(first.node_known);
  EXPECT_TRUE(first.verdict.admitted);
  EXPECT_EQ(first.pods_on_node, 1u);
  EXPECT_EQ(states_.AssumedPods(), 1u);
  NodeVerdict second = states_.JudgeCached(Candidate("b"), true);
  EXPECT_FALSE(second.verdict.admitted);
  EXPECT_EQ(second.verdict.admit_reason, "OutOfpods");
  // The watch shows the first pod: it counts once, no longer assumed.
  states_.UpsertPod(Rec(Candidate("a")));
  EXPECT_EQ(states_.AssumedPods(), 0u);
  EXPECT_EQ(states_.JudgeCached(Candidate("b"), true).pods_on_node, 2u);
  // Deleted in the watch: its slot is free again.
  states_.DeletePod(Rec(Candidate("a")));
  EXPECT_TRUE(states_.JudgeCached(Candidate("b"), true).verdict.admitted);
}

TEST_F(NodeStatesTest, DryRunLeavesNothingAssumed) {
  states_.ReplaceNodes(Nodes({TwoPodNode()}));
  states_.ReplacePods(Recs({MakePod("old").Uid("u-old").Node("n1").Obj()}));
  EXPECT_TRUE(states_.JudgeCached(Candidate("a"), /*assume=*/false).verdict.admitted);
  EXPECT_EQ(states_.AssumedPods(), 0u);
  EXPECT_TRUE(states_.JudgeCached(Candidate("b"), true).verdict.admitted);
}

TEST_F(NodeStatesTest, AssumedPodExpiresWhenNeverSeen) {
  states_.ReplaceNodes(Nodes({TwoPodNode()}));
  states_.ReplacePods(Recs({MakePod("old").Uid("u-old").Node("n1").Obj()}));
  EXPECT_TRUE(states_.JudgeCached(Candidate("a"), true).verdict.admitted);
  EXPECT_FALSE(states_.JudgeCached(Candidate("b"), true).verdict.admitted);
  now_ += std::chrono::seconds(31);
  EXPECT_TRUE(states_.JudgeCached(Candidate("b"), true).verdict.admitted);
  EXPECT_EQ(states_.AssumedPods(), 1u);  // b now
}

TEST_F(NodeStatesTest, FinishedPodsAndRelistsFreeTheNode) {
  states_.ReplaceNodes(Nodes({TwoPodNode()}));
  states_.ReplacePods(
      Recs({MakePod("x").Uid("ux").Node("n1").Obj(), MakePod("y").Uid("uy").Node("n1").Obj()}));
  EXPECT_FALSE(states_.JudgeCached(Candidate("a"), false).verdict.admitted);
  states_.UpsertPod(Rec(MakePod("x").Uid("ux").Node("n1").Phase("Failed").Obj()));
  EXPECT_TRUE(states_.JudgeCached(Candidate("a"), false).verdict.admitted);
  states_.ReplacePods(
      Recs({MakePod("x").Uid("ux").Node("n1").Obj(), MakePod("y").Uid("uy").Node("n1").Obj()}));
  EXPECT_FALSE(states_.JudgeCached(Candidate("a"), false).verdict.admitted);
  states_.ReplacePods(Recs({}));
  EXPECT_EQ(states_.Pods(), 0u);
  EXPECT_TRUE(states_.JudgeCached(Candidate("a"), false).verdict.admitted);
}

TEST_F(NodeStatesTest, NodeUpdateRebuildsTheChecker) {
  states_.ReplaceNodes(Nodes({TwoPodNode()}));
  states_.ReplacePods(
      Recs({MakePod("x").Uid("ux").Node("n1").Container("c", {{"cpu", "1500m"}}).Obj()}));
  admit::Pod big = MakePod("big").Uid("ub").Node("n1").Container("c", {{"cpu", "1"}}).Obj();
  NodeVerdict v = states_.JudgeCached(big, false);
  EXPECT_EQ(v.verdict.admit_reason, "OutOfcpu");
  states_.UpsertNode(NodeRec(MakeNode("n1")
                                 .Label("kubernetes.io/os", "linux")
                                 .Allocatable({{"cpu", "4"}, {"pods", "2"}})
                                 .Obj()));
  EXPECT_TRUE(states_.JudgeCached(big, false).verdict.admitted);
  states_.DeleteNode("n1");
  EXPECT_FALSE(states_.JudgeCached(big, false).node_known);
}

TEST_F(NodeStatesTest, SnapshotCountsThePodsAssumedBeforeIt) {
  NodeSnapshot snapshot{TwoPodNode(), {Facts(MakePod("old").Uid("u-old").Node("n1").Obj())}};
  EXPECT_TRUE(states_.JudgeSnapshot(Candidate("a"), snapshot, true).verdict.admitted);
  EXPECT_EQ(states_.AssumedPods(), 1u);
  EXPECT_FALSE(states_.JudgeSnapshot(Candidate("b"), snapshot, true).verdict.admitted);
  // A snapshot that already holds the assumed pod counts it once.
  snapshot.pods.push_back(Facts(Candidate("a")));
  EXPECT_EQ(states_.JudgeSnapshot(Candidate("b"), snapshot, false).pods_on_node, 2u);
}

// The cache's verdict is admit's kubelet profile on the same node and pods.
TEST_F(NodeStatesTest, VerdictEqualsACheckerBuiltFromScratch) {
  const admit::Node node = MakeNode("n1")
                               .Label("kubernetes.io/os", "linux")
                               .Allocatable({{"cpu", "2"}, {"memory", "4Gi"}, {"pods", "10"}})
                               .Obj();
  std::vector<admit::Pod> pods = {
      MakePod("web").Uid("1").Node("n1").Container("c", {{"cpu", "1"}}).HostPort("TCP//8080").Obj(),
      MakePod("db").Uid("2").Node("n1").Container("c", {{"memory", "3Gi"}}).Obj(),
      MakePod("done").Uid("3").Node("n1").Phase("Succeeded").Container("c", {{"cpu", "1"}}).Obj()};
  states_.ReplaceNodes(Nodes({node}));
  states_.ReplacePods(Recs(pods));
  const admit::Pod candidates[] = {
      MakePod("fits").Node("n1").Container("c", {{"cpu", "500m"}}).Obj(),
      MakePod("port").Node("n1").Container("c").HostPort("TCP//8080").Obj(),
      MakePod("cpu").Node("n1").Container("c", {{"cpu", "1500m"}}).Obj(),
      MakePod("mem").Node("n1").Container("c", {{"memory", "2Gi"}}).Obj(),
      MakePod("critical").Node("n1").Priority(2000001000).Container("c", {{"cpu", "1500m"}}).Obj(),
  };
  for (const admit::Pod& candidate : candidates) {
    admit::Checker checker(node, Kubelet());
    checker.AddExistingPods(pods);
    const admit::PodVerdict want = checker.Check(candidate);
    const admit::PodVerdict got = states_.JudgeCached(candidate, false).verdict;
    EXPECT_EQ(got.admitted, want.admitted) << candidate.name;
    EXPECT_EQ(got.admit_reason, want.admit_reason) << candidate.name;
    EXPECT_EQ(got.admit_message, want.admit_message) << candidate.name;
    ASSERT_EQ(got.failures.size(), want.failures.size()) << candidate.name;
    for (size_t i = 0; i < got.failures.size(); ++i) {
      EXPECT_EQ(got.failures[i].detail, want.failures[i].detail) << candidate.name;
    }
    ASSERT_EQ(got.evictions.size(), want.evictions.size()) << candidate.name;
  }
}

// Another replica's claims count like this replica's assumed pods, until they lapse or the
// watch shows the pod.
TEST_F(NodeStatesTest, AdoptedClaimsHoldTheirSlot) {
  states_.ReplaceNodes(Nodes({TwoPodNode()}));
  states_.ReplacePods(Recs({MakePod("old").Uid("u-old").Node("n1").Obj()}));
  EXPECT_TRUE(states_.JudgeCached(Candidate("a"), false).verdict.admitted);
  states_.AdoptClaims("n1", {Claim{Facts(Candidate("other")), now_ + std::chrono::seconds(10)}});
  EXPECT_EQ(states_.AssumedPods(), 1u);
  EXPECT_EQ(states_.JudgeCached(Candidate("a"), false).verdict.admit_reason, "OutOfpods");
  // A claim seen twice counts once; a lapsed one not at all.
  states_.AdoptClaims("n1", {Claim{Facts(Candidate("other")), now_ + std::chrono::seconds(10)},
                             Claim{Facts(Candidate("late")), now_ - std::chrono::seconds(1)}});
  EXPECT_EQ(states_.AssumedPods(), 1u);
  // The watch shows the claimed pod: it counts once, from the cache.
  states_.UpsertPod(Rec(Candidate("other")));
  EXPECT_EQ(states_.AssumedPods(), 0u);
  EXPECT_TRUE(states_.Watched("uid-other"));
  EXPECT_EQ(states_.JudgeCached(Candidate("a"), false).pods_on_node, 2u);
  // Claims of pods the watch already shows are not adopted again.
  states_.AdoptClaims("n1", {Claim{Facts(Candidate("other")), now_ + std::chrono::seconds(10)}});
  EXPECT_EQ(states_.AssumedPods(), 0u);
  now_ += std::chrono::seconds(11);
  states_.DeletePod(Rec(Candidate("other")));
  EXPECT_TRUE(states_.JudgeCached(Candidate("a"), false).verdict.admitted);
}

TEST_F(NodeStatesTest, AssumeAfterJudging) {
  states_.ReplaceNodes(Nodes({TwoPodNode()}));
  states_.ReplacePods(Recs({MakePod("old").Uid("u-old").Node("n1").Obj()}));
  ASSERT_TRUE(states_.JudgeCached(Candidate("a"), false).verdict.admitted);
  states_.Assume(Candidate("a"));
  EXPECT_EQ(states_.AssumedPods(), 1u);
  EXPECT_FALSE(states_.JudgeCached(Candidate("b"), false).verdict.admitted);
}

// A relist hands over the facts the cache holds for a pod whose resourceVersion is unchanged.
TEST_F(NodeStatesTest, KnownPodsAreSharedAcrossRelists) {
  kube::PodRecord web = Rec(MakePod("web").Uid("u-web").Node("n1").Obj());
  web.resource_version = "10";
  const admit::PodFacts* kept = web.facts.get();
  states_.ReplaceNodes(Nodes({TwoPodNode()}));
  states_.ReplacePods({web});
  EXPECT_EQ(states_.KnownPod("u-web", "10").get(), kept);
  EXPECT_EQ(states_.KnownPod("u-web", "11"), nullptr);
  EXPECT_EQ(states_.KnownPod("u-none", "10"), nullptr);
  kube::PodRecord changed = Rec(MakePod("web").Uid("u-web").Node("n1").Obj());
  changed.resource_version = "11";
  states_.UpsertPod(changed);
  EXPECT_EQ(states_.KnownPod("u-web", "10"), nullptr);
  EXPECT_NE(states_.KnownPod("u-web", "11"), nullptr);
  EXPECT_EQ(states_.Pods(), 1u);
}

// A pod bound anew to another node (deleted, created again under the same uid is impossible,
// but a watch may show it on another node after a relist) leaves the first node.
TEST_F(NodeStatesTest, APodMovesBetweenNodes) {
  admit::Node n2 = TwoPodNode();
  n2.name = "n2";
  states_.ReplaceNodes(Nodes({TwoPodNode(), n2}));
  states_.ReplacePods(
      Recs({MakePod("p").Uid("u-p").Node("n1").Container("c", {{"cpu", "2"}}).Obj()}));
  admit::Pod big = MakePod("big").Uid("ub").Node("n1").Container("c", {{"cpu", "1"}}).Obj();
  EXPECT_FALSE(states_.JudgeCached(big, false).verdict.admitted);
  states_.UpsertPod(Rec(MakePod("p").Uid("u-p").Node("n2").Container("c", {{"cpu", "2"}}).Obj()));
  EXPECT_TRUE(states_.JudgeCached(big, false).verdict.admitted);
  EXPECT_EQ(states_.Pods(), 1u);
}

}  // namespace
}  // namespace nodegate::webhook
