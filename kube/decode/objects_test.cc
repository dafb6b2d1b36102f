#include "kube/decode/objects.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "admit/api/decode.h"
#include "admit/api/load.h"
#include "admit/check/pod_facts.h"

namespace nodegate::kube {
namespace {

using nlohmann::json;

std::string SourceDir() {
  const char* dir = std::getenv("NODEGATE_SOURCE_DIR");
  return dir != nullptr ? dir : ".";
}

// What the two ways must agree on.
void ExpectSameFacts(const admit::PodFacts& want, const admit::PodFacts& got,
                     const std::string& what) {
  SCOPED_TRACE(what);
  EXPECT_EQ(got.key, want.key);
  EXPECT_EQ(got.uid, want.uid);
  EXPECT_EQ(got.Owner(), want.Owner());
  EXPECT_EQ(got.priority, want.priority);
  EXPECT_EQ(got.static_pod, want.static_pod);
  EXPECT_EQ(got.mirror_pod, want.mirror_pod);
  EXPECT_EQ(got.qos, want.qos);
  EXPECT_EQ(got.start_time, want.start_time);
  for (bool frees : {false, true}) {
    const admit::Resource& a = frees ? want.EvictionFrees() : want.requests;
    const admit::Resource& b = frees ? got.EvictionFrees() : got.requests;
    EXPECT_EQ(b.milli_cpu, a.milli_cpu);
    EXPECT_EQ(b.memory, a.memory);
    EXPECT_EQ(b.ephemeral_storage, a.ephemeral_storage);
    EXPECT_EQ(b.scalar, a.scalar);
  }
  ASSERT_EQ(got.ports.size(), want.ports.size());
  for (size_t i = 0; i < want.ports.size(); ++i) {
    EXPECT_EQ(got.ports[i].port, want.ports[i].port);
    EXPECT_EQ(got.ports[i].container, want.ports[i].container);
  }
}

// Pods as kube-apiserver returns them (managedFields, status, probes...), each exercising one
// rule of what a pod holds: init containers and sidecars, pod-level resources, overhead,
// limits without requests, in-place resize status, hostNetwork ports, static and mirror pods,
// priority, a controller.
std::vector<json> ApiPods() {
  const json base = json::parse(R"({
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "web-7d4b9-x2z", "namespace": "shop", "uid": "8a1c-1", "resourceVersion": "812",
      "creationTimestamp": "2026-11-01T10:00:00Z",
      "labels": {"app": "web", "pod-template-hash": "7d4b9"},
      "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{\"a\":\"}\\\"{\"}",
                      "note": "x"},
      "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d4b9",
                           "uid": "rs-1", "controller": true, "blockOwnerDeletion": true}],
      "managedFields": [{"manager": "kube-controller-manager", "operation": "Update",
                         "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:containers": {}}}}]},
    "spec": {
      "nodeName": "n1", "priority": 0, "schedulerName": "default-scheduler",
      "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                       "effect": "NoExecute", "tolerationSeconds": 300}],
      "volumes": [{"name": "token", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}}],
      "containers": [
        {"name": "app", "image": "web:1", "ports": [{"containerPort": 8080, "protocol": "TCP"}],
         "env": [{"name": "A", "value": "b"}],
         "resources": {"requests": {"cpu": "250m", "memory": "128Mi"}, "limits": {"cpu": "1", "memory": "256Mi"}},
         "livenessProbe": {"httpGet": {"path": "/", "port": 8080}}},
        {"name": "log", "image": "log:1", "resources": {"limits": {"cpu": "100m", "memory": "64Mi"}}}]},
    "status": {"phase": "Running", "qosClass": "Burstable", "startTime": "2026-11-01T10:00:02Z",
      "conditions": [{"type": "Ready", "status": "True"}],
      "containerStatuses": [{"name": "app", "ready": true, "restartCount": 0, "image": "web:1",
                             "state": {"running": {"startedAt": "2026-11-01T10:00:04Z"}}}]}
  })");
  std::vector<json> out = {base};
  json p = base;
  p["metadata"]["name"] = "init-and-sidecar";
  p["spec"]["initContainers"] = json::parse(R"([
      {"name": "setup", "resources": {"requests": {"cpu": "2", "memory": "1Gi"}}},
      {"name": "proxy", "restartPolicy": "Always", "ports": [{"containerPort": 15001, "hostPort": 15001}],
       "resources": {"requests": {"cpu": "100m", "memory": "32Mi"}}}])");
  out.push_back(p);
  p = base;
  p["metadata"]["name"] = "pod-level";
  p["spec"]["resources"] = json::parse(R"({"requests": {"cpu": "3", "memory": "2Gi"},
                                           "limits": {"cpu": "3", "memory": "2Gi"}})");
  p["status"].erase("qosClass");
  out.push_back(p);
  p = base;
  p["metadata"]["name"] = "overhead-and-gpu";
  p["spec"]["overhead"] = {{"cpu", "50m"}, {"memory", "20Mi"}};
  p["spec"]["containers"][0]["resources"]["requests"]["example.com/gpu"] = 2;
  p["spec"]["containers"][0]["resources"]["limits"]["example.com/gpu"] = 2;
  p["spec"]["containers"][0]["resources"]["requests"]["ephemeral-storage"] = "1Gi";
  p["spec"]["containers"][0]["resources"]["requests"]["hugepages-2Mi"] = "4Mi";
  out.push_back(p);
  p = base;
  p["metadata"]["name"] = "resized";
  p["status"]["containerStatuses"][0]["allocatedResources"] = {{"cpu", "500m"},
                                                               {"memory", "128Mi"}};
  p["status"]["containerStatuses"][0]["resources"] =
      json::parse(R"({"requests": {"cpu": "400m", "memory": "128Mi"}})");
  out.push_back(p);
  p = base;
  p["metadata"]["name"] = "host-network";
  p["spec"]["hostNetwork"] = true;
  p["spec"]["containers"][0]["ports"] = json::parse(R"([{"containerPort": 53, "protocol": "UDP"},
                      {"containerPort": 9153, "hostIP": "10.0.0.1", "hostPort": 9153}])");
  out.push_back(p);
  p = base;
  p["metadata"]["name"] = "kube-apiserver-n1";
  p["metadata"]["namespace"] = "kube-system";
  p["metadata"]["annotations"] = {{"kubernetes.io/config.source", "file"},
                                  {"kubernetes.io/config.mirror", "abc"},
                                  {"kubernetes.io/config.hash", "abc"}};
  p["metadata"]["ownerReferences"] = json::parse(
      R"([{"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": "n", "controller": true}])");
  p["spec"]["priority"] = 2000001000;
  p["spec"]["priorityClassName"] = "system-node-critical";
  out.push_back(p);
  p = base;
  p["metadata"]["name"] = "best-effort-no-owner";
  p["metadata"].erase("ownerReferences");
  p["metadata"].erase("uid");
  for (json& c : p["spec"]["containers"]) {
    c.erase("resources");
  }
  p["status"].erase("qosClass");
  out.push_back(p);
  return out;
}

void Differential(const json& object, const std::string& what) {
  const admit::FeatureGates gates;
  auto full = admit::DecodePod(object, "pod");
  ASSERT_TRUE(full.ok()) << what << ": " << full.error().msg;
  const admit::PodFactsPtr want = admit::MakePodFacts(*full, gates, /*already_on_node=*/true);
  ObjectDecoder decoder(gates);
  auto record = decoder.Pod(object.dump());
  ASSERT_TRUE(record.ok()) << what << ": " << record.error().msg;
  ExpectSameFacts(*want, *record->facts, what);
  EXPECT_EQ(record->node_name, full->node_name);
  EXPECT_EQ(record->phase, full->phase);
}

// The fast path copies a part of each pod; what admit makes of that part must be what it makes
// of the whole pod.
TEST(ObjectDecoderTest, SameFactsAsTheWholePod) {
  for (const json& pod : ApiPods()) {
    Differential(pod, pod["metadata"]["name"].get<std::string>());
  }
}

// The same over the project's other pod fixtures (admit's test data, kubectl-made workloads).
TEST(ObjectDecoderTest, SameFactsOnTheFixtures) {
  size_t pods = 0;
  for (const char* dir : {"tests/admit/testdata/control-plane", "tests/admit/testdata/pods",
                          "tests/admit/testdata/candidates"}) {
    for (const auto& entry : std::filesystem::directory_iterator(SourceDir() + "/" + dir)) {
      auto text = admit::ReadInput(entry.path().string());
      ASSERT_TRUE(text.ok());
      auto documents = admit::ParseDocuments(*text, entry.path().string());
      ASSERT_TRUE(documents.ok()) << documents.error().msg;
      for (const admit::Document& d : *documents) {
        std::vector<json> objects;
        if (d.value.is_array()) {
          objects.assign(d.value.begin(), d.value.end());
        } else if (d.value.contains("items")) {
          objects.assign(d.value["items"].begin(), d.value["items"].end());
        } else {
          objects.push_back(d.value);
        }
        for (const json& o : objects) {
          if (o.value("kind", "Pod") == "Pod" && admit::DecodePod(o, "x").ok()) {
            Differential(o, entry.path().filename().string());
            ++pods;
          }
        }
      }
    }
  }
  EXPECT_GE(pods, 10u);
}

TEST(ObjectDecoderTest, ProjectionLeavesTheBulkBehind) {
  ObjectDecoder decoder{admit::FeatureGates()};
  json pod = ApiPods().front();
  auto projected = decoder.PodProjection(pod.dump());
  ASSERT_TRUE(projected.ok());
  EXPECT_FALSE(projected->at("metadata").contains("managedFields"));
  EXPECT_FALSE(projected->at("metadata").contains("labels"));
  EXPECT_FALSE(projected->at("metadata")
                   .at("annotations")
                   .contains("kubectl.kubernetes.io/last-applied-configuration"));
  EXPECT_FALSE(projected->at("spec").contains("volumes"));
  EXPECT_FALSE(projected->at("spec").at("containers")[0].contains("env"));
  EXPECT_FALSE(projected->at("status").contains("conditions"));
  EXPECT_EQ(projected->at("spec").at("containers")[0].at("resources"),
            pod["spec"]["containers"][0]["resources"]);
  EXPECT_EQ(projected->at("metadata").at("resourceVersion"), "812");
}

TEST(ObjectDecoderTest, StartTimeAndRequiredAntiAffinityKept) {
  ObjectDecoder decoder{admit::FeatureGates()};
  json pod = ApiPods().front();
  pod["spec"]["affinity"] = json::parse(R"({
      "nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []},
      "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
          {"labelSelector": {"matchLabels": {"x": "y"}}, "topologyKey": "zone"}]},
      "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
          {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}],
        "preferredDuringSchedulingIgnoredDuringExecution": [
          {"weight": 1, "podAffinityTerm": {"topologyKey": "zone"}}]}})");
  auto record = decoder.Pod(pod.dump());
  ASSERT_TRUE(record.ok()) << record.error().msg;
  EXPECT_EQ(record->facts->start_time, 1793527202);  // 2026-11-01T10:00:02Z
  EXPECT_EQ(
      json::parse(record->required_anti_affinity),
      pod["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]);
  auto plain = decoder.Pod(ApiPods().front().dump());
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->required_anti_affinity, "");
}

TEST(ObjectDecoderTest, KnownFactsAreShared) {
  ObjectDecoder decoder{admit::FeatureGates()};
  const json pod = ApiPods().front();
  auto first = decoder.Pod(pod.dump());
  ASSERT_TRUE(first.ok());
  int asked = 0;
  auto again = decoder.Pod(pod.dump(), [&](std::string_view uid, std::string_view rv) {
    ++asked;
    return uid == "8a1c-1" && rv == "812" ? first->facts : nullptr;
  });
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(asked, 1);
  EXPECT_EQ(again->facts.get(), first->facts.get());
}

TEST(ObjectDecoderTest, Nodes) {
  ObjectDecoder decoder{admit::FeatureGates()};
  auto node = decoder.Node(R"({"kind":"Node","metadata":{"name":"n1","resourceVersion":"5",
      "labels":{"kubernetes.io/os":"linux"}},"spec":{"taints":[{"key":"k","effect":"NoSchedule"}]},
      "status":{"capacity":{"cpu":"4","pods":"110"},"images":[{"names":["a"],"sizeBytes":1}]}})");
  ASSERT_TRUE(node.ok()) << node.error().msg;
  EXPECT_EQ(node->node->name, "n1");
  EXPECT_EQ(node->resource_version, "5");
  EXPECT_EQ(node->node->taints.size(), 1u);
  EXPECT_EQ(node->node->allocatable.at("cpu").MilliValue(), 4000);  // defaulted from capacity
}

TEST(ObjectDecoderTest, WatchEvents) {
  ObjectDecoder decoder{admit::FeatureGates()};
  json added = {{"type", "ADDED"}, {"object", ApiPods().front()}};
  auto event = decoder.Event(added.dump(), Kind::kPod);
  ASSERT_TRUE(event.ok()) << event.error().msg;
  EXPECT_EQ(event->type, WatchEvent::Type::kAdded);
  ASSERT_TRUE(event->pod.has_value());
  EXPECT_EQ(event->pod->facts->key, "shop/web-7d4b9-x2z");
  EXPECT_EQ(event->resource_version, "812");

  auto bookmark = decoder.Event(
      R"({"type":"BOOKMARK","object":{"kind":"Pod","metadata":{"resourceVersion":"900"}}})",
      Kind::kPod);
  ASSERT_TRUE(bookmark.ok());
  EXPECT_EQ(bookmark->type, WatchEvent::Type::kBookmark);
  EXPECT_EQ(bookmark->resource_version, "900");

  auto gone = decoder.Event(R"x({"type":"ERROR","object":{"kind":"Status","code":410,
      "message":"too old resource version: 1 (5)","reason":"Expired"}})x",
                            Kind::kPod);
  ASSERT_TRUE(gone.ok());
  EXPECT_EQ(gone->type, WatchEvent::Type::kError);
  EXPECT_EQ(gone->error_code, 410);

  // Well-formed, but no pod admit can read: kept as an event that says why.
  auto odd = decoder.Event(R"({"type":"MODIFIED","object":{"metadata":{"name":"x"}}})", Kind::kPod);
  ASSERT_TRUE(odd.ok());
  EXPECT_FALSE(odd->pod.has_value());
  EXPECT_NE(odd->unreadable, "");
}

TEST(ObjectDecoderTest, HostileInputIsAnErrorNotACrash) {
  ObjectDecoder decoder{admit::FeatureGates()};
  for (const char* text :
       {"", "{", "[]", "null", R"({"metadata":{"name":"a"},"spec":{"containers":"x"}})",
        R"({"metadata":{"name":"a"},"spec":{"containers":[{"name":"c","resources":
            {"requests":{"cpu":"lots"}}}]}})",
        R"({"metadata":{"name":"a"}} trailing)", R"({"a":1e999999})", "\xff\xfe{}",
        R"({"metadata":{"name":"a"},"spec":{"priority":99999999999999999999999}})"}) {
    EXPECT_FALSE(decoder.Pod(text).ok()) << text;
    EXPECT_FALSE(decoder.Event(text, Kind::kNode).ok()) << text;
  }
}

}  // namespace
}  // namespace nodegate::kube
