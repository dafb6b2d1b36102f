#include "admit/predicates/node_resources_fit/node_resources_fit.h"

#include <gtest/gtest.h>

#include <map>

#include "admit/check/pod_facts.h"
#include "admit/testing/builders.h"

namespace nodegate::admit::node_resources_fit {
namespace {

using testing::MakeNode;
using testing::MakePod;

constexpr char kExtendedA[] = "example.com/aaa";
constexpr char kExtendedB[] = "example.com/bbb";
constexpr char kKubernetesIoA[] = "kubernetes.io/something";
constexpr char kHugePageA[] = "hugepages-2Mi";

// R: upstream's framework.Resource literal (cpu in millicores, the rest in units).
struct R {
  int64_t milli_cpu = 0;
  int64_t memory = 0;
  std::map<std::string, int64_t> scalar = {};
  int64_t ephemeral = 0;
};

ResourceList ToList(const R& r) {
  ResourceList l;
  if (r.milli_cpu != 0) {
    l["cpu"] = Quantity::FromMilli(r.milli_cpu);
  }
  if (r.memory != 0) {
    l["memory"] = Quantity::FromUnits(r.memory);
  }
  if (r.ephemeral != 0) {
    l["ephemeral-storage"] = Quantity::FromUnits(r.ephemeral);
  }
  for (const auto& [name, v] : r.scalar) {
    l[name] = Quantity::FromUnits(v);
  }
  return l;
}

// NewResourcePod: upstream newResourcePod: one container per resource set.
Pod NewResourcePod(std::vector<R> containers, std::string name = "pod") {
  Pod pod = MakePod(std::move(name)).Obj();
  pod.containers.clear();
  for (size_t i = 0; i < containers.size(); ++i) {
    pod.containers.push_back(Container{"c" + std::to_string(i), {}, ToList(containers[i]), ""});
  }
  if (pod.containers.empty()) {
    pod.containers.push_back(Container{"c0", {}, {}, ""});
  }
  return pod;
}

// NewResourceInitPod: upstream newResourceInitPod: adds init containers.
Pod NewResourceInitPod(Pod pod, std::vector<R> init) {
  for (size_t i = 0; i < init.size(); ++i) {
    pod.init_containers.push_back(Container{"init" + std::to_string(i), {}, ToList(init[i]), ""});
  }
  return pod;
}

Pod WithOverhead(Pod pod, const R& overhead) {
  pod.overhead = ToList(overhead);
  return pod;
}

// The node of TestEnoughRequests: makeAllocatableResources(10, 20, 32, 5, 20, 5).
Node AllocatableNode(int64_t pods = 32) {
  Node n = MakeNode("node1").Obj();
  n.allocatable = ToList(R{10, 20, {{kExtendedA, 5}, {kHugePageA, 5}}, 20});
  n.allocatable["pods"] = Quantity::FromUnits(pods);
  return n;
}

struct Want {
  std::string reason;
  int64_t requested;
  int64_t used;
  int64_t capacity;
};

struct Case {
  std::string name;
  Pod pod;
  std::vector<Pod> existing;
  std::vector<Want> want;  // empty: fits
  Code want_code = Code::kUnschedulable;
};

void RunCases(const std::vector<Case>& cases, const Node& node_object,
              const FeatureGates& gates = FeatureGates()) {
  auto plugin = New(PredicateOptions{gates});
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    NodeInfo node(node_object);
    int i = 0;
    for (Pod e : c.existing) {
      e.name = "existing-" + std::to_string(i++);
      node.AddPod(MakePodFacts(e, gates, true));
    }
    Status s = plugin->Filter(MakePodInfo(c.pod, gates, false), node);
    ASSERT_EQ(s.failures().size(), c.want.size());
    if (c.want.empty()) {
      EXPECT_TRUE(s.IsSuccess());
      continue;
    }
    EXPECT_EQ(s.code(), c.want_code);
    for (size_t k = 0; k < c.want.size(); ++k) {
      const Failure& f = s.failures()[k];
      EXPECT_EQ(f.reason, c.want[k].reason);
      ASSERT_TRUE(f.insufficient.has_value());
      EXPECT_EQ(f.insufficient->requested, c.want[k].requested) << f.reason;
      EXPECT_EQ(f.insufficient->used, c.want[k].used) << f.reason;
      EXPECT_EQ(f.insufficient->capacity, c.want[k].capacity) << f.reason;
      EXPECT_FALSE(f.detail.empty());
    }
  }
}

// Cases from pkg/scheduler/framework/plugins/noderesources/fit_test.go TestEnoughRequests.
TEST(NodeResourcesFitTest, EnoughRequests) {
  const std::vector<Case> cases = {
      {"no resources requested always fits", NewResourcePod({}), {NewResourcePod({{10, 20}})}, {}},
      {"too many resources fails",
       NewResourcePod({{1, 1}}),
       {NewResourcePod({{10, 20}})},
       {{"Insufficient cpu", 1, 10, 10}, {"Insufficient memory", 1, 20, 20}}},
      {"too many resources fails due to init container cpu",
       NewResourceInitPod(NewResourcePod({{1, 1}}), {{3, 1}}),
       {NewResourcePod({{8, 19}})},
       {{"Insufficient cpu", 3, 8, 10}}},
      {"too many resources fails due to highest init container cpu",
       NewResourceInitPod(NewResourcePod({{1, 1}}), {{3, 1}, {2, 1}}),
       {NewResourcePod({{8, 19}})},
       {{"Insufficient cpu", 3, 8, 10}}},
      {"too many resources fails due to init container memory",
       NewResourceInitPod(NewResourcePod({{1, 1}}), {{1, 3}}),
       {NewResourcePod({{9, 19}})},
       {{"Insufficient memory", 3, 19, 20}}},
      {"too many resources fails due to highest init container memory",
       NewResourceInitPod(NewResourcePod({{1, 1}}), {{1, 3}, {1, 2}}),
       {NewResourcePod({{9, 19}})},
       {{"Insufficient memory", 3, 19, 20}}},
      {"init container fits because it's the max, not sum, of containers and init containers",
       NewResourceInitPod(NewResourcePod({{1, 1}}), {{1, 1}}),
       {NewResourcePod({{9, 19}})},
       {}},
      {"multiple init containers fit because it's the max, not sum, of containers and init "
       "containers",
       NewResourceInitPod(NewResourcePod({{1, 1}}), {{1, 1}, {1, 1}}),
       {NewResourcePod({{9, 19}})},
       {}},
      {"both resources fit", NewResourcePod({{1, 1}}), {NewResourcePod({{5, 5}})}, {}},
      {"one resource memory fits",
       NewResourcePod({{2, 1}}),
       {NewResourcePod({{9, 5}})},
       {{"Insufficient cpu", 2, 9, 10}}},
      {"one resource cpu fits",
       NewResourcePod({{1, 2}}),
       {NewResourcePod({{5, 19}})},
       {{"Insufficient memory", 2, 19, 20}}},
      {"equal edge case", NewResourcePod({{5, 1}}), {NewResourcePod({{5, 19}})}, {}},
      {"equal edge case for init container",
       NewResourceInitPod(NewResourcePod({{4, 1}}), {{5, 1}}),
       {NewResourcePod({{5, 19}})},
       {}},
      {"extended resource fits",
       NewResourcePod({{0, 0, {{kExtendedA, 1}}}}),
       {NewResourcePod({{0, 0}})},
       {}},
      {"extended resource fits for init container",
       NewResourceInitPod(NewResourcePod({{}}), {{0, 0, {{kExtendedA, 1}}}}),
       {NewResourcePod({{0, 0}})},
       {}},
      {"extended resource capacity enforced",
       NewResourcePod({{0, 0, {{kExtendedA, 10}}}}),
       {NewResourcePod({{0, 0}})},
       {{"Insufficient example.com/aaa", 10, 0, 5}},
       Code::kUnschedulableAndUnresolvable},
      {"extended resource capacity enforced for init container",
       NewResourceInitPod(NewResourcePod({{}}), {{0, 0, {{kExtendedA, 10}}}}),
       {NewResourcePod({{0, 0}})},
       {{"Insufficient example.com/aaa", 10, 0, 5}},
       Code::kUnschedulableAndUnresolvable},
      {"extended resource allocatable enforced",
       NewResourcePod({{0, 0, {{kExtendedA, 1}}}}),
       {NewResourcePod({{0, 0, {{kExtendedA, 5}}}})},
       {{"Insufficient example.com/aaa", 1, 5, 5}}},
      {"extended resource allocatable enforced for init container",
       NewResourceInitPod(NewResourcePod({{}}), {{0, 0, {{kExtendedA, 1}}}}),
       {NewResourcePod({{0, 0, {{kExtendedA, 5}}}})},
       {{"Insufficient example.com/aaa", 1, 5, 5}}},
      {"extended resource allocatable enforced for multiple containers",
       NewResourcePod({{0, 0, {{kExtendedA, 3}}}, {0, 0, {{kExtendedA, 3}}}}),
       {NewResourcePod({{0, 0, {{kExtendedA, 2}}}})},
       {{"Insufficient example.com/aaa", 6, 2, 5}},
       Code::kUnschedulableAndUnresolvable},
      {"extended resource allocatable admits multiple init containers",
       NewResourceInitPod(NewResourcePod({{}}),
                          {{0, 0, {{kExtendedA, 3}}}, {0, 0, {{kExtendedA, 3}}}}),
       {NewResourcePod({{0, 0, {{kExtendedA, 2}}}})},
       {}},
      {"extended resource allocatable enforced for multiple init containers",
       NewResourceInitPod(NewResourcePod({{}}),
                          {{0, 0, {{kExtendedA, 6}}}, {0, 0, {{kExtendedA, 3}}}}),
       {NewResourcePod({{0, 0, {{kExtendedA, 2}}}})},
       {{"Insufficient example.com/aaa", 6, 2, 5}},
       Code::kUnschedulableAndUnresolvable},
      {"extended resource allocatable enforced for unknown resource",
       NewResourcePod({{0, 0, {{kExtendedB, 1}}}}),
       {NewResourcePod({{0, 0}})},
       {{"Insufficient example.com/bbb", 1, 0, 0}},
       Code::kUnschedulableAndUnresolvable},
      {"extended resource allocatable enforced for unknown resource for init container",
       NewResourceInitPod(NewResourcePod({{}}), {{0, 0, {{kExtendedB, 1}}}}),
       {NewResourcePod({{0, 0}})},
       {{"Insufficient example.com/bbb", 1, 0, 0}},
       Code::kUnschedulableAndUnresolvable},
      {"kubernetes.io resource capacity enforced",
       NewResourcePod({{0, 0, {{kKubernetesIoA, 10}}}}),
       {NewResourcePod({{0, 0}})},
       {{"Insufficient kubernetes.io/something", 10, 0, 0}},
       Code::kUnschedulableAndUnresolvable},
      {"kubernetes.io resource capacity enforced for init container",
       NewResourceInitPod(NewResourcePod({{}}), {{0, 0, {{kKubernetesIoA, 10}}}}),
       {NewResourcePod({{0, 0}})},
       {{"Insufficient kubernetes.io/something", 10, 0, 0}},
       Code::kUnschedulableAndUnresolvable},
      {"hugepages resource capacity enforced",
       NewResourcePod({{0, 0, {{kHugePageA, 10}}}}),
       {NewResourcePod({{0, 0, {{kHugePageA, 0}}}})},
       {{"Insufficient hugepages-2Mi", 10, 0, 5}},
       Code::kUnschedulableAndUnresolvable},
      {"hugepages resource capacity enforced for init container",
       NewResourceInitPod(NewResourcePod({{}}), {{0, 0, {{kHugePageA, 10}}}}),
       {NewResourcePod({{0, 0, {{kHugePageA, 0}}}})},
       {{"Insufficient hugepages-2Mi", 10, 0, 5}},
       Code::kUnschedulableAndUnresolvable},
      {"hugepages resource allocatable enforced for multiple containers",
       NewResourcePod({{0, 0, {{kHugePageA, 3}}}, {0, 0, {{kHugePageA, 3}}}}),
       {NewResourcePod({{0, 0, {{kHugePageA, 2}}}})},
       {{"Insufficient hugepages-2Mi", 6, 2, 5}},
       Code::kUnschedulableAndUnresolvable},
      {"resources + pod overhead fits",
       WithOverhead(NewResourcePod({{1, 1}}), {3, 13}),
       {NewResourcePod({{5, 5}})},
       {}},
      {"requests + overhead does not fit for memory",
       WithOverhead(NewResourcePod({{1, 1}}), {1, 15}),
       {NewResourcePod({{5, 5}})},
       {{"Insufficient memory", 16, 5, 20}}},
      {"skip checking resource request with quantity zero",
       NewResourcePod({{1, 1, {{kExtendedA, 0}}}}),
       {NewResourcePod({{0, 0, {{kExtendedA, 6}}}})},
       {}},
      {"zero cpu and memory requests never fail, even on an over-committed node",
       NewResourcePod({{0, 0, {{kExtendedA, 1}}}}),
       {NewResourcePod({{20, 40}})},
       {}},
      {"all failures are reported in order: cpu, memory, ephemeral-storage, then scalars",
       NewResourcePod({{11, 21, {{kExtendedA, 6}, {kHugePageA, 6}}, 21}}),
       {},
       {{"Insufficient cpu", 11, 0, 10},
        {"Insufficient memory", 21, 0, 20},
        {"Insufficient ephemeral-storage", 21, 0, 20},
        {"Insufficient example.com/aaa", 6, 0, 5},
        {"Insufficient hugepages-2Mi", 6, 0, 5}},
       Code::kUnschedulableAndUnresolvable},
  };
  RunCases(cases, AllocatableNode());
}

// Sidecar cases after fit_test.go's restartable init container cases.
TEST(NodeResourcesFitTest, RestartableInitContainers) {
  Pod sidecar = MakePod("p")
                    .SidecarContainer("proxy", {{"cpu", "3m"}})
                    .InitContainer("setup", {{"cpu", "4m"}})
                    .Container("app", {{"cpu", "2m"}})
                    .Obj();
  // Requests: app 2 + proxy 3 = 5; setup runs with proxy: 7 -> 7m.
  const std::vector<Case> cases = {
      {"restartable init container fits", sidecar, {NewResourcePod({{3, 0}})}, {}},
      {"restartable init container is added to the requests",
       sidecar,
       {NewResourcePod({{4, 0}})},
       {{"Insufficient cpu", 7, 4, 10}}},
  };
  RunCases(cases, AllocatableNode());

  FeatureGates off;
  off.Set(kGateSidecarContainers, false);
  NodeInfo node(AllocatableNode());
  Status s = New(PredicateOptions{off})->Filter(MakePodInfo(sidecar, off, false), node);
  EXPECT_EQ(s.code(), Code::kUnschedulableAndUnresolvable);
  EXPECT_EQ(s.Reasons(), std::vector<std::string>{std::string(kErrReasonSidecarGateOff)});
}

// Cases from fit_test.go TestNotEnoughRequests: a node that allows one pod, which it has.
TEST(NodeResourcesFitTest, NotEnoughRequests) {
  const std::vector<Case> cases = {
      {"even without specified resources, predicate fails when there's no space for additional "
       "pod",
       NewResourcePod({}),
       {NewResourcePod({{10, 20}})},
       {{"Too many pods", 1, 1, 1}}},
      {"even if both resources fit, predicate fails when there's no space for additional pod",
       NewResourcePod({{1, 1}}),
       {NewResourcePod({{5, 5}})},
       {{"Too many pods", 1, 1, 1}}},
      {"even for equal edge case, predicate fails when there's no space for additional pod",
       NewResourcePod({{5, 1}}),
       {NewResourcePod({{5, 19}})},
       {{"Too many pods", 1, 1, 1}}},
      {"even for equal edge case, predicate fails when there's no space for additional pod due "
       "to init container",
       NewResourceInitPod(NewResourcePod({{5, 1}}), {{5, 1}}),
       {NewResourcePod({{5, 19}})},
       {{"Too many pods", 1, 1, 1}}},
  };
  RunCases(cases, AllocatableNode(/*pods=*/1));
}

TEST(NodeResourcesFitTest, NodeWithoutPodsInAllocatableAllowsNone) {
  Node node = MakeNode().Allocatable({{"cpu", "4"}, {"memory", "8Gi"}}).Obj();
  RunCases({{"no pods entry", NewResourcePod({}), {}, {{"Too many pods", 1, 0, 0}}}}, node);
}

// Cases from fit_test.go TestStorageRequests.
TEST(NodeResourcesFitTest, StorageRequests) {
  const std::vector<Case> cases = {
      {"empty storage requested, and pod fits",
       NewResourcePod({{1, 1}}),
       {NewResourcePod({{2, 10}})},
       {}},
      {"storage ephemeral local storage request exceeds allocatable",
       NewResourcePod({{0, 0, {}, 25}}),
       {NewResourcePod({{2, 2}})},
       {{"Insufficient ephemeral-storage", 25, 0, 20}},
       Code::kUnschedulableAndUnresolvable},
      {"ephemeral local storage is sufficient",
       NewResourcePod({{0, 0, {}, 10}}),
       {NewResourcePod({{2, 2, {}, 10}})},
       {}},
      {"ephemeral local storage is insufficient with other pods",
       NewResourcePod({{0, 0, {}, 11}}),
       {NewResourcePod({{2, 2, {}, 10}})},
       {{"Insufficient ephemeral-storage", 11, 10, 20}}},
      {"pod has no ephemeral storage request",
       NewResourcePod({{1, 1}}),
       {NewResourcePod({{2, 2, {}, 20}})},
       {}},
  };
  RunCases(cases, AllocatableNode());
}

TEST(NodeResourcesFitTest, PodLevelResourcesFollowTheGate) {
  Pod pod = MakePod("p").Container("a", {{"cpu", "8m"}}).PodRequests({{"cpu", "2m"}}).Obj();
  const Case fits{
      "pod-level request replaces the container sum", pod, {NewResourcePod({{5, 0}})}, {}};
  RunCases({fits}, AllocatableNode());
  FeatureGates off;
  off.Set(kGatePodLevelResources, false);
  const Case fails{"with the gate off the containers count",
                   pod,
                   {NewResourcePod({{5, 0}})},
                   {{"Insufficient cpu", 8, 5, 10}}};
  RunCases({fails}, AllocatableNode(), off);
}

TEST(NodeResourcesFitTest, DetailNamesRequestAllocatableUseAndTopConsumers) {
  const FeatureGates gates;
  NodeInfo node(MakeNode().Allocatable({{"cpu", "2"}, {"memory", "4Gi"}, {"pods", "110"}}).Obj());
  node.AddPod(MakePodFacts(MakePod("big").Container("c", {{"cpu", "1200m"}}).Obj(), gates, true));
  node.AddPod(MakePodFacts(MakePod("mid").Container("c", {{"cpu", "500m"}}).Obj(), gates, true));
  node.AddPod(MakePodFacts(MakePod("small").Container("c", {{"cpu", "100m"}}).Obj(), gates, true));
  node.AddPod(MakePodFacts(MakePod("tiny").Container("c", {{"cpu", "50m"}}).Obj(), gates, true));
  node.AddPod(MakePodFacts(MakePod("none").Container("c").Obj(), gates, true));
  Status s =
      New(PredicateOptions{gates})
          ->Filter(MakePodInfo(MakePod("p").Container("c", {{"cpu", "500m"}}).Obj(), gates, false),
                   node);
  ASSERT_EQ(s.failures().size(), 1u);
  EXPECT_EQ(s.failures()[0].detail,
            "cpu: the pod requests 500m, the node has 2 allocatable and 1850m already requested "
            "by 4 pod(s), leaving 150m; top: default/big 1200m, default/mid 500m, "
            "default/small 100m");
}

}  // namespace
}  // namespace nodegate::admit::node_resources_fit
