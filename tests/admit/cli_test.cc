// CLI tests of `nodegate admit` and `nodegate guard`: they run the built binary
// ($NODEGATE_BIN_DIR/nodegate) on the fixtures in tests/admit/testdata, conf/manifests and
// conf/candidates, and check exit codes, the JSON contract and the explanations.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "lib/http/testing/http_server.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteFile(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    bin_ = Env("NODEGATE_BIN_DIR") + "/nodegate";
    src_ = Env("NODEGATE_SOURCE_DIR");
    ASSERT_FALSE(src_.empty()) << "NODEGATE_SOURCE_DIR is not set (run through ctest)";
    ASSERT_TRUE(fs::exists(bin_)) << bin_;
    tmp_ = fs::temp_directory_path() /
           ("admit-cli-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(tmp_);
    fs::create_directories(tmp_);
  }
  void TearDown() override { fs::remove_all(tmp_); }

  std::string Data(const std::string& rel) const {
    return (fs::path(src_) / "tests/admit/testdata" / rel).string();
  }
  std::string Src(const std::string& rel) const { return (fs::path(src_) / rel).string(); }

  // Spawn: starts nodegate ARGS... with stdin from /dev/null and stdout, stderr into files.
  pid_t Spawn(const std::vector<std::string>& args, const fs::path& out, const fs::path& err,
              const fs::path& in = "/dev/null") {
    pid_t pid = ::fork();
    if (pid == 0) {
      int fd_in = ::open(in.c_str(), O_RDONLY);
      int fd_out = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      int fd_err = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      ::dup2(fd_in, 0);
      ::dup2(fd_out, 1);
      ::dup2(fd_err, 2);
      std::vector<char*> argv;
      argv.push_back(const_cast<char*>(bin_.c_str()));
      for (const std::string& a : args) {
        argv.push_back(const_cast<char*>(a.c_str()));
      }
      argv.push_back(nullptr);
      ::execv(bin_.c_str(), argv.data());
      ::_exit(127);
    }
    return pid;
  }

  // Run: nodegate ARGS..., stdin from `input`, stdout and stderr captured through files.
  RunResult Run(const std::vector<std::string>& args, const std::string& input = "") {
    const fs::path in = tmp_ / ".stdin", out = tmp_ / ".stdout", err = tmp_ / ".stderr";
    WriteFile(in, input);
    const pid_t pid = Spawn(args, out, err, in);
    int status = 0;
    ::waitpid(pid, &status, 0);
    RunResult r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.out = ReadFile(out);
    r.err = ReadFile(err);
    fs::remove(in);
    fs::remove(out);
    fs::remove(err);
    return r;
  }

  // Json: run with -o json and parse stdout.
  json RunJson(std::vector<std::string> args, int want_exit, const std::string& input = "") {
    args.insert(args.begin() + 1, {"-o", "json"});
    RunResult r = Run(args, input);
    EXPECT_EQ(r.exit_code, want_exit) << r.out << r.err;
    json j = json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.out;
    return j;
  }

  // Snapshot: name -> contents of every file in a folder (hidden ones included).
  static std::map<std::string, std::string> Snapshot(const fs::path& dir) {
    std::map<std::string, std::string> out;
    for (const auto& e : fs::directory_iterator(dir)) {
      out[e.path().filename().string()] = ReadFile(e.path());
    }
    return out;
  }

  fs::path CopyManifests() {
    const fs::path dir = tmp_ / "manifests";
    fs::create_directories(dir);
    for (const auto& e : fs::directory_iterator(Src("conf/manifests"))) {
      fs::copy_file(e.path(), dir / e.path().filename());
    }
    return dir;
  }

  std::string bin_;
  std::string src_;
  fs::path tmp_;
};

// The seed scenario: a hostNetwork DNS pod (53/udp, 53/tcp, 9153, 8080) is rejected on a node
// where a static pod declares hostPort 8080, and the explanation names that pod, although
// nothing listens on the port.
TEST_F(CliTest, SeedScenarioSchedulerProfile) {
  json j = RunJson({"admit", "--node", Data("node.yaml"), "--manifests", Src("conf/manifests"),
                    Src("conf/candidates/coredns-hostnetwork.yaml")},
                   1);
  EXPECT_EQ(j["node"], "worker-1");
  EXPECT_EQ(j["profile"], "scheduler");
  EXPECT_EQ(j["admitted"], false);
  ASSERT_EQ(j["pods"].size(), 1u);
  const json& pod = j["pods"][0];
  EXPECT_EQ(pod["pod"], "kube-system/node-local-dns-x7k2p");
  EXPECT_EQ(pod["admitted"], false);
  ASSERT_EQ(pod["failures"].size(), 1u);
  EXPECT_EQ(pod["failures"][0]["plugin"], "NodePorts");
  EXPECT_EQ(pod["failures"][0]["reason"],
            "node(s) didn't have free ports for the requested pod ports");
  const std::string detail = pod["failures"][0]["detail"];
  EXPECT_NE(detail.find("hostPort 8080/TCP on 0.0.0.0"), std::string::npos) << detail;
  EXPECT_NE(detail.find("held by pod kube-system/hostport-web-worker-1, container \"web\""),
            std::string::npos)
      << detail;
  EXPECT_NE(detail.find("conf/manifests/hostport-web.yaml"), std::string::npos) << detail;
  // 53 and 9153 are free: only 8080 is reported.
  EXPECT_EQ(detail.find("53/"), std::string::npos) << detail;
  EXPECT_FALSE(pod.contains("admitReason"));
  EXPECT_EQ(pod["code"], "Unschedulable");  // preemption could free the port
}

TEST_F(CliTest, SeedScenarioKubeletProfileAndTextReport) {
  json j = RunJson({"admit", "--profile", "kubelet", "--node", Data("node.yaml"), "--manifests",
                    Src("conf/manifests"), Src("conf/candidates/coredns-hostnetwork.yaml")},
                   1);
  const json& pod = j["pods"][0];
  EXPECT_EQ(pod["admitReason"], "NodePorts");
  EXPECT_EQ(pod["admitMessage"],
            "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod "
            "ports");
  RunResult text = Run({"admit", "--profile", "kubelet", "--node", Data("node.yaml"), "--manifests",
                        Src("conf/manifests"), Src("conf/candidates/coredns-hostnetwork.yaml")});
  EXPECT_EQ(text.exit_code, 1);
  EXPECT_NE(text.out.find("REJECTED kube-system/node-local-dns-x7k2p"), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("kubelet: NodePorts: Predicate NodePorts failed"), std::string::npos);
  EXPECT_NE(text.out.find("hostport-web-worker-1"), std::string::npos);
}

TEST_F(CliTest, SeedScenarioWithoutTheHostPortPodIsAdmitted) {
  const fs::path dir = CopyManifests();
  fs::remove(dir / "hostport-web.yaml");
  json j = RunJson({"admit", "--node", Data("node.yaml"), "--manifests", dir.string(),
                    Src("conf/candidates/coredns-hostnetwork.yaml")},
                   0);
  EXPECT_EQ(j["admitted"], true);
  EXPECT_EQ(j["pods"][0]["failures"].size(), 0u);
  EXPECT_EQ(j["existingPods"], 2);
}

TEST_F(CliTest, EveryPodsInputFormFindsTheHolder) {
  for (const std::string file :
       {"pods/holder-pod.yaml", "pods/holder-podlist.json", "pods/holder-list.json",
        "pods/holder-array.json", "pods/holder-multidoc.yaml"}) {
    SCOPED_TRACE(file);
    json j = RunJson({"admit", "--node", Data("node.yaml"), "--pods", Data(file),
                      Data("candidates/wants-9000.yaml")},
                     1);
    ASSERT_EQ(j["pods"][0]["failures"].size(), 1u);
    const std::string detail = j["pods"][0]["failures"][0]["detail"];
    EXPECT_NE(detail.find("held by pod monitoring/metrics-holder, container \"exporter\""),
              std::string::npos)
        << detail;
  }
}

TEST_F(CliTest, RepeatedPodsFlagsAndSeveralCandidateFiles) {
  // Each --pods takes one file; every later argument is a candidate, checked in order.
  json j = RunJson({"admit", "--node", Data("node.yaml"), "--pods", Data("pods/holder-pod.yaml"),
                    "--pods", Data("pods/holder-array.json"), Data("candidates/small.yaml"),
                    Data("candidates/big-cpu.yaml")},
                   1);
  EXPECT_EQ(j["existingPods"], 2);  // metrics-holder is in both files: counted once
  ASSERT_EQ(j["pods"].size(), 2u);
  EXPECT_EQ(j["pods"][0]["pod"], "default/small");
  EXPECT_EQ(j["pods"][0]["admitted"], true);
  EXPECT_EQ(j["pods"][1]["pod"], "default/big");
  // 900m (holder) + 100m (small, admitted first) are used: 1500m does not fit in 1900m.
  EXPECT_NE(std::string(j["pods"][1]["failures"][0]["detail"]).find("1 already requested by 2"),
            std::string::npos)
      << j.dump();
}

TEST_F(CliTest, TerminatedPodsAndPodsOnOtherNodesDoNotCount) {
  // holder-podlist.json also has a Succeeded pod requesting all the cpu and a pod on worker-2.
  json j = RunJson({"admit", "--node", Data("node.yaml"), "--pods",
                    Data("pods/holder-podlist.json"), Data("candidates/small.yaml")},
                   0);
  EXPECT_EQ(j["existingPods"], 1);
  RunResult text = Run({"admit", "--node", Data("node.yaml"), "--pods",
                        Data("pods/holder-podlist.json"), Data("candidates/small.yaml")});
  EXPECT_NE(text.out.find("skipped 1 terminated, 1 bound to other nodes"), std::string::npos)
      << text.out;
}

TEST_F(CliTest, StdinAndWorkloadCandidates) {
  const std::string candidate = ReadFile(Data("candidates/wants-9000.yaml"));
  json j =
      RunJson({"admit", "--node", Data("node.yaml"), "--pods", Data("pods/holder-pod.yaml"), "-"},
              1, candidate);
  EXPECT_EQ(j["pods"][0]["pod"], "monitoring/node-exporter");
  // A DaemonSet's pod template is checked as its pod; hostNetwork makes 9000 a host port.
  j = RunJson({"admit", "--node", Data("node.yaml"), "--pods", Data("pods/holder-pod.yaml"),
               Data("candidates/daemonset.yaml")},
              1);
  EXPECT_EQ(j["pods"][0]["failures"][0]["plugin"], "NodePorts");
  // --pods - reads the existing pods from stdin.
  j = RunJson(
      {"admit", "--node", Data("node.yaml"), "--pods", "-", Data("candidates/wants-9000.yaml")}, 1,
      ReadFile(Data("pods/holder-array.json")));
  EXPECT_EQ(j["pods"][0]["failures"][0]["plugin"], "NodePorts");
}

TEST_F(CliTest, CandidatesAreCheckedInOrderAgainstEachOther) {
  json j = RunJson({"admit", "--node", Data("node.yaml"), Data("candidates/pair.yaml")}, 1);
  ASSERT_EQ(j["pods"].size(), 2u);
  EXPECT_EQ(j["pods"][0]["admitted"], true);
  EXPECT_EQ(j["pods"][1]["admitted"], false);
  const std::string detail = j["pods"][1]["failures"][0]["detail"];
  EXPECT_NE(detail.find("443/TCP on 10.0.0.5"), std::string::npos) << detail;
  EXPECT_NE(detail.find("held by pod ingress/ingress-a, container \"nginx\" (443/TCP on 0.0.0.0)"),
            std::string::npos)
      << detail;
}

TEST_F(CliTest, ResourcesAndTaintsInBothProfiles) {
  json j = RunJson({"admit", "--node", Data("node.yaml"), "--pods", Data("pods/holder-pod.yaml"),
                    Data("candidates/big-cpu.yaml")},
                   1);
  const json& f = j["pods"][0]["failures"][0];
  EXPECT_EQ(f["plugin"], "NodeResourcesFit");
  EXPECT_EQ(f["reason"], "Insufficient cpu");
  EXPECT_EQ(f["detail"],
            "cpu: the pod requests 1500m, the node has 1900m allocatable and 900m already "
            "requested by 1 pod(s), leaving 1; top: monitoring/metrics-holder 900m");
  j = RunJson({"admit", "--profile", "kubelet", "--node", Data("node.yaml"), "--pods",
               Data("pods/holder-pod.yaml"), Data("candidates/big-cpu.yaml")},
              1);
  EXPECT_EQ(j["pods"][0]["admitReason"], "OutOfcpu");
  EXPECT_EQ(j["pods"][0]["admitMessage"],
            "Node didn't have enough resource: cpu, requested: 1500, used: 900, capacity: 1900");
  // The NoSchedule taint stops the scheduler, not the kubelet.
  j = RunJson({"admit", "--node", Data("node.yaml"), Data("candidates/no-toleration.yaml")}, 1);
  EXPECT_EQ(j["pods"][0]["failures"][0]["plugin"], "TaintToleration");
  EXPECT_EQ(j["pods"][0]["failures"][0]["reason"], "node(s) had untolerated taint(s)");
  EXPECT_NE(std::string(j["pods"][0]["failures"][0]["detail"]).find("dedicated=infra:NoSchedule"),
            std::string::npos);
  j = RunJson({"admit", "--profile", "kubelet", "--node", Data("node.yaml"),
               Data("candidates/no-toleration.yaml")},
              0);
  EXPECT_EQ(j["admitted"], true);
}

TEST_F(CliTest, FeatureGates) {
  json j = RunJson({"admit", "--node", Data("node.yaml"), Data("candidates/sidecar.yaml")}, 0);
  EXPECT_EQ(j["admitted"], true);
  j = RunJson({"admit", "--feature-gates", "SidecarContainers=false", "--node", Data("node.yaml"),
               Data("candidates/sidecar.yaml")},
              1);
  EXPECT_EQ(j["pods"][0]["failures"][0]["reason"],
            "Pod has a restartable init container and the SidecarContainers feature is disabled");
  RunResult bad = Run({"admit", "--feature-gates", "Bogus=true", "--node", Data("node.yaml"),
                       Data("candidates/small.yaml")});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("unknown feature gate \"Bogus\""), std::string::npos) << bad.err;
}

TEST_F(CliTest, WithoutNodeTheNodeIsThisMachine) {
  json j = RunJson({"admit", Data("candidates/small.yaml")}, 0);
  EXPECT_EQ(j["nodeSource"], "host");
  char host[256] = {};
  ASSERT_EQ(::gethostname(host, sizeof host - 1), 0);
  std::string name = host;
  for (char& c : name) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  EXPECT_EQ(j["node"], name);
  RunResult text = Run({"admit", Data("candidates/small.yaml")});
  EXPECT_EQ(text.exit_code, 0);
  EXPECT_NE(text.out.find("this machine, no --node given"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("110 pods"), std::string::npos) << text.out;
}

TEST_F(CliTest, UnusableInputExitsTwoAndNamesFileAndField) {
  struct Case {
    std::string name;
    std::vector<std::string> args;
    std::string want;
  };
  const std::string node = Data("node.yaml");
  // Deep nesting, generated here rather than checked in.
  WriteFile(tmp_ / "deep.json", std::string(50000, '[') + std::string(50000, ']'));
  WriteFile(tmp_ / "deep.yaml", "a: " + std::string(50000, '[') + std::string(50000, ']'));
  const std::vector<Case> cases = {
      {"invalid quantity",
       {"admit", "--node", node, Data("bad/invalid-quantity.yaml")},
       "invalid-quantity.yaml: spec.containers[0].resources.requests[memory]: invalid quantity "
       "\"12 GB\""},
      {"wrong type",
       {"admit", "--node", node, Data("bad/wrong-type.yaml")},
       "wrong-type.yaml: spec.containers[0].ports[0].containerPort: expected integer, got string"},
      {"unknown operator",
       {"admit", "--node", node, Data("bad/unknown-operator.yaml")},
       "matchExpressions[0].operator: unsupported value \"Near\""},
      {"empty candidate file",
       {"admit", "--node", node, Data("bad/empty.yaml")},
       "empty.yaml: empty: no objects"},
      {"empty pods file",
       {"admit", "--node", node, "--pods", Data("bad/empty.yaml"), Data("candidates/small.yaml")},
       "empty.yaml: empty: no objects"},
      {"YAML bomb", {"admit", "--node", node, Data("bad/bomb.yaml")}, "too many values"},
      {"deep JSON", {"admit", "--node", node, (tmp_ / "deep.json").string()}, "nesting deeper"},
      {"deep YAML",
       {"admit", "--node", node, (tmp_ / "deep.yaml").string()},
       "deep.yaml: YAML nesting deeper than 64 levels"},
      {"node is not a Node",
       {"admit", "--node", Data("bad/node-not-a-node.yaml"), Data("candidates/small.yaml")},
       "node-not-a-node.yaml: kind: expected Node"},
      {"missing file", {"admit", "--node", node, Data("no/such/file.yaml")}, "file.yaml"},
      {"manifests folder missing",
       {"admit", "--manifests", Data("nope"), Data("candidates/small.yaml")},
       "not a directory"},
      {"no candidate", {"admit", "--node", node}, "POD_FILE is required"},
      {"unknown flag", {"admit", "--bogus", Data("candidates/small.yaml")}, "--bogus"},
      {"bad profile",
       {"admit", "--profile", "controller", Data("candidates/small.yaml")},
       "controller"},
      {"bad output", {"admit", "-o", "xml", Data("candidates/small.yaml")}, "xml"},
      {"stdin twice", {"admit", "-", "-"}, "'-' (stdin) may be given once"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    RunResult r = Run(c.args);
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find(c.want), std::string::npos) << "stderr: " << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
}

TEST_F(CliTest, HelpExitsZero) {
  RunResult r = Run({"admit", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("--feature-gates"), std::string::npos);
  r = Run({"guard", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("--manifests"), std::string::npos);
}

TEST_F(CliTest, GuardLeavesTheFolderUntouchedOnRejection) {
  const fs::path dir = CopyManifests();
  const auto before = Snapshot(dir);
  const auto mtime = fs::last_write_time(dir);
  RunResult r = Run({"guard", "--node", Data("node.yaml"), "--manifests", dir.string(),
                     Src("conf/candidates/coredns-hostnetwork.yaml")});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("held by pod kube-system/hostport-web-worker-1"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("is unchanged"), std::string::npos);
  EXPECT_EQ(Snapshot(dir), before);
  EXPECT_EQ(fs::last_write_time(dir), mtime);
}

TEST_F(CliTest, GuardInstallsAnAdmittedManifestAtomically) {
  const fs::path dir = CopyManifests();
  fs::remove(dir / "hostport-web.yaml");
  const std::string manifest = Src("conf/candidates/coredns-hostnetwork.yaml");
  RunResult r = Run({"guard", "--node", Data("node.yaml"), "--manifests", dir.string(), manifest});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("installed " + (dir / "coredns-hostnetwork.yaml").string()),
            std::string::npos)
      << r.out;
  EXPECT_EQ(ReadFile(dir / "coredns-hostnetwork.yaml"), ReadFile(manifest));
  for (const auto& [name, contents] : Snapshot(dir)) {
    EXPECT_NE(name[0], '.') << "temporary file left behind: " << name;
  }
  struct stat st {};
  ASSERT_EQ(::stat((dir / "coredns-hostnetwork.yaml").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  // Installing it again is an update of itself: admitted, not a conflict with its old version.
  r = Run({"guard", "--node", Data("node.yaml"), "--manifests", dir.string(), manifest});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  // Now the hostPort 8080 pod is the one that cannot come in.
  const auto before = Snapshot(dir);
  json j = RunJson({"guard", "--node", Data("node.yaml"), "--manifests", dir.string(),
                    Src("conf/manifests/hostport-web.yaml")},
                   1);
  EXPECT_NE(std::string(j["pods"][0]["failures"][0]["detail"])
                .find("held by pod kube-system/node-local-dns-x7k2p-worker-1"),
            std::string::npos)
      << j.dump();
  EXPECT_EQ(j["installed"], false);
  EXPECT_EQ(j["pods"][0]["admitReason"], "NodePorts");
  EXPECT_EQ(Snapshot(dir), before);
}

TEST_F(CliTest, GuardReplacesTheFileOfTheSameName) {
  const fs::path dir = CopyManifests();
  // A new version of hostport-web.yaml that keeps hostPort 8080 and asks for more: it replaces
  // the old file, so its port does not conflict with the old version.
  std::string updated = ReadFile(dir / "hostport-web.yaml");
  updated.replace(updated.find("cpu: 50m"), 8, "cpu: 60m");
  const fs::path staged = tmp_ / "hostport-web.yaml";
  WriteFile(staged, updated);
  ::chmod((dir / "hostport-web.yaml").c_str(), 0640);
  RunResult r =
      Run({"guard", "--node", Data("node.yaml"), "--manifests", dir.string(), staged.string()});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(ReadFile(dir / "hostport-web.yaml"), updated);
  struct stat st {};
  ASSERT_EQ(::stat((dir / "hostport-web.yaml").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u) << "the replaced file keeps its mode";
}

TEST_F(CliTest, GuardRejectsUnusableInputWithoutTouchingTheFolder) {
  const fs::path dir = CopyManifests();
  const auto before = Snapshot(dir);
  for (const std::string bad :
       {"bad/invalid-quantity.yaml", "bad/empty.yaml", "bad/bomb.yaml", "candidates/pair.yaml"}) {
    SCOPED_TRACE(bad);
    RunResult r =
        Run({"guard", "--node", Data("node.yaml"), "--manifests", dir.string(), Data(bad)});
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_FALSE(r.err.empty());
    EXPECT_EQ(Snapshot(dir), before);
  }
  RunResult r = Run({"guard", "--node", Data("node.yaml"), Data("candidates/small.yaml")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--manifests is required"), std::string::npos) << r.err;
}

// A static-pod manifest: pod NAME, one container CONTAINER, hostPort PORT (0: none).
std::string Manifest(const std::string& name, const std::string& container, int port) {
  std::string text = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name +
                     "\n  namespace: kube-system\nspec:\n  containers:\n  - name: " + container +
                     "\n    image: registry.k8s.io/pause:3.9\n";
  if (port != 0) {
    text += "    ports:\n    - containerPort: " + std::to_string(port) +
            "\n      hostPort: " + std::to_string(port) + "\n";
  }
  return text;
}

// Issue 13 row 1: names that are not UTF-8. The kubelet's YAML decoder (go-yaml, a port of
// libyaml) refuses such a manifest, and so do admit and guard: exit 2, the reason on stderr
// without the bytes, nothing installed. Names that are UTF-8 but not ASCII come out as
// themselves in valid JSON, and guard's install comes after the report is rendered.
TEST_F(CliTest, NamesThatAreNotUtf8AreRefusedAndOtherNamesComeOutAsThemselves) {
  const fs::path dir = tmp_ / "manifests";
  fs::create_directories(dir);
  const fs::path not_utf8 = tmp_ / "not-utf8.yaml";
  WriteFile(not_utf8, Manifest("wants-\xff", "w", 8080));
  for (const char* command : {"admit", "guard"}) {
    RunResult r = Run({command, "-o", "json", "--node", Data("node.yaml"), "--manifests",
                       dir.string(), not_utf8.string()});
    EXPECT_EQ(r.exit_code, 2) << command << r.out << r.err;
    EXPECT_NE(r.err.find(not_utf8.string() + ": invalid YAML: line 4 (byte 49): invalid leading "
                                             "UTF-8 octet"),
              std::string::npos)
        << r.err;
    EXPECT_EQ(r.err.find('\xff'), std::string::npos);
  }
  EXPECT_TRUE(fs::is_empty(dir));
  // The same bytes in a manifest already in the folder: the folder cannot be read either.
  WriteFile(dir / "holder.yaml", Manifest("holder-\xff", "c", 8080));
  RunResult r = Run({"admit", "--node", Data("node.yaml"), "--manifests", dir.string(),
                     Data("candidates/small.yaml")});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find((dir / "holder.yaml").string() + ": invalid YAML"), std::string::npos)
      << r.err;

  WriteFile(dir / "holder.yaml", Manifest("holder-\xC3\xA9", "c-\xC3\xA9", 8080));
  WriteFile(tmp_ / "wants-8080.yaml", Manifest("wants-\xC3\xA9", "w-\xC3\xA9", 8080));
  json j = RunJson({"admit", "--profile", "kubelet", "--node", Data("node.yaml"), "--manifests",
                    dir.string(), (tmp_ / "wants-8080.yaml").string()},
                   1);
  EXPECT_EQ(j["pods"][0]["pod"], "kube-system/wants-\xC3\xA9");
  const std::string detail = j["pods"][0]["failures"][0]["detail"];
  EXPECT_NE(detail.find("(container \"w-\xC3\xA9\") is held by pod "
                        "kube-system/holder-\xC3\xA9-worker-1, container \"c-\xC3\xA9\""),
            std::string::npos)
      << detail;
  // Rejected by guard: valid JSON, nothing installed.
  j = RunJson({"guard", "--node", Data("node.yaml"), "--manifests", dir.string(),
               (tmp_ / "wants-8080.yaml").string()},
              1);
  EXPECT_EQ(j["installed"], false);
  EXPECT_FALSE(fs::exists(dir / "wants-8080.yaml"));
  // Admitted by guard: valid JSON and the file installed.
  WriteFile(tmp_ / "other.yaml", Manifest("other-\xC3\xA9", "o", 9090));
  j = RunJson({"guard", "--node", Data("node.yaml"), "--manifests", dir.string(),
               (tmp_ / "other.yaml").string()},
              0);
  EXPECT_EQ(j["installed"], true);
  EXPECT_EQ(j["pods"][0]["pod"], "kube-system/other-\xC3\xA9-worker-1");
  EXPECT_EQ(ReadFile(dir / "other.yaml"), ReadFile(tmp_ / "other.yaml"));
}

// Issue 13 row 2: every file input must be a regular file (or '-'); a FIFO would hang the
// reader and a device never ends. Each is refused by type, with exit 2.
TEST_F(CliTest, InputsThatAreNotRegularFilesAreRefusedByType) {
  const std::string node = Data("node.yaml");
  const std::string small = Data("candidates/small.yaml");
  const std::string fifo = (tmp_ / "fifo.yaml").string();
  const std::string zero = (tmp_ / "zero.yaml").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  fs::create_symlink("/dev/zero", zero);
  const fs::path fifo_dir = tmp_ / "with-fifo";
  fs::create_directories(fifo_dir);
  ASSERT_EQ(::mkfifo((fifo_dir / "a.yaml").c_str(), 0600), 0);
  const fs::path dir = tmp_ / "manifests";
  fs::create_directories(dir);
  struct Case {
    std::vector<std::string> args;
    std::string want;
  };
  const std::string kDevice = ": not a regular file (a character device)";
  const std::string kFifo = ": not a regular file (a FIFO)";
  const std::vector<Case> cases = {
      {{"admit", "--node", node, "--pods", "/dev/zero", small}, "/dev/zero" + kDevice},
      {{"admit", "--node", node, "--pods", zero, small}, zero + kDevice},
      {{"admit", "--node", node, "/dev/urandom"}, "/dev/urandom" + kDevice},
      {{"admit", "--node", node, fifo}, fifo + kFifo},
      {{"admit", "--node", fifo, small}, fifo + kFifo},
      {{"admit", "--node", node, "--manifests", fifo_dir.string(), small},
       (fifo_dir / "a.yaml").string() + kFifo},
      {{"guard", "--node", node, "--manifests", dir.string(), fifo}, fifo + kFifo},
      {{"guard", "--node", node, "--manifests", fifo_dir.string(), small},
       (fifo_dir / "a.yaml").string() + kFifo},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.args[c.args.size() - 1]);
    RunResult r = Run(c.args);
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find(c.want), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
  EXPECT_TRUE(fs::is_empty(dir));
}

// Issue 13 row 3: guards of one folder check and install as one critical section: of 20 run at
// once, with different files all asking for hostPort 8080, exactly one installs.
TEST_F(CliTest, TwentyConcurrentGuardsOnOneHostPortInstallExactlyOne) {
  constexpr int kGuards = 20;
  const fs::path dir = tmp_ / "manifests";
  const fs::path staged = tmp_ / "staged";
  fs::create_directories(dir);
  fs::create_directories(staged);
  std::vector<pid_t> pids;
  for (int i = 0; i < kGuards; ++i) {
    const std::string name = "web-" + std::to_string(i);
    WriteFile(staged / (name + ".yaml"), Manifest(name, "web", 8080));
  }
  for (int i = 0; i < kGuards; ++i) {
    const std::string name = "web-" + std::to_string(i);
    pids.push_back(Spawn({"guard", "--node", Data("node.yaml"), "--manifests", dir.string(),
                          (staged / (name + ".yaml")).string()},
                         tmp_ / (name + ".out"), tmp_ / (name + ".err")));
  }
  std::map<int, int> exit_codes;  // exit code -> how many guards
  for (pid_t pid : pids) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status)) << "signal " << WTERMSIG(status);
    ++exit_codes[WEXITSTATUS(status)];
  }
  EXPECT_EQ(exit_codes, (std::map<int, int>{{0, 1}, {1, kGuards - 1}}));
  const auto installed = Snapshot(dir);
  ASSERT_EQ(installed.size(), 1u) << "installed: " << installed.size() << " manifests";
  EXPECT_EQ(installed.begin()->first.rfind("web-", 0), 0u) << installed.begin()->first;
}

// --- Issue 17: critical pods, the kubelet's evictions, priority classes, --manifest-url ------

// ControlPlane: the fixtures of tests/admit/testdata/control-plane.
std::string ControlPlane(const std::string& rel) {
  return (fs::path(Env("NODEGATE_SOURCE_DIR")) / "tests/admit/testdata/control-plane" / rel)
      .string();
}

// WithoutLine: a copy of `file` in `dir` without the line holding `needle`.
fs::path WithoutLine(const fs::path& file, const fs::path& dir, const std::string& needle) {
  std::istringstream in(ReadFile(file));
  std::string out;
  for (std::string line; std::getline(in, line);) {
    if (line.find(needle) == std::string::npos) {
      out += line + "\n";
    }
  }
  const fs::path copy = dir / file.filename();
  WriteFile(copy, out);
  return copy;
}

const json kApiserverEvicts = json::parse(R"([
  {"pod": "web/cache-0", "qos": "Burstable", "frees": {"cpu": "800m", "memory": "1Gi"}},
  {"pod": "web/cache-1", "qos": "Burstable", "frees": {"cpu": "700m", "memory": "1Gi"}}])");

// The kube-apiserver manifest asks for 1500m/2Gi on a node with 200m/1722Mi left: it is critical
// (system-node-critical resolves to 2000001000), so the kubelet evicts Burstable pods for it.
TEST_F(CliTest, CriticalApiserverOnAFullNodeIsAdmittedWithTheKubeletsVictims) {
  const std::vector<std::string> args = {"admit",
                                         "--profile",
                                         "kubelet",
                                         "--node",
                                         ControlPlane("node.yaml"),
                                         "--pods",
                                         ControlPlane("pods.yaml"),
                                         ControlPlane("kube-apiserver.yaml")};
  json j = RunJson(args, 0);
  const json& pod = j["pods"][0];
  EXPECT_EQ(j["admitted"], true);
  EXPECT_EQ(pod["admitted"], true);
  EXPECT_EQ(pod["failures"], json::array());
  EXPECT_FALSE(pod.contains("admitReason"));
  EXPECT_EQ(pod["evicts"], kApiserverEvicts) << pod.dump(2);
  RunResult r = Run(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("ADMITTED (evicts web/cache-0, web/cache-1: frees cpu 1500m, memory 2Gi) "
                       "kube-system/kube-apiserver"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("a critical pod (priority 2000001000) short of cpu 1300m, memory 326Mi"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("web/cache-1 (Burstable): frees cpu 700m, memory 1Gi"), std::string::npos)
      << r.out;
}

TEST_F(CliTest, TheSamePodWithoutCriticalityIsRejectedOutOfcpu) {
  const fs::path plain =
      WithoutLine(ControlPlane("kube-apiserver.yaml"), tmp_, "priorityClassName");
  json j = RunJson({"admit", "--profile", "kubelet", "--node", ControlPlane("node.yaml"), "--pods",
                    ControlPlane("pods.yaml"), plain.string()},
                   1);
  const json& pod = j["pods"][0];
  EXPECT_EQ(pod["admitReason"], "OutOfcpu");
  EXPECT_EQ(pod["admitMessage"],
            "Node didn't have enough resource: cpu, requested: 1500, used: 1800, capacity: 2000");
  EXPECT_FALSE(pod.contains("evicts"));
  ASSERT_EQ(pod["failures"].size(), 2u);  // cpu and memory
  EXPECT_EQ(pod["failures"][1]["reason"], "Insufficient memory");
}

// A critical pod is spared resource failures only: a host port held by another static pod
// (haproxy on 6443) still rejects it, with the port as the kubelet's reason.
TEST_F(CliTest, CriticalPodShortOfAHostPortIsStillRejected) {
  const fs::path dir = tmp_ / "manifests";
  fs::create_directories(dir);
  fs::copy_file(ControlPlane("haproxy.yaml"), dir / "haproxy.yaml");
  const auto before = Snapshot(dir);
  for (const bool allow : {false, true}) {
    SCOPED_TRACE(allow ? "--allow-preemption" : "default");
    std::vector<std::string> args = {"guard",
                                     "--node",
                                     ControlPlane("node.yaml"),
                                     "--pods",
                                     ControlPlane("pods.yaml"),
                                     "--manifests",
                                     dir.string(),
                                     ControlPlane("kube-apiserver.yaml")};
    if (allow) {
      args.insert(args.begin() + 1, "--allow-preemption");
    }
    json j = RunJson(args, 1);
    const json& pod = j["pods"][0];
    EXPECT_EQ(pod["admitted"], false);
    EXPECT_EQ(pod["admitReason"], "NodePorts");
    EXPECT_EQ(pod["admitMessage"],
              "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod "
              "ports");
    std::vector<std::string> plugins;
    for (const json& f : pod["failures"]) {
      plugins.push_back(f["plugin"]);
    }
    EXPECT_EQ(plugins,
              (std::vector<std::string>{"NodeResourcesFit", "NodeResourcesFit", "NodePorts"}));
    EXPECT_FALSE(pod.contains("evicts"));
    EXPECT_EQ(j["installed"], false);
    EXPECT_EQ(Snapshot(dir), before);
  }
}

TEST_F(CliTest, GuardRefusesToEvictWithoutAllowPreemption) {
  const fs::path dir = tmp_ / "manifests";
  fs::create_directories(dir);
  const std::vector<std::string> args = {"guard",
                                         "--node",
                                         ControlPlane("node.yaml"),
                                         "--pods",
                                         ControlPlane("pods.yaml"),
                                         "--manifests",
                                         dir.string(),
                                         ControlPlane("kube-apiserver.yaml")};
  RunResult r = Run(args);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("ADMITTED (evicts web/cache-0, web/cache-1: frees cpu 1500m, memory 2Gi) "
                       "kube-system/kube-apiserver-cp-1"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("a critical pod (static pod)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("not installed: the kubelet would evict web/cache-0, web/cache-1 to admit "
                       "it; to let it, run again with --allow-preemption"),
            std::string::npos)
      << r.out;
  EXPECT_TRUE(fs::is_empty(dir));
  json j = RunJson(args, 1);
  EXPECT_EQ(j["installed"], false);
  EXPECT_EQ(j["needsAllowPreemption"], true);
  EXPECT_EQ(j["pods"][0]["admitted"], true);
  EXPECT_EQ(j["pods"][0]["evicts"], kApiserverEvicts);
  EXPECT_TRUE(fs::is_empty(dir));
}

TEST_F(CliTest, GuardWithAllowPreemptionInstallsAndNamesTheVictims) {
  const fs::path dir = tmp_ / "manifests";
  fs::create_directories(dir);
  std::vector<std::string> args = {"guard",
                                   "--allow-preemption",
                                   "--node",
                                   ControlPlane("node.yaml"),
                                   "--pods",
                                   ControlPlane("pods.yaml"),
                                   "--manifests",
                                   dir.string(),
                                   ControlPlane("kube-apiserver.yaml")};
  json j = RunJson(args, 0);
  EXPECT_EQ(j["installed"], true);
  EXPECT_EQ(j["pods"][0]["evicts"], kApiserverEvicts);
  EXPECT_EQ(ReadFile(dir / "kube-apiserver.yaml"), ReadFile(ControlPlane("kube-apiserver.yaml")));
  fs::remove(dir / "kube-apiserver.yaml");
  RunResult r = Run(args);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("installed " + (dir / "kube-apiserver.yaml").string()), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("the kubelet evicts web/cache-0, web/cache-1 when it admits it"),
            std::string::npos)
      << r.out;
}

// priorityClassName is resolved for --pods and candidates as the API server's admission does.
TEST_F(CliTest, PriorityClassesDecideWhoIsCritical) {
  auto with_class = [&](const std::string& name) {
    std::string text = ReadFile(ControlPlane("kube-apiserver.yaml"));
    text.replace(text.find("system-node-critical"), 20, name);
    const fs::path path = tmp_ / (name + ".yaml");
    WriteFile(path, text);
    return path.string();
  };
  const std::vector<std::string> base = {"admit",
                                         "--profile",
                                         "kubelet",
                                         "--node",
                                         ControlPlane("node.yaml"),
                                         "--pods",
                                         ControlPlane("pods.yaml")};
  auto args = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  // Built in, no file needed.
  json j = RunJson(args({with_class("system-cluster-critical")}), 0);
  EXPECT_EQ(j["pods"][0]["evicts"], kApiserverEvicts);
  // A user class is never critical (at most 1000000000).
  j = RunJson(
      args({"--priority-classes", ControlPlane("priority-classes.yaml"), with_class("web-high")}),
      1);
  EXPECT_EQ(j["pods"][0]["admitReason"], "OutOfcpu");
  // A class the cluster does not have: the API server would refuse the pod.
  const std::string gold = with_class("gold");
  RunResult r = Run(args({"--priority-classes", ControlPlane("priority-classes.yaml"), gold}));
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find(gold + ": pod kube-system/kube-apiserver: spec.priorityClassName: no "
                              "PriorityClass with name gold was found"),
            std::string::npos)
      << r.err;
  // Without the file an unknown class is left alone (it could not make the pod critical).
  j = RunJson(args({gold}), 1);
  EXPECT_EQ(j["pods"][0]["admitReason"], "OutOfcpu");
}

// --manifest-url: pods served like the kubelet's HTTP source are static pods on the node.
TEST_F(CliTest, ManifestUrlPodsAreOnTheNode) {
  nodegate::http::testing::LocalHttpServer server;
  using Server = nodegate::http::testing::LocalHttpServer;
  const std::string pods = ReadFile(ControlPlane("http-pods.yaml"));
  server.Route("/pods", Server::Ok(pods));
  server.Route("/two-docs", Server::Ok(ReadFile(Data("pods/holder-pod.yaml")) + "---\n" +
                                       ReadFile(Data("candidates/small.yaml"))));
  server.Route("/slow", Server::Hang());
  const std::vector<std::string> base = {"admit",  "--profile",       "kubelet",
                                         "--node", Data("node.yaml"), "--manifest-url"};
  auto args = [&](const std::string& path, std::vector<std::string> extra = {}) {
    std::vector<std::string> a = base;
    a.push_back(server.Url(path));
    a.insert(a.end(), extra.begin(), extra.end());
    a.push_back(Data("candidates/wants-9000.yaml"));
    return a;
  };
  json j = RunJson(args("/pods"), 1);
  EXPECT_EQ(j["existingPods"], 1);
  const json& f = j["pods"][0]["failures"][0];
  EXPECT_EQ(f["plugin"], "NodePorts");
  const std::string detail = f["detail"];
  EXPECT_NE(detail.find("held by pod kube-system/log-agent-worker-1, container \"agent\""),
            std::string::npos)
      << detail;
  EXPECT_NE(detail.find("from " + server.Url("/pods")), std::string::npos) << detail;
  // Only the first document of a stream counts, and stderr says so.
  RunResult r = Run(args("/two-docs"));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("nodegate admit: note: " + server.Url("/two-docs") +
                       ": 1 document(s) after the first ignored"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.out.find("1 pod(s) on the node"), std::string::npos) << r.out;
  // A server that never answers: the timeout; the source could not be read, exit 3.
  r = Run(args("/slow", {"--manifest-url-timeout", "0.3"}));
  EXPECT_EQ(r.exit_code, 3) << r.out;
  EXPECT_NE(r.err.find(server.Url("/slow") + ": no complete response in time (timeout 300 ms)"),
            std::string::npos)
      << r.err;
  r = Run(args("/missing"));
  EXPECT_EQ(r.exit_code, 3) << r.out;
  EXPECT_NE(r.err.find(server.Url("/missing") + ": 404 Not Found"), std::string::npos) << r.err;
  EXPECT_EQ(server.requests(), 4);  // one GET per run
  // A URL this tool cannot read at all is unusable input, exit 2, and nothing is fetched.
  std::vector<std::string> https = base;
  https.push_back("https://127.0.0.1:1/pods");
  https.push_back(Data("candidates/wants-9000.yaml"));
  r = Run(https);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
}

}  // namespace
