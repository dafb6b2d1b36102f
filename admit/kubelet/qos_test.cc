#include "admit/kubelet/qos.h"

#include <gtest/gtest.h>

#include "admit/testing/builders.h"

namespace nodegate::admit::kubelet {
namespace {

using testing::MakePod;

// Cases after pkg/apis/core/v1/helper/qos/qos_test.go TestComputePodQOS. Requests are already
// defaulted from limits, as the API server stores pods (Limits() does that).
TEST(QosTest, ComputePodQos) {
  const testing::ResourcePairs g = {{"cpu", "100m"}, {"memory", "100Mi"}};
  struct Case {
    std::string name;
    Pod pod;
    std::string want;
    bool pod_level_resources = true;
  };
  const std::vector<Case> cases = {
      {"no resources", MakePod().Container("a").Container("b").Obj(), "BestEffort"},
      {"only resources QoS ignores", MakePod().Container("a", {{"example.com/gpu", "1"}}).Obj(),
       "BestEffort"},
      {"requests and equal limits of cpu and memory", MakePod().Container("a").Limits(g).Obj(),
       "Guaranteed"},
      {"limits only (requests default to them)",
       MakePod().Container("a").Limits(g).Container("b").Limits(g).Obj(), "Guaranteed"},
      {"guaranteed with an extra extended resource",
       MakePod().Container("a", {{"example.com/gpu", "1"}}).Limits(g).Obj(), "Guaranteed"},
      {"requests only", MakePod().Container("a", g).Obj(), "Burstable"},
      {"limits above requests",
       MakePod()
           .Container("a", {{"cpu", "100m"}, {"memory", "100Mi"}})
           .Limits({{"cpu", "200m"}, {"memory", "100Mi"}})
           .Obj(),
       "Burstable"},
      {"cpu limit only", MakePod().Container("a").Limits({{"cpu", "100m"}}).Obj(), "Burstable"},
      {"one guaranteed container and one best-effort",
       MakePod().Container("a").Limits(g).Container("b").Obj(), "Burstable"},
      {"a burstable init container", MakePod().InitContainer("i", g).Container("a").Limits(g).Obj(),
       "Burstable"},
      {"pod-level resources decide", MakePod().Container("a", {{"cpu", "10m"}}).PodLimits(g).Obj(),
       "Guaranteed"},
      {"pod-level requests without limits", MakePod().Container("a").Limits(g).PodRequests(g).Obj(),
       "Burstable"},
      {"pod-level resources ignored with the gate off",
       MakePod().Container("a", {{"cpu", "10m"}}).PodLimits(g).Obj(), "Burstable", false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(QosClassName(ComputePodQos(c.pod, c.pod_level_resources)), c.want);
  }
}

TEST(QosTest, StatusQosClassIsTakenAsItIs) {
  const Pod pod = MakePod().Container("a", {{"cpu", "1"}}).QosClass("Guaranteed").Obj();
  EXPECT_EQ(GetPodQos(pod, true), QosClass::kGuaranteed);
  EXPECT_EQ(ComputePodQos(pod, true), QosClass::kBurstable);
  EXPECT_EQ(GetPodQos(MakePod().Container("a", {{"cpu", "1"}}).Obj(), true), QosClass::kBurstable);
}

}  // namespace
}  // namespace nodegate::admit::kubelet
