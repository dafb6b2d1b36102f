// Decoding and loading of pods and nodes: every input form, defaulting, and that malformed input
// turns into an error naming the file and the field instead of a crash.

#include "admit/api/decode.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "admit/api/load.h"
#include "lib/base/result.h"

namespace nodegate::admit {
namespace {

using nlohmann::json;

Result<std::vector<Pod>> PodsFrom(std::string_view text, bool allow_workloads = false) {
  NG_ASSIGN_OR_RETURN(auto docs, ParseDocuments(text, "input.yaml"));
  return PodsFromDocuments(docs, allow_workloads);
}

std::string ErrorOf(std::string_view text, bool allow_workloads = false) {
  auto pods = PodsFrom(text, allow_workloads);
  return pods.ok() ? "<no error>" : pods.error().msg;
}

constexpr char kPodYaml[] = R"(
apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: web, kubernetes.io/os: linux}
  annotations: {note: "x"}
spec:
  nodeName: node1
  priority: 2000001000
  os: {name: linux}
  securityContext: {supplementalGroupsPolicy: Strict}
  nodeSelector: {disk: ssd}
  tolerations:
    - {key: dedicated, operator: Equal, value: web, effect: NoSchedule, tolerationSeconds: 30}
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
          - matchExpressions: [{key: zone, operator: In, values: [a, b]}]
            matchFields: [{key: metadata.name, operator: NotIn, values: [node9]}]
  overhead: {cpu: 250m}
  resources: {limits: {cpu: "2"}}
  initContainers:
    - name: proxy
      restartPolicy: Always
      ports: [{containerPort: 15001, hostPort: 15001}]
  containers:
    - name: app
      ports:
        - {containerPort: 80, hostPort: 8080, hostIP: 127.0.0.1, protocol: UDP}
      resources:
        requests: {cpu: 0.5, memory: 1e3}
        limits: {memory: 2Gi, example.com/gpu: 1}
status:
  phase: Running
  containerStatuses:
    - name: app
      allocatedResources: {cpu: "1"}
      resources: {requests: {cpu: 750m}}
)";

TEST(DecodePodTest, EveryFieldTheCheckerReads) {
  auto pods = PodsFrom(kPodYaml);
  ASSERT_TRUE(pods.ok()) << pods.error().msg;
  ASSERT_EQ(pods->size(), 1u);
  const Pod& p = pods->front();
  EXPECT_EQ(p.Key(), "default/web");  // namespace defaults to "default"
  EXPECT_EQ(p.labels.at("kubernetes.io/os"), "linux");
  EXPECT_EQ(p.node_name, "node1");
  EXPECT_EQ(p.priority, 2000001000);
  EXPECT_EQ(p.os_name, "linux");
  EXPECT_EQ(p.supplemental_groups_policy, "Strict");
  EXPECT_EQ(p.node_selector.at("disk"), "ssd");
  ASSERT_EQ(p.tolerations.size(), 1u);
  EXPECT_EQ(p.tolerations[0].toleration_seconds, 30);
  ASSERT_TRUE(p.required_node_affinity.has_value());
  EXPECT_EQ(p.required_node_affinity->terms[0].match_expressions[0].values,
            (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(p.required_node_affinity->terms[0].match_fields[0].op, "NotIn");
  EXPECT_EQ(p.overhead.at("cpu").MilliValue(), 250);
  ASSERT_TRUE(p.pod_level_requests.has_value());
  EXPECT_EQ(p.pod_level_requests->at("cpu").Value(), 2);  // requests default to limits
  EXPECT_EQ(p.init_containers[0].restart_policy, "Always");
  const Container& app = p.containers[0];
  EXPECT_EQ(app.ports[0].host_ip, "127.0.0.1");
  EXPECT_EQ(app.ports[0].protocol, "UDP");
  EXPECT_EQ(app.requests.at("cpu").MilliValue(), 500);       // a YAML float is a quantity
  EXPECT_EQ(app.requests.at("memory").Value(), 1000);        // the explicit request wins
  EXPECT_EQ(app.requests.at("example.com/gpu").Value(), 1);  // defaulted from limits
  EXPECT_EQ(p.phase, "Running");
  ASSERT_EQ(p.container_statuses.size(), 1u);
  EXPECT_EQ(p.container_statuses[0].resources_requests->at("cpu").MilliValue(), 750);
}

TEST(DecodePodTest, HostNetworkCopiesContainerPortsToHostPorts) {
  auto pods = PodsFrom(R"({"metadata":{"name":"dns"},"spec":{"hostNetwork":true,
    "initContainers":[{"name":"i","ports":[{"containerPort":9}]}],
    "containers":[{"name":"c","ports":[{"containerPort":53,"protocol":"UDP"},
                                       {"containerPort":8080,"hostPort":18080}]}]}})");
  ASSERT_TRUE(pods.ok()) << pods.error().msg;
  EXPECT_EQ(pods->front().containers[0].ports[0].host_port, 53);
  EXPECT_EQ(pods->front().containers[0].ports[1].host_port, 18080);  // explicit stays
  EXPECT_EQ(pods->front().init_containers[0].ports[0].host_port, 9);
}

struct BadInput {
  std::string name;
  std::string text;
  std::string want;  // the error must contain this (file and field)
};

TEST(DecodePodTest, MalformedInputNamesFileAndField) {
  const std::string head = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n";
  const std::vector<BadInput> cases = {
      {"invalid quantity",
       head + "  containers: [{name: c, resources: {requests: {cpu: 1 cpu}}}]\n",
       "input.yaml: spec.containers[0].resources.requests[cpu]: invalid quantity \"1 cpu\": "
       "quantities must match the regular expression"},
      {"invalid quantity suffix",
       head + "  containers: [{name: c, resources: {limits: {memory: 1K}}}]\n",
       "resources.limits[memory]: invalid quantity \"1K\": unable to parse quantity's suffix"},
      {"negative request", head + "  containers: [{name: c, resources: {requests: {cpu: -1}}}]\n",
       "requests[cpu]: must be greater than or equal to 0"},
      {"quoted hostPort is a string",
       head + "  containers: [{name: c, ports: [{containerPort: 80, hostPort: \"8080\"}]}]\n",
       "spec.containers[0].ports[0].hostPort: expected integer, got string"},
      {"hostPort out of range",
       head + "  containers: [{name: c, ports: [{containerPort: 80, hostPort: 70000}]}]\n",
       "hostPort: must be between 0 and 65535, got 70000"},
      {"containerPort required", head + "  containers: [{name: c, ports: [{hostPort: 80}]}]\n",
       "spec.containers[0].ports[0].containerPort: required"},
      {"unknown protocol",
       head + "  containers: [{name: c, ports: [{containerPort: 80, protocol: HTTP}]}]\n",
       "ports[0].protocol: unsupported value \"HTTP\""},
      {"bad hostIP",
       head + "  containers: [{name: c, ports: [{containerPort: 80, hostIP: localhost}]}]\n",
       "ports[0].hostIP: must be a valid IP address"},
      {"nodeSelector value of the wrong type",
       head + "  nodeSelector: {ssd: true}\n  containers: [{name: c}]\n",
       "spec.nodeSelector[ssd]: expected string, got boolean"},
      {"containers not a list", head + "  containers: {name: c}\n",
       "spec.containers: expected list, got object"},
      {"no containers", head + "  containers: []\n", "spec.containers: required"},
      {"unknown affinity operator",
       head +
           "  affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: "
           "{nodeSelectorTerms: [{matchExpressions: [{key: a, operator: Like, values: [b]}]}]}}}\n"
           "  containers: [{name: c}]\n",
       "nodeSelectorTerms[0].matchExpressions[0].operator: unsupported value \"Like\""},
      {"unknown toleration operator",
       head + "  tolerations: [{key: a, operator: Contains}]\n  containers: [{name: c}]\n",
       "spec.tolerations[0].operator: unsupported value \"Contains\""},
      {"unknown toleration effect",
       head + "  tolerations: [{key: a, operator: Exists, effect: NoWay}]\n  containers: [{name: "
              "c}]\n",
       "spec.tolerations[0].effect: unsupported value \"NoWay\""},
      {"Exists with a value",
       head + "  tolerations: [{key: a, operator: Exists, value: b}]\n  containers: [{name: c}]\n",
       "spec.tolerations[0].value: must be empty when operator is Exists"},
      {"init container restartPolicy",
       head + "  initContainers: [{name: i, restartPolicy: Never}]\n  containers: [{name: c}]\n",
       "spec.initContainers[0].restartPolicy: unsupported value \"Never\""},
      {"missing name", "kind: Pod\nmetadata: {}\nspec: {containers: [{name: c}]}\n",
       "input.yaml: metadata.name: required"},
      {"metadata not an object", "kind: Pod\nmetadata: 5\nspec: {}\n",
       "metadata: expected object, got integer"},
      {"hostNetwork not a boolean", head + "  hostNetwork: \"yes\"\n  containers: [{name: c}]\n",
       "spec.hostNetwork: expected boolean, got string"},
      {"unsupported kind", "kind: Service\nmetadata: {name: s}\n",
       "input.yaml: kind: unsupported kind \"Service\""},
      {"a workload is not a pod on the node",
       "kind: DaemonSet\nmetadata: {name: d}\nspec: {template: {spec: {containers: [{name: "
       "c}]}}}\n",
       "unsupported kind \"DaemonSet\""},
      {"scalar document", "just a string\n", "input.yaml: expected an object, got a string"},
      {"items not a list", "kind: PodList\nitems: 5\n", "input.yaml: items: expected list"},
      {"second document is bad",
       head + "  containers: [{name: c}]\n---\nkind: Pod\nmetadata: {name: q}\nspec: {containers: "
              "3}\n",
       "input.yaml: document 2: spec.containers: expected list, got integer"},
      {"list item is bad",
       "kind: PodList\nitems: [{metadata: {name: a}, spec: {containers: [{name: 1}]}}]\n",
       "input.yaml: items[0]: spec.containers[0].name: expected string, got integer"},
  };
  for (const BadInput& c : cases) {
    EXPECT_NE(ErrorOf(c.text).find(c.want), std::string::npos)
        << c.name << "\n  got: " << ErrorOf(c.text) << "\n  want: " << c.want;
  }
}

TEST(ParseDocumentsTest, InputForms) {
  const std::string pod =
      R"({"kind":"Pod","metadata":{"name":"NAME"},"spec":{"containers":[{"name":"c"}]}})";
  auto with = [&](const std::string& name) {
    std::string s = pod;
    return s.replace(s.find("NAME"), 4, name);
  };
  struct Form {
    std::string name;
    std::string text;
    size_t pods;
  };
  const std::vector<Form> forms = {
      {"single JSON pod", with("a"), 1},
      {"JSON PodList", R"({"kind":"PodList","items":[)" + with("a") + "," + with("b") + "]}", 2},
      {"JSON List skips other kinds",
       R"({"kind":"List","items":[)" + with("a") +
           R"(,{"kind":"Service","metadata":{"name":"s"}}]})",
       1},
      {"JSON array", "[" + with("a") + "," + with("b") + "," + with("c") + "]", 3},
      {"empty PodList", R"({"kind":"PodList","items":[]})", 0},
      {"multi-document YAML with empty documents",
       "---\nkind: Pod\nmetadata: {name: a}\nspec: {containers: [{name: c}]}\n---\n---\n"
       "kind: Pod\nmetadata: {name: b}\nspec: {containers: [{name: c}]}\n",
       2},
      {"YAML PodList",
       "kind: PodList\nitems:\n- metadata: {name: a}\n  spec: {containers: [{name: c}]}\n", 1},
  };
  for (const Form& f : forms) {
    auto pods = PodsFrom(f.text);
    ASSERT_TRUE(pods.ok()) << f.name << ": " << pods.error().msg;
    EXPECT_EQ(pods->size(), f.pods) << f.name;
  }
}

TEST(ParseDocumentsTest, WorkloadTemplatesAreCandidates) {
  auto pods = PodsFrom(
      "kind: DaemonSet\nmetadata: {name: dns, namespace: kube-system}\nspec:\n  template:\n"
      "    metadata: {labels: {app: dns}}\n"
      "    spec: {hostNetwork: true, containers: [{name: c, ports: [{containerPort: 53}]}]}\n",
      /*allow_workloads=*/true);
  ASSERT_TRUE(pods.ok()) << pods.error().msg;
  EXPECT_EQ(pods->front().Key(), "kube-system/dns");
  EXPECT_EQ(pods->front().labels.at("app"), "dns");
  EXPECT_EQ(pods->front().containers[0].ports[0].host_port, 53);
}

TEST(ParseDocumentsTest, HostileInputIsBounded) {
  struct Hostile {
    std::string name;
    std::string text;
    std::string want;
  };
  // A billion-laughs document: 9 levels of 9 aliases expand to 9^9 values.
  std::string bomb =
      "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n";
  for (char c = 'b'; c <= 'j'; ++c) {
    const char prev = static_cast<char>(c - 1);
    bomb += std::string(1, c) + ": &" + c + " [";
    for (int i = 0; i < 9; ++i) {
      bomb += std::string(i ? ",*" : "*") + prev;
    }
    bomb += "]\n";
  }
  const std::vector<Hostile> cases = {
      {"empty file", "", "input.yaml: empty: no objects"},
      {"blank file", " \n\t\n", "input.yaml: empty: no objects"},
      {"only document separators", "---\n---\n", "input.yaml: empty: no objects"},
      {"YAML bomb", bomb, "too many values"},
      {"deeply nested JSON", std::string(100000, '[') + std::string(100000, ']'),
       "JSON nesting deeper than"},
      {"deeply nested YAML flow", "a: " + std::string(100000, '[') + std::string(100000, ']'),
       "input.yaml: YAML nesting deeper than 64 levels"},
      {"deeply nested YAML block",
       [] {
         std::string s;
         for (int i = 0; i < 200; ++i) {
           s += std::string(static_cast<size_t>(i) * 2, ' ') + "k:\n";
         }
         return s;
       }(),
       "nesting deeper than"},
      {"invalid JSON", "{\"kind\": \"Pod\",", "input.yaml: invalid JSON"},
      {"invalid YAML", "kind: Pod\n  metadata: [unclosed\n", "input.yaml: invalid YAML"},
      {"binary garbage", std::string("\x00\x01\x02\xff", 4), "input.yaml:"},
  };
  for (const Hostile& c : cases) {
    EXPECT_NE(ErrorOf(c.text).find(c.want), std::string::npos)
        << c.name << "\n  got: " << ErrorOf(c.text);
  }
}

// The kubelet's decoder (sigs.k8s.io/yaml, strict) refuses a key given twice in a mapping;
// a plain YAML loader keeps the last value, which would check another pod than the kubelet runs.
TEST(ParseDocumentsTest, YamlDuplicateKeysAreRefusedNamingTheKey) {
  EXPECT_EQ(
      ErrorOf("kind: Pod\nmetadata:\n  name: a\n  name: b\nspec: {containers: [{name: c}]}\n"),
      "input.yaml: line 4: key \"name\" already set in this mapping (duplicate keys are "
      "refused, as the kubelet refuses them)");
  EXPECT_NE(ErrorOf("kind: Pod\nmetadata: {name: a}\nspec:\n  containers:\n  - name: c\n"
                    "    ports: [{containerPort: 80, hostPort: 80, hostPort: 81}]\n")
                .find("key \"hostPort\" already set"),
            std::string::npos);
  // The same key in different mappings is fine.
  EXPECT_TRUE(PodsFrom("kind: Pod\nmetadata: {name: a, labels: {name: x}}\n"
                       "spec: {containers: [{name: c}]}\n")
                  .ok());
}

// 2^63 does not fit an int64: it must not read as -2^63, and the message shows it as written.
TEST(DecodePodTest, PortPastInt64ShowsTheNumberAsGiven) {
  const std::string want =
      "spec.containers[0].ports[0].hostPort: must be between 0 and 65535, got "
      "9223372036854775808";
  const std::string json_error =
      ErrorOf(R"({"kind":"Pod","metadata":{"name":"a"},"spec":{"containers":[{"name":"c","ports":[)"
              R"({"containerPort":80,"hostPort":9223372036854775808}]}]}})");
  EXPECT_NE(json_error.find(want), std::string::npos) << json_error;
  const std::string yaml_error = ErrorOf(
      "kind: Pod\nmetadata: {name: a}\nspec: {containers: [{name: c, ports: "
      "[{containerPort: 80, hostPort: 9223372036854775808}]}]}\n");
  EXPECT_NE(yaml_error.find(want), std::string::npos) << yaml_error;
  EXPECT_EQ(json_error.find("-9223372036854775808"), std::string::npos) << json_error;
}

TEST(ParseDocumentsTest, QuotedScalarsStayStrings) {
  auto pods = PodsFrom(
      "kind: Pod\nmetadata: {name: p, labels: {version: \"1.0\", enabled: 'true'}}\n"
      "spec: {containers: [{name: c}]}\n");
  ASSERT_TRUE(pods.ok()) << pods.error().msg;
  EXPECT_EQ(pods->front().labels.at("version"), "1.0");
  EXPECT_EQ(pods->front().labels.at("enabled"), "true");
}

TEST(DecodeNodeTest, AllocatableDefaultsToCapacityAndTaintsAreValidated) {
  auto docs = ParseDocuments(
      "kind: Node\nmetadata: {name: n1, labels: {zone: a}}\n"
      "spec: {unschedulable: true, taints: [{key: k, value: v, effect: NoExecute}]}\n"
      "status: {capacity: {cpu: 4, memory: 8Gi, pods: 110}, features: {supplementalGroupsPolicy: "
      "true}}\n",
      "node.yaml");
  ASSERT_TRUE(docs.ok());
  auto node = DecodeNode(docs->front().value, "node.yaml");
  ASSERT_TRUE(node.ok()) << node.error().msg;
  EXPECT_EQ(node->name, "n1");
  EXPECT_TRUE(node->unschedulable);
  EXPECT_EQ(node->allocatable.at("cpu").Value(), 4);
  EXPECT_EQ(node->allocatable.at("pods").Value(), 110);
  EXPECT_EQ(node->supports_supplemental_groups_policy, true);

  auto bad = DecodeNode(
      json::parse(
          R"({"metadata":{"name":"n"},"spec":{"taints":[{"key":"k","effect":"Sometimes"}]}})"),
      "node.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().msg.find("node.json: spec.taints[0].effect: unsupported value"),
            std::string::npos)
      << bad.error().msg;
  auto pod = DecodeNode(json::parse(R"({"kind":"Pod","metadata":{"name":"n"}})"), "node.json");
  ASSERT_FALSE(pod.ok());
  EXPECT_NE(pod.error().msg.find("kind: expected Node"), std::string::npos);
}

class ManifestDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("admit-manifests-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
            "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
  }
  std::filesystem::path dir_;
};

TEST_F(ManifestDirTest, StaticPodDefaultsAndHiddenFiles) {
  Write("b.yaml", "kind: Pod\nmetadata: {name: web}\nspec: {containers: [{name: c}]}\n");
  Write(
      "a.json",
      R"({"kind":"Pod","metadata":{"name":"etcd","namespace":"kube-system"},"spec":{"containers":[{"name":"c"}]}})");
  Write(".swap.yaml", "not even yaml: [");
  auto pods = LoadManifestDir(dir_.string(), "node1");
  ASSERT_TRUE(pods.ok()) << pods.error().msg;
  ASSERT_EQ(pods->size(), 2u);
  EXPECT_EQ((*pods)[0].Key(), "kube-system/etcd-node1");  // sorted by file name, name suffixed
  EXPECT_EQ((*pods)[1].Key(), "default/web-node1");
  const Pod& web = (*pods)[1];
  EXPECT_EQ(web.node_name, "node1");
  EXPECT_TRUE(web.IsStaticPod());
  ASSERT_EQ(web.tolerations.size(), 1u);
  EXPECT_EQ(web.tolerations[0].op, "Exists");
  EXPECT_EQ(web.tolerations[0].effect, "NoExecute");
  EXPECT_EQ(web.source, (dir_ / "b.yaml").string());
  auto skipped = LoadManifestDir(dir_.string(), "node1", "b.yaml");
  ASSERT_TRUE(skipped.ok());
  EXPECT_EQ(skipped->size(), 1u);
}

TEST_F(ManifestDirTest, OnePodPerManifest) {
  Write("two.yaml",
        "kind: Pod\nmetadata: {name: a}\nspec: {containers: [{name: c}]}\n---\n"
        "kind: Pod\nmetadata: {name: b}\nspec: {containers: [{name: c}]}\n");
  auto pods = LoadManifestDir(dir_.string(), "node1");
  ASSERT_FALSE(pods.ok());
  EXPECT_NE(pods.error().msg.find("two.yaml: a static-pod manifest holds one Pod, got 2"),
            std::string::npos);
}

// Entries that are not regular files are named, not skipped silently and not read forever;
// sub-folders are skipped, as the kubelet does.
TEST_F(ManifestDirTest, NonRegularEntriesAreErrorsNamingThem) {
  Write("a.yaml", "kind: Pod\nmetadata: {name: web}\nspec: {containers: [{name: c}]}\n");
  std::filesystem::create_directories(dir_ / "sub");
  ASSERT_TRUE(LoadManifestDir(dir_.string(), "node1").ok());
  ASSERT_EQ(::mkfifo((dir_ / "b.yaml").c_str(), 0600), 0);
  auto pods = LoadManifestDir(dir_.string(), "node1");
  ASSERT_FALSE(pods.ok());
  EXPECT_EQ(pods.error().msg, (dir_ / "b.yaml").string() + ": not a regular file (a FIFO)");
  std::filesystem::remove(dir_ / "b.yaml");
  std::filesystem::create_symlink("/dev/zero", dir_ / "c.yaml");
  pods = LoadManifestDir(dir_.string(), "node1");
  ASSERT_FALSE(pods.ok());
  EXPECT_EQ(pods.error().msg,
            (dir_ / "c.yaml").string() + ": not a regular file (a character device)");
}

}  // namespace
}  // namespace nodegate::admit
