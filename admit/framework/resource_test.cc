#include "admit/framework/resource.h"

#include <gtest/gtest.h>

#include "admit/testing/builders.h"

namespace nodegate::admit {
namespace {

using testing::MakePod;

Resource Requests(const Pod& pod, PodRequestOptions options = {}) {
  return Resource::FromPodRequests(ComputePodRequests(pod, options));
}

// From the comment in pkg/scheduler/framework/plugins/noderesources/fit.go: init {2 cpu, 1G},
// {2 cpu, 3G}; app {2, 1G} + {1, 1G} -> {3 cpu, 3G}.
TEST(ComputePodRequestsTest, InitContainersAreAMaxNotASum) {
  const Pod pod = MakePod()
                      .InitContainer("i1", {{"cpu", "2"}, {"memory", "1G"}})
                      .InitContainer("i2", {{"cpu", "2"}, {"memory", "3G"}})
                      .Container("a1", {{"cpu", "2"}, {"memory", "1G"}})
                      .Container("a2", {{"cpu", "1"}, {"memory", "1G"}})
                      .Obj();
  const Resource r = Requests(pod);
  EXPECT_EQ(r.milli_cpu, 3000);
  EXPECT_EQ(r.memory, 3000000000);
}

TEST(ComputePodRequestsTest, SidecarsAddToAppAndToLaterInitContainers) {
  const Pod pod = MakePod()
                      .InitContainer("before", {{"cpu", "2500m"}})  // runs alone: 2.5
                      .SidecarContainer("proxy", {{"cpu", "1"}})    // keeps running
                      .InitContainer("after", {{"cpu", "2"}})       // runs with proxy: 3
                      .Container("app", {{"cpu", "1"}})             // app + proxy: 2
                      .Obj();
  EXPECT_EQ(Requests(pod).milli_cpu, 3000);
  // With the gate off restartPolicy is dropped: proxy is an ordinary init container.
  PodRequestOptions off;
  off.sidecars = false;
  EXPECT_EQ(Requests(pod, off).milli_cpu, 2500);
}

TEST(ComputePodRequestsTest, SidecarSumIsAPeakCandidate) {
  const Pod pod = MakePod()
                      .SidecarContainer("s1", {{"memory", "1Gi"}})
                      .SidecarContainer("s2", {{"memory", "1Gi"}})
                      .Container("app", {{"memory", "0"}})
                      .Obj();
  EXPECT_EQ(Requests(pod).memory, int64_t{2} << 30);
}

TEST(ComputePodRequestsTest, OverheadIsAddedAfterTheMax) {
  const Pod pod = MakePod()
                      .InitContainer("init", {{"cpu", "2"}})
                      .Container("app", {{"cpu", "1"}})
                      .Overhead({{"cpu", "250m"}, {"memory", "120Mi"}})
                      .Obj();
  const Resource r = Requests(pod);
  EXPECT_EQ(r.milli_cpu, 2250);
  EXPECT_EQ(r.memory, 120 << 20);
}

TEST(ComputePodRequestsTest, PodLevelResourcesReplaceSupportedResources) {
  const Pod pod = MakePod()
                      .Container("a", {{"cpu", "1"},
                                       {"memory", "1Gi"},
                                       {"ephemeral-storage", "1Gi"},
                                       {"example.com/gpu", "1"}})
                      .Container("b", {{"cpu", "1"}})
                      .PodRequests({{"cpu", "500m"},
                                    {"memory", "2Gi"},
                                    {"hugepages-2Mi", "4Mi"},
                                    {"ephemeral-storage", "9Gi"}})
                      .Overhead({{"cpu", "100m"}})
                      .Obj();
  Resource r = Requests(pod);
  EXPECT_EQ(r.milli_cpu, 600);                       // pod-level 500m + overhead
  EXPECT_EQ(r.memory, int64_t{2} << 30);             // pod-level
  EXPECT_EQ(r.scalar.at("hugepages-2Mi"), 4 << 20);  // hugepages are supported pod-level
  EXPECT_EQ(r.ephemeral_storage, 1 << 30);           // not supported pod-level: containers
  EXPECT_EQ(r.scalar.at("example.com/gpu"), 1);
  PodRequestOptions off;
  off.pod_level_resources = false;
  r = Requests(pod, off);
  EXPECT_EQ(r.milli_cpu, 2100);
  EXPECT_EQ(r.memory, 1 << 30);
}

TEST(ComputePodRequestsTest, SumsExactQuantitiesAndRoundsOncePerPod) {
  const Pod pod = MakePod()
                      .Container("a", {{"cpu", "0.0004"}})
                      .Container("b", {{"cpu", "0.0004"}})
                      .Container("c", {{"cpu", "0.0004"}})
                      .Obj();
  EXPECT_EQ(Requests(pod).milli_cpu, 2);  // 1.2m rounded up once
}

TEST(ComputePodRequestsTest, StatusResourcesCountForPodsOnTheNode) {
  const Pod pod = MakePod()
                      .Container("app", {{"cpu", "1"}})
                      .ContainerStatus("app", {{"cpu", "3"}})  // resize allocated, not in spec
                      .Obj();
  PodRequestOptions on_node;
  on_node.use_status_resources = true;
  EXPECT_EQ(Requests(pod, on_node).milli_cpu, 3000);
  EXPECT_EQ(Requests(pod).milli_cpu, 1000);  // a candidate is evaluated from its spec
}

TEST(ComputePodRequestsTest, BestEffortPodRequestsNothing) {
  // No default 100m/200Mi: those are for scoring only.
  EXPECT_TRUE(Requests(MakePod().Container("app").Obj()).IsZeroRequest());
}

TEST(ResourceTest, ScalarClassesAndPods) {
  ResourceList list = testing::Resources({{"cpu", "1500m"},
                                          {"memory", "1Gi"},
                                          {"pods", "110"},
                                          {"example.com/gpu", "2"},
                                          {"hugepages-1Gi", "2Gi"},
                                          {"kubernetes.io/batteries", "3"},
                                          {"attachable-volumes-csi-x", "4"},
                                          {"unknown-native", "9"}});
  Resource allocatable = Resource::FromResourceList(list);
  EXPECT_EQ(allocatable.milli_cpu, 1500);
  EXPECT_EQ(allocatable.allowed_pod_number, 110);
  EXPECT_EQ(allocatable.scalar.size(), 4u);  // "unknown-native" is neither counted nor checked
  EXPECT_EQ(allocatable.Get("example.com/gpu"), 2);
  EXPECT_EQ(Resource::FromPodRequests(list).allowed_pod_number, 0);  // a pod request is ignored
}

}  // namespace
}  // namespace nodegate::admit
