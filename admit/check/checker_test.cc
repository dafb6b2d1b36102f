#include "admit/check/checker.h"

#include <gtest/gtest.h>

#include "admit/testing/builders.h"

namespace nodegate::admit {
namespace {

using testing::MakeNode;
using testing::MakePod;

Node TestNode() {
  return MakeNode("node1").Allocatable({{"cpu", "2"}, {"memory", "4Gi"}, {"pods", "110"}}).Obj();
}

CheckOptions Options(Profile profile) {
  CheckOptions o;
  o.profile = profile;
  return o;
}

class CheckerTest : public ::testing::TestWithParam<Profile> {};

TEST_P(CheckerTest, TerminatedPodsAndPodsOfOtherNodesDoNotCount) {
  Checker checker(TestNode(), Options(GetParam()));
  ExistingPodsSummary s = checker.AddExistingPods({
      MakePod("done").Phase("Succeeded").Container("c").HostPort("//80").Obj(),
      MakePod("failed").Phase("Failed").Container("c", {{"cpu", "2"}}).Obj(),
      MakePod("elsewhere").Node("node2").Container("c").HostPort("//80").Obj(),
      MakePod("running").Node("node1").Phase("Running").Container("c", {{"cpu", "1"}}).Obj(),
      MakePod("pending-here").Container("c", {{"cpu", "500m"}}).Obj(),
  });
  EXPECT_EQ(s.added, 2u);
  EXPECT_EQ(s.terminal, 2u);
  EXPECT_EQ(s.other_node, 1u);
  PodVerdict v =
      checker.Check(MakePod("new").Container("c", {{"cpu", "500m"}}).HostPort("//80").Obj());
  EXPECT_TRUE(v.admitted) << (v.failures.empty() ? "" : v.failures[0].detail);
  v = checker.Check(MakePod("new").Container("c", {{"cpu", "501m"}}).Obj());
  EXPECT_FALSE(v.admitted);
}

TEST_P(CheckerTest, APodNeverConflictsWithItsPreviousVersion) {
  Checker checker(TestNode(), Options(GetParam()));
  checker.AddExistingPods({MakePod("web")
                               .Namespace("kube-system")
                               .Container("c", {{"cpu", "1500m"}})
                               .HostPort("//8080")
                               .Obj()});
  // The updated manifest keeps the port and grows: it replaces the old version.
  PodVerdict v = checker.CheckAndAdmit(MakePod("web")
                                           .Namespace("kube-system")
                                           .Container("c", {{"cpu", "2"}})
                                           .HostPort("//8080")
                                           .Obj());
  EXPECT_TRUE(v.admitted) << (v.failures.empty() ? "" : v.failures[0].detail);
  EXPECT_TRUE(v.replaced_previous);
  EXPECT_EQ(checker.node_info().pods().size(), 1u);
  EXPECT_EQ(checker.node_info().requested().milli_cpu, 2000);
  // Same name in another namespace is another pod.
  v = checker.Check(MakePod("web").Namespace("default").Container("c").HostPort("//8080").Obj());
  EXPECT_FALSE(v.admitted);
}

TEST_P(CheckerTest, ARejectedNewVersionLeavesThePreviousOneInPlace) {
  Checker checker(TestNode(), Options(GetParam()));
  checker.AddExistingPods({MakePod("web").Container("c", {{"cpu", "1"}}).HostPort("//8080").Obj()});
  PodVerdict v = checker.CheckAndAdmit(MakePod("web").Container("c", {{"cpu", "3"}}).Obj());
  EXPECT_FALSE(v.admitted);
  EXPECT_EQ(checker.node_info().pods().size(), 1u);
  EXPECT_EQ(checker.node_info().requested().milli_cpu, 1000);
  EXPECT_NE(checker.node_info().used_ports().FindConflict(HostPort::Normalized("", "", 8080)),
            nullptr);
}

TEST_P(CheckerTest, CandidatesAreCheckedInOrderAndAdmittedOnesJoinTheNode) {
  Checker checker(TestNode(), Options(GetParam()));
  PodVerdict first = checker.CheckAndAdmit(MakePod("a").Container("c").HostPort("UDP//53").Obj());
  PodVerdict second =
      checker.CheckAndAdmit(MakePod("b").Container("c").HostPort("UDP/10.0.0.1/53").Obj());
  PodVerdict third = checker.CheckAndAdmit(MakePod("c").Container("c").HostPort("TCP//53").Obj());
  EXPECT_TRUE(first.admitted);
  EXPECT_FALSE(second.admitted);
  ASSERT_FALSE(second.failures.empty());
  EXPECT_EQ(second.failures[0].plugin, "NodePorts");
  EXPECT_NE(second.failures[0].detail.find("held by pod default/a"), std::string::npos);
  EXPECT_TRUE(third.admitted);
  EXPECT_EQ(checker.node_info().pods().size(), 2u);
}

INSTANTIATE_TEST_SUITE_P(Profiles, CheckerTest,
                         ::testing::Values(Profile::kScheduler, Profile::kKubelet),
                         [](const ::testing::TestParamInfo<Profile>& info) {
                           return std::string(ProfileName(info.param));
                         });

TEST(CheckerSchedulerTest, ReportsOnlyTheFirstFailingPluginInFilterOrder) {
  Checker checker(MakeNode("node1")
                      .Allocatable({{"pods", "110"}})
                      .Unschedulable()
                      .Taint("t", "", "NoSchedule")
                      .Obj(),
                  Options(Profile::kScheduler));
  checker.AddExistingPods({MakePod("holder").Container("c").HostPort("//80").Obj()});
  Pod pod = MakePod("p").Node("node2").Container("c", {{"cpu", "1"}}).HostPort("//80").Obj();
  PodVerdict v = checker.Check(pod);
  ASSERT_EQ(v.failures.size(), 1u);
  EXPECT_EQ(v.failures[0].plugin, "NodeUnschedulable");
  EXPECT_EQ(v.code, "UnschedulableAndUnresolvable");
  pod.tolerations.push_back({"", "Exists", "", "", std::nullopt});
  v = checker.Check(pod);
  EXPECT_EQ(v.failures[0].plugin, "NodeName");
  pod.node_name = "";
  v = checker.Check(pod);
  EXPECT_EQ(v.failures[0].plugin, "NodePorts");
  EXPECT_EQ(v.code, "Unschedulable");
  pod.containers[0].ports.clear();
  v = checker.Check(pod);
  ASSERT_EQ(v.failures.size(), 1u);
  EXPECT_EQ(v.failures[0].plugin, "NodeResourcesFit");
  EXPECT_EQ(v.failures[0].reason, "Insufficient cpu");
  EXPECT_TRUE(v.admit_reason.empty());
}

TEST(CheckerKubeletTest, ReportsEveryFailureAndTheFirstAsTheRejection) {
  Checker checker(MakeNode("node1").Allocatable({{"pods", "110"}}).Unschedulable().Obj(),
                  Options(Profile::kKubelet));
  checker.AddExistingPods({MakePod("holder").Container("c").HostPort("//80").Obj()});
  PodVerdict v = checker.Check(
      MakePod("p").Node("node2").Container("c", {{"cpu", "1"}}).HostPort("//80").Obj());
  ASSERT_EQ(v.failures.size(), 3u);
  EXPECT_EQ(v.failures[0].plugin, "NodeResourcesFit");
  EXPECT_EQ(v.failures[1].plugin, "NodeName");
  EXPECT_EQ(v.failures[2].plugin, "NodePorts");
  EXPECT_EQ(v.admit_reason, "OutOfcpu");
  EXPECT_EQ(v.admit_message,
            "Node didn't have enough resource: cpu, requested: 1000, used: 0, capacity: 0");
}

TEST(CheckerExistingPodsTest, ADuplicateCountsOnce) {
  // A mirror pod from --pods and the manifest it mirrors from --manifests share a name.
  Checker checker(TestNode(), Options(Profile::kKubelet));
  ExistingPodsSummary s = checker.AddExistingPods(
      {MakePod("etcd-node1").Container("c", {{"cpu", "1"}}).Obj(),
       MakePod("etcd-node1").Static().Container("c", {{"cpu", "1"}}).Obj()});
  EXPECT_EQ(s.added, 1u);
  EXPECT_EQ(s.replaced, 1u);
  EXPECT_EQ(checker.node_info().requested().milli_cpu, 1000);
}

// A critical candidate admitted by eviction: Check leaves the node as it was; CheckAndAdmit
// takes the victims off it, so the next candidate finds what they freed (minus the new pod).
TEST(CheckerKubeletTest, VictimsLeaveTheNodeWhenTheCriticalPodJoins) {
  Checker checker(TestNode(), Options(Profile::kKubelet));
  checker.AddExistingPods({MakePod("batch").Container("c", {{"cpu", "1500m"}}).Obj(),
                           MakePod("web").Container("c", {{"cpu", "500m"}}).Obj()});
  const Pod apiserver = MakePod("kube-apiserver").Static().Container("c", {{"cpu", "1"}}).Obj();
  PodVerdict v = checker.Check(apiserver);
  ASSERT_TRUE(v.admitted) << v.admit_message;
  ASSERT_EQ(v.evictions.size(), 1u);
  EXPECT_EQ(v.evictions[0].pod, "default/batch");
  EXPECT_EQ(v.critical, "static pod");
  EXPECT_EQ(checker.node_info().pods().size(), 2u) << "Check changes nothing";

  v = checker.CheckAndAdmit(apiserver);
  ASSERT_TRUE(v.admitted);
  EXPECT_EQ(checker.node_info().FindPod("default/batch"), nullptr);
  EXPECT_EQ(checker.node_info().requested().milli_cpu, 1500);
  // 500m are left: a plain pod of 500m fits, one of 501m does not.
  EXPECT_TRUE(checker.Check(MakePod("p").Container("c", {{"cpu", "500m"}}).Obj()).admitted);
  PodVerdict rejected = checker.Check(MakePod("p").Container("c", {{"cpu", "501m"}}).Obj());
  EXPECT_FALSE(rejected.admitted);
  EXPECT_EQ(rejected.admit_reason, "OutOfcpu");
  EXPECT_TRUE(rejected.evictions.empty());
}

}  // namespace
}  // namespace nodegate::admit
