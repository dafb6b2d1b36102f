// The chain runner against a scripted executor: order, prevResult threading, runtimeConfig
// injection, the libcni-compatible cache, rollback, and the GC/STATUS/CHECK gating.
#include "runtime/chain/chain.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>

#include "lib/base/base64.h"
#include "lib/sys/atomic_file.h"
#include "runtime/testing/fake_executor.h"

namespace nodegate::runtime {
namespace {

using ::testing::ElementsAre;
using testing::FakeExecutor;

// Any binary in the plugin path may answer VERSION; answers whose fields have other JSON types
// than libcni expects are errors, never an exception out of the driver (value() threw).
TEST(GetVersionInfoTest, OddlyTypedAnswersAreErrors) {
  struct Answering : FakeExecutor {
    std::string answer;
    Result<ExecOutput> Run(const std::string&, const CniEnv&, const std::string&) override {
      return ExecOutput{0, answer, ""};
    }
  } exec;
  for (const char* answer : {R"({"cniVersion":5})", R"({"cniVersion":["0.2.0"]})",
                             R"({"cniVersion":null,"supportedVersions":{}})"}) {
    exec.answer = answer;
    EXPECT_FALSE(GetVersionInfo(exec, "/fake/odd").ok()) << answer;
  }
  exec.answer = R"({"cniVersion":"0.2.0"})";
  const auto legacy = GetVersionInfo(exec, "/fake/odd");
  ASSERT_TRUE(legacy.ok()) << legacy.error().msg;
  EXPECT_EQ(*legacy, (std::vector<std::string>{"0.1.0", "0.2.0"}));
}

constexpr char kBridgeResult[] = R"({
  "cniVersion": "1.0.0",
  "interfaces": [{"name": "cni0", "mac": "02:00:00:00:00:01"},
                 {"name": "eth0", "mac": "02:00:00:00:00:02", "sandbox": "/run/netns/c1"}],
  "ips": [{"interface": 1, "address": "203.0.113.2/24", "gateway": "203.0.113.1"}],
  "routes": [{"dst": "0.0.0.0/0"}]
})";

// The bridge result as the chain re-encodes it (libcni 1.1.2 style: "dns" always present).
cni::Json Encoded() {
  auto j = cni::Json::parse(kBridgeResult);
  j["dns"] = cni::Json::object();
  return j;
}

std::string StandardList(const std::string& version = "1.0.0") {
  return R"({"cniVersion": ")" + version + R"(", "name": "std", "plugins": [
    {"type": "bridge", "bridge": "cni0", "ipam": {"type": "host-local", "subnet": "203.0.113.0/24"}},
    {"type": "portmap", "capabilities": {"portMappings": true}, "snat": true},
    {"type": "bandwidth", "capabilities": {"bandwidth": true, "ips": false}}]})";
}

class ChainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ng-chain-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    cache_dir_ = tmpl;
    exec_.replies["bridge ADD"] = ExecOutput{0, kBridgeResult, ""};
    exec_.replies["portmap ADD"] = ExecOutput{0, kBridgeResult, ""};
    exec_.replies["bandwidth ADD"] = ExecOutput{0, kBridgeResult, ""};
  }
  void TearDown() override { std::filesystem::remove_all(cache_dir_); }

  NetworkConfigList List(const std::string& text) {
    auto list = ParseConfList(text);
    EXPECT_TRUE(list.ok()) << list.error().msg;
    return *list;
  }
  Chain MakeChain() { return Chain(ChainOptions{{"/fake"}, cache_dir_}, exec_); }
  RuntimeConf Rt() {
    RuntimeConf rt{.container_id = "c1", .netns = "/run/netns/c1", .ifname = "eth0"};
    rt.capability_args = {
        {"portMappings", {{{"hostPort", 8080}, {"containerPort", 80}, {"protocol", "tcp"}}}},
        {"bandwidth", {{"ingressRate", 1000000}, {"ingressBurst", 100000}}},
        {"ips", {"203.0.113.9"}}};
    rt.args = {{"IgnoreUnknown", "1"}};
    return rt;
  }
  std::string CachePath() { return cache_dir_ + "/results/std-c1-eth0"; }

  std::string cache_dir_;
  FakeExecutor exec_;
};

TEST_F(ChainTest, AddRunsPluginsInOrderAndThreadsPrevResult) {
  auto chain = MakeChain();
  auto result = chain.Add(List(StandardList()), Rt());
  ASSERT_TRUE(result.ok()) << result.error().msg;
  EXPECT_THAT(exec_.Sequence(), ElementsAre("bridge ADD", "portmap ADD", "bandwidth ADD"));
  EXPECT_FALSE(exec_.calls[0].stdin_json.contains("prevResult"));
  const auto expected_prev = Encoded();
  EXPECT_EQ(exec_.calls[1].stdin_json["prevResult"], expected_prev);
  EXPECT_EQ(exec_.calls[2].stdin_json["prevResult"], expected_prev);
  for (const auto& call : exec_.calls) {
    EXPECT_EQ(call.stdin_json["name"], "std");
    EXPECT_EQ(call.stdin_json["cniVersion"], "1.0.0");
    EXPECT_EQ(call.env.container_id, "c1");
    EXPECT_EQ(call.env.netns, "/run/netns/c1");
    EXPECT_EQ(call.env.ifname, "eth0");
    EXPECT_EQ(call.env.args, "IgnoreUnknown=1");
    EXPECT_EQ(call.env.path, "/fake");
  }
  ASSERT_EQ(result->ips.size(), 1u);
  EXPECT_EQ(result->ips[0].address.ToString(), "203.0.113.2/24");
}

TEST_F(ChainTest, RuntimeConfigCarriesOnlyDeclaredCapabilities) {
  auto chain = MakeChain();
  ASSERT_TRUE(chain.Add(List(StandardList()), Rt()).ok());
  // bridge declares nothing: no runtimeConfig at all (libcni omits an empty one).
  EXPECT_FALSE(exec_.calls[0].stdin_json.contains("runtimeConfig"));
  EXPECT_EQ(exec_.calls[1].stdin_json["runtimeConfig"],
            cni::Json::parse(R"({"portMappings":[{"hostPort":8080,"containerPort":80,
                                 "protocol":"tcp"}]})"));
  // "ips": false is declared but disabled, so only bandwidth is passed.
  EXPECT_EQ(exec_.calls[2].stdin_json["runtimeConfig"],
            cni::Json::parse(R"({"bandwidth":{"ingressRate":1000000,"ingressBurst":100000}})"));
  // The plugin's own keys are passed through untouched.
  EXPECT_EQ(exec_.calls[1].stdin_json["snat"], true);
  EXPECT_EQ(exec_.calls[1].stdin_json["capabilities"]["portMappings"], true);
}

TEST_F(ChainTest, AddWritesTheCacheInLibcniFormat) {
  auto chain = MakeChain();
  const auto list = List(StandardList());
  ASSERT_TRUE(chain.Add(list, Rt()).ok());
  struct stat st {};
  ASSERT_EQ(::stat(CachePath().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto bytes = sys::ReadFile(CachePath());
  ASSERT_TRUE(bytes.ok());
  auto json = cni::OrderedJson::parse(*bytes);
  std::vector<std::string> keys;
  for (const auto& [k, v] : json.items()) {
    keys.push_back(k);
  }
  EXPECT_THAT(keys, ElementsAre("kind", "containerId", "config", "ifName", "networkName", "netns",
                                "cniArgs", "capabilityArgs", "result"));
  EXPECT_EQ(json["kind"], "cniCacheV1");
  EXPECT_EQ(*Base64Decode(json["config"].get<std::string>()), list.bytes);
  EXPECT_EQ(json["cniArgs"], cni::OrderedJson::parse(R"([["IgnoreUnknown","1"]])"));
  EXPECT_EQ(cni::Json::parse(json["result"].dump()), Encoded());
}

TEST_F(ChainTest, DelRunsInReverseWithCachedResultAndRemovesCache) {
  auto chain = MakeChain();
  const auto list = List(StandardList());
  ASSERT_TRUE(chain.Add(list, Rt()).ok());
  exec_.calls.clear();
  RuntimeConf bare{.container_id = "c1", .netns = "", .ifname = "eth0"};
  // The CLI's flow: capability args come back from the cache.
  const RuntimeConf rt = chain.WithCachedArgs(list, bare);
  EXPECT_EQ(rt.netns, "/run/netns/c1");
  ASSERT_TRUE(chain.Del(list, rt).ok());
  EXPECT_THAT(exec_.Sequence(), ElementsAre("bandwidth DEL", "portmap DEL", "bridge DEL"));
  for (const auto& call : exec_.calls) {
    EXPECT_EQ(call.stdin_json["prevResult"], Encoded());
  }
  EXPECT_TRUE(exec_.calls[1].stdin_json["runtimeConfig"].contains("portMappings"));
  EXPECT_NE(::access(CachePath().c_str(), F_OK), 0);
  // DEL is repeatable: without a cache the plugins still run, with no prevResult.
  exec_.calls.clear();
  ASSERT_TRUE(chain.Del(list, rt).ok());
  EXPECT_EQ(exec_.calls.size(), 3u);
  EXPECT_FALSE(exec_.calls[0].stdin_json.contains("prevResult"));
}

TEST_F(ChainTest, DelBelow040PassesNoPrevResult) {
  auto chain = MakeChain();
  const auto list = List(StandardList("0.3.1"));
  exec_.replies["bridge ADD"] = ExecOutput{0, R"({"cniVersion":"0.3.1","ips":[{"version":"4",
      "address":"203.0.113.2/24"}]})",
                                           ""};
  exec_.replies["portmap ADD"] = exec_.replies["bridge ADD"];
  exec_.replies["bandwidth ADD"] = exec_.replies["bridge ADD"];
  ASSERT_TRUE(chain.Add(list, Rt()).ok());
  exec_.calls.clear();
  ASSERT_TRUE(chain.Del(list, Rt()).ok());
  for (const auto& call : exec_.calls) {
    EXPECT_FALSE(call.stdin_json.contains("prevResult"));
  }
}

TEST_F(ChainTest, DelKeepsGoingAfterAFailureAndKeepsTheCache) {
  auto chain = MakeChain();
  const auto list = List(StandardList());
  ASSERT_TRUE(chain.Add(list, Rt()).ok());
  exec_.calls.clear();
  exec_.replies["portmap DEL"] = ExecOutput{1, R"({"code":100,"msg":"nat table busy"})", ""};
  auto status = chain.Del(list, Rt());
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().code, 100);
  EXPECT_THAT(status.error().msg, ::testing::HasSubstr("type=\"portmap\" failed (delete)"));
  EXPECT_THAT(exec_.Sequence(), ElementsAre("bandwidth DEL", "portmap DEL", "bridge DEL"));
  EXPECT_EQ(::access(CachePath().c_str(), F_OK), 0) << "a retry must still find the result";
}

TEST_F(ChainTest, FailedAddDeletesTheWholeChainAndCachesNothing) {
  auto chain = MakeChain();
  exec_.replies["portmap ADD"] = ExecOutput{1, R"({"code":7,"msg":"bad mapping"})", ""};
  auto result = chain.Add(List(StandardList()), Rt());
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, 7);
  EXPECT_EQ(result.error().msg, "plugin type=\"portmap\" failed (add): bad mapping");
  EXPECT_THAT(exec_.Sequence(), ElementsAre("bridge ADD", "portmap ADD", "bandwidth DEL",
                                            "portmap DEL", "bridge DEL"));
  EXPECT_NE(::access(CachePath().c_str(), F_OK), 0);
}

TEST_F(ChainTest, MissingPluginFailsBeforeAnythingRuns) {
  auto chain = MakeChain();
  exec_.installed = {"bridge", "portmap"};
  auto result = chain.Add(List(StandardList()), Rt());
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(result.error().msg, ::testing::HasSubstr("failed to find plugin \"bandwidth\""));
  EXPECT_TRUE(exec_.calls.empty());
}

TEST_F(ChainTest, PluginErrorWithoutJsonUsesStderr) {
  auto chain = MakeChain();
  exec_.replies["bridge ADD"] = ExecOutput{2, "", "panic: runtime error\n"};
  auto result = chain.Add(List(StandardList()), Rt());
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(result.error().msg,
              ::testing::HasSubstr("netplugin failed: \"panic: runtime error\""));
}

TEST_F(ChainTest, CheckUsesCachedResultConvertedToListVersion) {
  auto chain = MakeChain();
  const auto list = List(StandardList());
  ASSERT_TRUE(chain.Add(list, Rt()).ok());
  exec_.calls.clear();
  ASSERT_TRUE(chain.Check(list, Rt()).ok());
  EXPECT_THAT(exec_.Sequence(), ElementsAre("bridge CHECK", "portmap CHECK", "bandwidth CHECK"));
  EXPECT_EQ(exec_.calls[0].stdin_json["prevResult"], Encoded());
}

TEST_F(ChainTest, CheckFailsFirstErrorAndWithoutCache) {
  auto chain = MakeChain();
  const auto list = List(StandardList());
  auto missing = chain.Check(list, Rt());
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, kErrUnknownContainer);
  ASSERT_TRUE(chain.Add(list, Rt()).ok());
  exec_.calls.clear();
  exec_.replies["portmap CHECK"] = ExecOutput{1, R"({"code":103,"msg":"chain missing"})", ""};
  auto status = chain.Check(list, Rt());
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().code, 103);
  EXPECT_THAT(exec_.Sequence(), ElementsAre("bridge CHECK", "portmap CHECK"));
}

TEST_F(ChainTest, CheckGating) {
  auto chain = MakeChain();
  auto old = chain.Check(List(StandardList("0.3.1")), Rt());
  ASSERT_FALSE(old.ok());
  EXPECT_EQ(old.error().code, kErrIncompatibleVersion);
  auto list = List(R"({"cniVersion":"1.0.0","name":"std","disableCheck":"TRUE",
                      "plugins":[{"type":"bridge"}]})");
  EXPECT_TRUE(list.disable_check);
  EXPECT_TRUE(chain.Check(list, Rt()).ok());
  EXPECT_TRUE(exec_.calls.empty());
}

TEST_F(ChainTest, GcDeletesStaleAttachmentsThenGcsEveryPlugin) {
  auto chain = MakeChain();
  const auto list = List(StandardList("1.1.0"));
  for (const std::string id : {"keep1", "stale1"}) {
    RuntimeConf rt = Rt();
    rt.container_id = id;
    ASSERT_TRUE(chain.Add(list, rt).ok());
  }
  // An attachment of another network is never touched.
  auto other = List(R"({"cniVersion":"1.1.0","name":"other","plugins":[{"type":"bridge"}]})");
  ASSERT_TRUE(chain.Add(other, Rt()).ok());
  exec_.calls.clear();
  ASSERT_TRUE(chain.Gc(list, {{"keep1", "eth0"}}).ok());
  EXPECT_THAT(exec_.Sequence(), ElementsAre("bandwidth DEL", "portmap DEL", "bridge DEL",
                                            "bridge GC", "portmap GC", "bandwidth GC"));
  EXPECT_EQ(exec_.calls[0].env.container_id, "stale1");
  // Stale DEL used the cached capability arguments.
  EXPECT_TRUE(exec_.calls[1].stdin_json["runtimeConfig"].contains("portMappings"));
  const auto gc = exec_.calls[3];
  EXPECT_EQ(gc.env.container_id, "");
  EXPECT_EQ(gc.env.path, "/fake");
  EXPECT_EQ(gc.stdin_json["cni.dev/valid-attachments"],
            cni::Json::parse(R"([{"containerID":"keep1","ifname":"eth0"}])"));
  EXPECT_EQ(gc.stdin_json["cni.dev/attachments"], gc.stdin_json["cni.dev/valid-attachments"]);
  EXPECT_EQ(::access((cache_dir_ + "/results/std-stale1-eth0").c_str(), F_OK), -1);
  EXPECT_EQ(::access((cache_dir_ + "/results/std-keep1-eth0").c_str(), F_OK), 0);
  EXPECT_EQ(::access((cache_dir_ + "/results/other-c1-eth0").c_str(), F_OK), 0);
}

TEST_F(ChainTest, GcBelow110OnlyDeletesStaleAndKeepsGoingOnErrors) {
  auto chain = MakeChain();
  const auto list = List(StandardList("1.0.0"));
  for (const std::string id : {"a", "b"}) {
    RuntimeConf rt = Rt();
    rt.container_id = id;
    ASSERT_TRUE(chain.Add(list, rt).ok());
  }
  exec_.calls.clear();
  exec_.replies["bridge DEL"] = ExecOutput{1, R"({"code":11,"msg":"busy"})", ""};
  auto status = chain.Gc(list, {});
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.error().msg, ::testing::HasSubstr("stale attachment a eth0"));
  EXPECT_THAT(status.error().msg, ::testing::HasSubstr("stale attachment b eth0"));
  EXPECT_EQ(exec_.calls.size(), 6u);  // 3 DEL per attachment, no GC below 1.1.0
}

TEST_F(ChainTest, StatusGatingAndErrorCode) {
  auto chain = MakeChain();
  auto old = chain.GetStatus(List(StandardList("1.0.0")));
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(*old, StatusOutcome::kNotSupportedByVersion);
  EXPECT_TRUE(exec_.calls.empty());
  const auto list = List(StandardList("1.1.0"));
  auto ok = chain.GetStatus(list);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, StatusOutcome::kAvailable);
  EXPECT_THAT(exec_.Sequence(), ElementsAre("bridge STATUS", "portmap STATUS", "bandwidth STATUS"));
  EXPECT_EQ(exec_.calls[0].stdin_json["name"], "std");
  exec_.calls.clear();
  exec_.replies["portmap STATUS"] = ExecOutput{1, R"({"code":50,"msg":"no iptables"})", ""};
  auto failed = chain.GetStatus(list);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().code, 50);
  EXPECT_EQ(exec_.calls.size(), 2u);
}

TEST(BuildPluginConfigTest, InjectsNameVersionAndOverridesRuntimeConfig) {
  auto list = ParseConfList(R"({"cniVersion":"1.0.0","name":"n","plugins":[
      {"type":"portmap","name":"ignored","cniVersion":"0.1.0","runtimeConfig":{"x":1},
       "capabilities":{"portMappings":true}}]})");
  ASSERT_TRUE(list.ok());
  auto conf = BuildPluginConfig(*list, list->plugins[0], std::nullopt,
                                cni::Json::parse(R"({"portMappings":[]})"));
  ASSERT_TRUE(conf.ok());
  const auto j = cni::Json::parse(*conf);
  EXPECT_EQ(j["name"], "n");
  EXPECT_EQ(j["cniVersion"], "1.0.0");
  EXPECT_EQ(j["runtimeConfig"], cni::Json::parse(R"({"portMappings":[]})"));
}

// An entry podman 4.3.1 (libcni 1.1.2) wrote for `podman run -p 18080:8080 --network nodegate`
// with conf/examples/10-standard.conflist: it has no "netns" key, so the namespace comes from
// the result's sandbox, and CHECK/DEL get the mappings podman passed.
TEST_F(ChainTest, ReadsTheCacheEntryPodmanWrote) {
  const char* src = std::getenv("NODEGATE_SOURCE_DIR");
  auto bytes = sys::ReadFile(std::string(src ? src : ".") +
                             "/runtime/chain/testdata/podman-4.3.1-result-cache.json");
  ASSERT_TRUE(bytes.ok()) << bytes.error().msg;
  auto entry = DecodeCacheEntry(*bytes);
  ASSERT_TRUE(entry.ok()) << entry.error().msg;
  ASSERT_TRUE(WriteCacheEntry(cache_dir_, *entry).ok());
  auto list = ParseConfList(entry->config);
  ASSERT_TRUE(list.ok()) << list.error().msg;
  EXPECT_EQ(list->name, "nodegate");
  auto chain = MakeChain();
  const RuntimeConf rt =
      chain.WithCachedArgs(*list, {.container_id = entry->container_id, .ifname = "eth0"});
  EXPECT_EQ(rt.netns, "/run/netns/netns-a872f042-6373-93a7-c440-c2fb2d85357e");
  EXPECT_EQ(rt.capability_args["portMappings"][0]["hostPort"], 18080);
  EXPECT_EQ(JoinCniArgs(rt.args), "IgnoreUnknown=1;K8S_POD_NAME=web");
  auto cached = chain.CachedResult(*list, rt);
  ASSERT_TRUE(cached.ok() && cached->has_value());
  EXPECT_EQ((*cached)->ips[0].address.ToString(), "10.88.0.2/16");
  ASSERT_TRUE(chain.Check(*list, rt).ok());
  EXPECT_THAT(exec_.Sequence(), ElementsAre("bridge CHECK", "portmap CHECK", "bandwidth CHECK"));
  EXPECT_EQ(exec_.calls[1].stdin_json["runtimeConfig"]["portMappings"][0]["containerPort"], 8080);
}

}  // namespace
}  // namespace nodegate::runtime
