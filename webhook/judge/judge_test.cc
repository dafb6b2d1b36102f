#include "webhook/judge/judge.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "admit/testing/builders.h"
#include "webhook/testing/records.h"

namespace nodegate::webhook {
namespace {

using admit::testing::MakeNode;
using admit::testing::MakePod;
using nlohmann::json;

json PodObject(const std::string& name, const std::string& node) {
  return json{
      {"metadata", {{"name", name}, {"namespace", "team"}, {"uid", "uid-" + name}}},
      {"spec",
       {{"nodeName", node},
        {"containers", json::array({{{"name", "c"},
                                     {"image", "busybox"},
                                     {"resources", {{"requests", {{"cpu", "100m"}}}}}}})}}}};
}

ReviewRequest Request(json object, const std::string& uid = "r-1") {
  ReviewRequest r;
  r.uid = uid;
  r.kind = "Pod";
  r.resource = "pods";
  r.operation = "CREATE";
  r.namespace_name = "team";
  const json& name = object["metadata"]["name"];
  r.name = name.is_string() ? name.get<std::string>() : "";
  r.username = "alice";
  r.groups = {"system:authenticated"};
  r.object = std::move(object);
  return r;
}

admit::CheckOptions Kubelet() {
  admit::CheckOptions options;
  options.profile = admit::Profile::kKubelet;
  return options;
}

class JudgeTest : public ::testing::Test {
 protected:
  JudgeTest() {
    states_.ReplaceNodes(
        testing::Nodes({MakeNode("n1")
                            .Label("kubernetes.io/os", "linux")
                            .Allocatable({{"cpu", "1"}, {"memory", "1Gi"}, {"pods", "3"}})
                            .Obj()}));
    states_.ReplacePods(testing::Recs({MakePod("dns")
                                           .Namespace("kube-system")
                                           .Uid("u-dns")
                                           .Node("n1")
                                           .Container("dns", {{"cpu", "800m"}})
                                           .HostPort("UDP//53")
                                           .Obj()}));
    context_.states = &states_;
    context_.synced = [this] { return synced_; };
    context_.read_node = [this](const std::string& node, Clock::time_point) {
      ++reads_;
      return read_result_(node);
    };
  }

  Judgement Run(const ReviewRequest& r) {
    return Judge(r, context_, Clock::now() + std::chrono::seconds(1));
  }

  NodeStates states_{Kubelet(), std::chrono::seconds(30)};
  JudgeContext context_;
  bool synced_ = true;
  int reads_ = 0;
  std::function<Result<std::optional<NodeSnapshot>>(const std::string&)> read_result_ =
      [](const std::string&) -> Result<std::optional<NodeSnapshot>> {
    return Error(kErrIo, "connection refused");
  };
};

TEST_F(JudgeTest, AllowsWhatItDoesNotJudge) {
  ReviewRequest update = Request(PodObject("a", "n1"));
  update.operation = "UPDATE";
  EXPECT_EQ(Run(update).reason, "not-a-pod-create");
  ReviewRequest binding = Request(PodObject("a", "n1"));
  binding.sub_resource = "binding";
  EXPECT_EQ(Run(binding).reason, "not-a-pod-create");
  ReviewRequest node_user = Request(PodObject("a", "n1"));
  node_user.groups = {"system:nodes", "system:authenticated"};
  EXPECT_EQ(Run(node_user).reason, "node-user");
  json mirror = PodObject("a", "n1");
  mirror["metadata"]["annotations"] = {{"kubernetes.io/config.mirror", "abc"}};
  EXPECT_EQ(Run(Request(mirror)).reason, "mirror-pod");
  EXPECT_EQ(Run(Request(PodObject("a", ""))).reason, "no-node-name");
  EXPECT_EQ(states_.AssumedPods(), 0u);
}

TEST_F(JudgeTest, DeniesATakenHostPortNamingTheHolder) {
  json pod = PodObject("dns2", "n1");
  pod["spec"]["containers"][0]["ports"] =
      json::array({{{"containerPort", 53}, {"hostPort", 53}, {"protocol", "UDP"}}});
  const Judgement j = Run(Request(pod));
  EXPECT_FALSE(j.response.allowed);
  EXPECT_EQ(j.response.code, 403);
  EXPECT_EQ(j.response.reason, "NodePorts");
  EXPECT_EQ(j.response.uid, "r-1");
  EXPECT_NE(j.response.message.find("kube-system/dns"), std::string::npos) << j.response.message;
  EXPECT_NE(j.response.message.find("Predicate NodePorts failed"), std::string::npos);
  EXPECT_EQ(j.verdict, "denied");
}

TEST_F(JudgeTest, DeniesOutOfCpuNamingTheConsumer) {
  json pod = PodObject("big", "n1");
  pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "500m";
  const Judgement j = Run(Request(pod));
  EXPECT_FALSE(j.response.allowed);
  EXPECT_EQ(j.response.reason, "OutOfcpu");
  EXPECT_NE(j.response.message.find(
                "Node didn't have enough resource: cpu, requested: 500, used: 800, capacity: 1000"),
            std::string::npos)
      << j.response.message;
  EXPECT_NE(j.response.message.find("kube-system/dns 800m"), std::string::npos)
      << j.response.message;
}

TEST_F(JudgeTest, CriticalPodIsAllowedWithTheVictimsNamed) {
  json pod = PodObject("critical", "n1");
  pod["spec"]["priority"] = 2000001000;
  pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "500m";
  const Judgement j = Run(Request(pod));
  EXPECT_TRUE(j.response.allowed);
  EXPECT_EQ(j.reason, "preemption");
  ASSERT_EQ(j.response.warnings.size(), 1u);
  EXPECT_NE(j.response.warnings[0].find("kube-system/dns"), std::string::npos);
  EXPECT_LE(j.response.warnings[0].size(), kMaxWarningBytes);
}

TEST_F(JudgeTest, UnknownNodeAndUnreadableNodeAreAllowedWithAWarning) {
  Judgement unknown = Run(Request(PodObject("a", "n9")));
  EXPECT_TRUE(unknown.response.allowed);
  EXPECT_EQ(unknown.reason, "unknown-node");
  ASSERT_EQ(unknown.response.warnings.size(), 1u);
  EXPECT_NE(unknown.response.warnings[0].find("n9"), std::string::npos);

  synced_ = false;
  Judgement unreadable = Run(Request(PodObject("a", "n1")));
  EXPECT_TRUE(unreadable.response.allowed);
  EXPECT_EQ(unreadable.reason, "node-unreadable");
  EXPECT_NE(unreadable.response.warnings.at(0).find("connection refused"), std::string::npos);
  EXPECT_EQ(reads_, 1);
}

TEST_F(JudgeTest, BeforeTheCacheSyncsOneReadOfTheNodeDecides) {
  synced_ = false;
  read_result_ = [](const std::string& node) -> Result<std::optional<NodeSnapshot>> {
    if (node != "n2") {
      return std::optional<NodeSnapshot>();
    }
    return std::optional<NodeSnapshot>(
        NodeSnapshot{MakeNode("n2").Allocatable({{"cpu", "1"}, {"pods", "1"}}).Obj(), {}});
  };
  EXPECT_TRUE(Run(Request(PodObject("a", "n2"), "r-a")).response.allowed);
  const Judgement second = Run(Request(PodObject("b", "n2"), "r-b"));
  EXPECT_FALSE(second.response.allowed);
  EXPECT_EQ(second.response.reason, "OutOfpods");
  EXPECT_EQ(Run(Request(PodObject("c", "n3"))).reason, "unknown-node");
}

TEST_F(JudgeTest, DryRunIsJudgedButAssumesNothing) {
  ReviewRequest r = Request(PodObject("a", "n1"));
  r.dry_run = true;
  EXPECT_TRUE(Run(r).response.allowed);
  EXPECT_EQ(states_.AssumedPods(), 0u);
  r.dry_run = false;
  EXPECT_TRUE(Run(r).response.allowed);
  EXPECT_EQ(states_.AssumedPods(), 1u);
}

TEST_F(JudgeTest, AnUnreadablePodIsAllowedWithTheReason) {
  json pod = PodObject("a", "n1");
  pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "lots";
  const Judgement j = Run(Request(pod));
  EXPECT_TRUE(j.response.allowed);
  EXPECT_EQ(j.reason, "unreadable-pod");
  EXPECT_NE(j.response.warnings.at(0).find("cpu"), std::string::npos);
}

TEST_F(JudgeTest, MetadataOfTheWrongTypeIsAnUnreadablePodNotACrash) {
  for (const json& bad : {json(5), json::array(), json(true)}) {
    json pod = PodObject("a", "n1");
    pod["metadata"]["name"] = bad;
    EXPECT_EQ(Run(Request(pod)).reason, "unreadable-pod");
    pod = PodObject("a", "n1");
    pod["metadata"]["namespace"] = bad;
    pod["metadata"]["generateName"] = bad;
    EXPECT_EQ(Run(Request(pod)).reason, "unreadable-pod");
  }
  json no_namespace = PodObject("b", "n1");
  no_namespace["metadata"].erase("namespace");
  ReviewRequest r = Request(no_namespace);
  r.namespace_name = "from-request";
  r.dry_run = true;
  EXPECT_TRUE(Run(r).response.allowed);
}

TEST_F(JudgeTest, AGeneratedNameIsStillUniquePerRequest) {
  json pod = PodObject("", "n1");
  pod["metadata"].erase("name");
  pod["metadata"].erase("uid");
  pod["metadata"]["generateName"] = "job-";
  EXPECT_TRUE(Run(Request(pod, "r-1")).response.allowed);
  EXPECT_TRUE(Run(Request(pod, "r-2")).response.allowed);
  EXPECT_EQ(states_.AssumedPods(), 2u);
  // The node takes 3 pods: dns and the two above.
  EXPECT_EQ(Run(Request(pod, "r-3")).response.reason, "OutOfpods");
}

// A stale cache's verdict could be wrong either way: the pod is allowed, unchecked, and the
// warning says why; nothing is assumed.
TEST_F(JudgeTest, AStaleCacheChecksNothing) {
  context_.stale = [] {
    return std::optional<std::string>(
        "the cache has had no word from the API server about "
        "pods for 75 s (--max-cache-age 60s)");
  };
  json pod = PodObject("dns2", "n1");
  pod["spec"]["containers"][0]["ports"] =
      json::array({{{"containerPort", 53}, {"hostPort", 53}, {"protocol", "UDP"}}});
  const Judgement j = Run(Request(pod));
  EXPECT_TRUE(j.response.allowed);
  EXPECT_EQ(j.reason, "cache-stale");
  ASSERT_EQ(j.response.warnings.size(), 1u);
  EXPECT_NE(j.response.warnings[0].find("not checked"), std::string::npos);
  EXPECT_LE(j.response.warnings[0].size(), kMaxWarningBytes);
  EXPECT_EQ(j.pod, "team/dns2");
  EXPECT_EQ(j.node, "n1");
  EXPECT_EQ(states_.AssumedPods(), 0u);
  context_.stale = [] { return std::optional<std::string>(); };
  EXPECT_EQ(Run(Request(pod)).reason, "NodePorts");
}

}  // namespace
}  // namespace nodegate::webhook
