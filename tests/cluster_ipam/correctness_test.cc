// cluster-ipam as runtimes run it, against three real etcd members (Debian's etcd-server)
// started by this test: many nodes allocating at once never share an address and never share
// a block; borrowing; exhaustion; idempotent ADD and DEL; GC; dual-stack; every CNI version;
// STATUS; and `nodegate ipam show` / `check` reading it all back. One cluster for the file,
// one network (an etcd key prefix) per test.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "tests/cluster_ipam/harness.h"

namespace nodegate::cluster_ipam::testing {
namespace {

using Json = nlohmann::json;

class CorrectnessTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { etcd_ = new EtcdCluster(); }
  static void TearDownTestSuite() {
    delete etcd_;
    etcd_ = nullptr;
  }
  void SetUp() override { ASSERT_TRUE(etcd_->ok()) << etcd_->failure(); }

  static std::string C(ConfOptions o) { return Conf(*etcd_, o); }
  static std::map<std::string, std::string> Keys(const std::string& network) {
    return etcd_->Dump("/nodegate/ipam/" + network + "/");
  }

  static EtcdCluster* etcd_;
};
EtcdCluster* CorrectnessTest::etcd_ = nullptr;

TEST_F(CorrectnessTest, TenNodesAllocatingAtOnceNeverShareAnAddressOrABlock) {
  constexpr int kNodes = 10, kPerNode = 30;
  auto conf = [](int node) {
    return C({.network = "many",
              .node = "node-" + std::to_string(node),
              .ranges = R"([[{"subnet":"10.50.0.0/20","blockSize":27}]])"});
  };
  const auto adds = InParallel(kNodes * kPerNode, 8, [&](int i) {
    return Cni("ADD", conf(i % kNodes), "c" + std::to_string(i));
  });
  std::set<std::string> seen;
  for (size_t i = 0; i < adds.size(); ++i) {
    ASSERT_EQ(adds[i].exit_code, 0) << i << ": " << adds[i].out << adds[i].err;
    const auto ips = AddressesOf(adds[i].out);
    ASSERT_EQ(ips.size(), 1u);
    EXPECT_TRUE(seen.insert(ips[0]).second) << "duplicate " << ips[0];
  }
  EXPECT_EQ(seen.size(), size_t{kNodes * kPerNode});

  // Read back by etcdctl: each address in exactly one block entry, every block claimed by
  // exactly the node it sits under, and no two blocks overlapping.
  const auto kvs = Keys("many");
  std::map<std::string, std::string> claims;  // block -> node
  std::set<std::string> entries;
  for (const auto& [key, value] : kvs) {
    const auto j = Json::parse(value, nullptr, false);
    if (key.find("/blocks/") != std::string::npos && key.find("/nodes/") == std::string::npos) {
      claims[j["block"]] = j["node"];
    }
  }
  for (const auto& [key, value] : kvs) {
    if (key.find("/nodes/") == std::string::npos || key.find("/blocks/") == std::string::npos) {
      continue;
    }
    const auto j = Json::parse(value);
    const std::string node = key.substr(key.find("/nodes/") + 7);
    EXPECT_EQ(claims[j["block"]], node.substr(0, node.find('/'))) << key;
    for (const auto& [ordinal, entry] : j["allocations"].items()) {
      EXPECT_TRUE(entries.insert(j["block"].get<std::string>() + "#" + ordinal).second);
    }
  }
  EXPECT_EQ(entries.size(), seen.size());
  // 30 addresses per node fit one /27 (30 usable): 10 to 20 blocks, never shared.
  EXPECT_GE(claims.size(), 10u);
  EXPECT_LE(claims.size(), 20u);
  EXPECT_EQ(ProblemKinds(conf(0)), std::vector<std::string>{});

  const auto dels = InParallel(kNodes * kPerNode, 8, [&](int i) {
    return Cni("DEL", conf(i % kNodes), "c" + std::to_string(i));
  });
  for (const auto& d : dels) ASSERT_EQ(d.exit_code, 0) << d.out << d.err;
  for (const auto& [key, value] : Keys("many")) {
    EXPECT_EQ(key.find("/handles/"), std::string::npos) << key;
  }
  EXPECT_EQ(ProblemKinds(conf(0)), std::vector<std::string>{});
}

TEST_F(CorrectnessTest, BorrowsWhenThePoolHasNoFreeBlockUnlessStrict) {
  // Four /28 blocks; four nodes claim one each, the fifth can only borrow.
  const std::string ranges = R"([[{"subnet":"10.51.0.0/26","blockSize":28}]])";
  for (int n = 1; n <= 4; ++n) {
    const auto out =
        Cni("ADD", C({.network = "borrow", .node = "n" + std::to_string(n), .ranges = ranges}),
            "own" + std::to_string(n));
    ASSERT_EQ(out.exit_code, 0) << out.out;
  }
  const auto strict =
      Cni("ADD", C({.network = "borrow", .node = "n5", .ranges = ranges, .strict_affinity = true}),
          "strict");
  EXPECT_EQ(strict.exit_code, 1);
  EXPECT_EQ(ErrorCode(strict), 101) << strict.out;
  const std::string n5 = C({.network = "borrow", .node = "n5", .ranges = ranges});
  const auto borrowed = Cni("ADD", n5, "guest");
  ASSERT_EQ(borrowed.exit_code, 0) << borrowed.out;
  const std::string ip = AddressesOf(borrowed.out)[0];
  const auto show = NodegateIpam(n5, {"-o", "json", "show"});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  const auto j = Json::parse(show.out);
  ASSERT_EQ(j["borrowed"].size(), 1u) << show.out;
  EXPECT_EQ(j["borrowed"][0]["ip"], ip);
  EXPECT_EQ(j["borrowed"][0]["node"], "n5");
  EXPECT_NE(j["borrowed"][0]["blockNode"], "n5");
  EXPECT_EQ(Cni("DEL", n5, "guest").exit_code, 0);
  EXPECT_EQ(Json::parse(NodegateIpam(n5, {"-o", "json", "show"}).out)["borrowed"].size(), 0u);
}

TEST_F(CorrectnessTest, ExhaustionIsACleanErrorThatChangesNothing) {
  const std::string conf =
      C({.network = "tiny", .ranges = R"([[{"subnet":"10.52.0.0/29","blockSize":29}]])"});
  for (int i = 0; i < 5; ++i) ASSERT_EQ(Cni("ADD", conf, "t" + std::to_string(i)).exit_code, 0);
  const auto before = Keys("tiny");
  const auto full = Cni("ADD", conf, "t5");
  EXPECT_EQ(full.exit_code, 1);
  EXPECT_EQ(ErrorCode(full), 101);
  EXPECT_EQ(Json::parse(full.out)["msg"],
            "no IP addresses available in range set: 10.52.0.1-10.52.0.6")
      << full.out;
  EXPECT_EQ(Keys("tiny"), before);
  const auto status = Cni("STATUS",
                          C({.version = "1.1.0",
                             .network = "tiny",
                             .ranges = R"([[{"subnet":"10.52.0.0/29","blockSize":29}]])"}),
                          "");
  EXPECT_EQ(ErrorCode(status), 50) << status.out;
  ASSERT_EQ(Cni("DEL", conf, "t3").exit_code, 0);
  EXPECT_EQ(Cni("STATUS", conf, "").exit_code, 0);
  EXPECT_EQ(Cni("ADD", conf, "t5").exit_code, 0);
}

TEST_F(CorrectnessTest, AddAndDelAreIdempotent) {
  const std::string conf = C({.network = "idem"});
  const auto first = Cni("ADD", conf, "same");
  ASSERT_EQ(first.exit_code, 0) << first.out;
  const auto kvs = Keys("idem");
  const auto again = Cni("ADD", conf, "same");
  ASSERT_EQ(again.exit_code, 0);
  EXPECT_EQ(again.out, first.out);
  EXPECT_EQ(Keys("idem"), kvs);  // nothing written the second time
  EXPECT_EQ(Cni("DEL", conf, "same").exit_code, 0);
  EXPECT_EQ(Cni("DEL", conf, "same").exit_code, 0);
  EXPECT_EQ(Cni("DEL", conf, "never-added").exit_code, 0);
  for (const auto& [key, value] : Keys("idem")) EXPECT_EQ(key.find("handles"), std::string::npos);
}

TEST_F(CorrectnessTest, GcReleasesThisNodesAttachmentsNotInTheList) {
  const std::string n1 = C({.network = "gc", .node = "gc-1"});
  const std::string n2 = C({.network = "gc", .node = "gc-2"});
  for (const char* id : {"a", "b", "c", "d", "e", "f"}) ASSERT_EQ(Cni("ADD", n1, id).exit_code, 0);
  ASSERT_EQ(Cni("ADD", n1, "a", "net1").exit_code, 0);
  for (const char* id : {"x", "y"}) ASSERT_EQ(Cni("ADD", n2, id).exit_code, 0);
  Json gc = Json::parse(n1);
  gc["cni.dev/valid-attachments"] = {{{"containerID", "a"}},  // every interface of a
                                     {{"containerID", "c"}, {"ifname", "eth0"}},
                                     {{"containerID", "e"}, {"ifname", "eth0"}}};
  const auto out = Cni("GC", gc.dump(), "");
  ASSERT_EQ(out.exit_code, 0) << out.out << out.err;
  std::set<std::string> handles;
  for (const auto& [key, value] : Keys("gc")) {
    const size_t at = key.find("/gc/handles/");
    if (at != std::string::npos) handles.insert(key.substr(at + 12));
  }
  EXPECT_EQ(handles,
            (std::set<std::string>{"a/eth0", "a/net1", "c/eth0", "e/eth0", "x/eth0", "y/eth0"}));
  EXPECT_EQ(ProblemKinds(n1), std::vector<std::string>{});
}

TEST_F(CorrectnessTest, DualStackGivesOneAddressPerFamilyAndCheckConfirmsIt) {
  const std::string conf =
      C({.network = "dual", .ranges = R"([[{"subnet":"10.53.0.0/16","blockSize":26}],
                                            [{"subnet":"fd00:53::/48","blockSize":122}]])"});
  const auto add = Cni("ADD", conf, "ds");
  ASSERT_EQ(add.exit_code, 0) << add.out;
  const auto ips = AddressesOf(add.out);
  ASSERT_EQ(ips.size(), 2u);
  EXPECT_EQ(ips[0].rfind("10.53.", 0), 0u);
  EXPECT_EQ(ips[1].rfind("fd00:53:", 0), 0u);
  Json check = Json::parse(conf);
  check["prevResult"] = Json::parse(add.out);
  EXPECT_EQ(Cni("CHECK", check.dump(), "ds").exit_code, 0);
  check["prevResult"]["ips"][1]["address"] = "fd00:53::ffff/48";
  const auto wrong = Cni("CHECK", check.dump(), "ds");
  EXPECT_EQ(ErrorCode(wrong), 103) << wrong.out;
  EXPECT_EQ(ErrorCode(Cni("CHECK", check.dump(), "other")), 103);
}

// Every version the suite speaks: the result in that version's schema, CHECK from 0.4.0, GC
// and STATUS from 1.1.0 (code 1 before), as the dispatcher gates them for every plugin.
TEST_F(CorrectnessTest, EveryCniVersion) {
  const std::string ranges = R"([[{"subnet":"10.54.0.0/16"}],[{"subnet":"fd00:54::/64"}]])";
  for (const char* v : {"0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"}) {
    SCOPED_TRACE(v);
    const std::string version = v;
    const std::string conf = C({.version = version, .network = "versions", .ranges = ranges});
    const std::string id = "v" + std::to_string(std::hash<std::string>{}(version) % 100000);
    const auto add = Cni("ADD", conf, id);
    ASSERT_EQ(add.exit_code, 0) << add.out;
    const auto j = Json::parse(add.out);
    EXPECT_EQ(j["cniVersion"], version);
    if (version < "0.3.0") {
      EXPECT_TRUE(j.contains("ip4") && j.contains("ip6")) << add.out;
      EXPECT_FALSE(j.contains("ips"));
    } else {
      ASSERT_EQ(j["ips"].size(), 2u);
      EXPECT_EQ(j["ips"][0].contains("version"), version < "1.0.0") << add.out;
    }
    Json check = Json::parse(conf);
    check["prevResult"] = j;
    const auto checked = Cni("CHECK", check.dump(), id);
    if (version < "0.4.0") {
      EXPECT_EQ(ErrorCode(checked), 1) << checked.out;
    } else {
      EXPECT_EQ(checked.exit_code, 0) << checked.out;
    }
    const auto status = Cni("STATUS", conf, "");
    if (version == "1.1.0") {
      EXPECT_EQ(status.exit_code, 0) << status.out;
    } else {
      EXPECT_EQ(ErrorCode(status), 1) << status.out;
    }
    EXPECT_EQ(Cni("DEL", conf, id).exit_code, 0);
  }
}

TEST_F(CorrectnessTest, StatusSaysWhenNoEndpointAnswers) {
  // A port nothing listens on (the first member's peer port is etcd's, but not its gateway).
  const auto out =
      Cni("STATUS", C({.network = "status", .timeout = "1s", .endpoints = {"https://127.0.0.1:1"}}),
          "");
  EXPECT_EQ(out.exit_code, 1);
  EXPECT_EQ(ErrorCode(out), 50) << out.out;
  EXPECT_NE(out.out.find("127.0.0.1:1"), std::string::npos) << out.out;
}

// A node switching from host-local: its reservation files (as host-local writes them) become
// its handles in the pool; the running pods' repeated ADD returns the same addresses; an
// address another attachment holds is refused; and the import is idempotent.
TEST_F(CorrectnessTest, ImportOfAHostLocalNodeKeepsItsPodsAddresses) {
  char tmpl[] = "/tmp/ng-import-XXXXXX";
  const std::string data_dir = ::mkdtemp(tmpl);
  const std::string dir = data_dir + "/hl-net";
  std::filesystem::create_directories(dir);
  const std::map<std::string, std::string> files = {
      {"10.55.0.10", "pod-a\r\neth0"},
      {"10.55.0.11", "pod-b\r\neth0"},
      {"10.55.0.12", "pod-c"},         // a legacy file: the id alone
      {"10.55.3.7", "pod-d\r\nnet1"},  // another block
      {"last_reserved_ip.0", "10.55.0.12"},
      {"lock", ""}};
  for (const auto& [name, content] : files) std::ofstream(dir + "/" + name) << content;
  const std::string ranges = R"([[{"subnet":"10.55.0.0/16","blockSize":26}]])";
  const std::string conf = C({.network = "import", .node = "imp-1", .ranges = ranges});
  const std::vector<std::string> args = {"import", "--node",         "imp-1", "--data-dir",
                                         data_dir, "--from-network", "hl-net"};
  auto dry = NodegateIpam(conf, {"import", "--node", "imp-1", "--data-dir", data_dir,
                                 "--from-network", "hl-net", "--dry-run"});
  EXPECT_EQ(dry.exit_code, 0) << dry.out << dry.err;
  EXPECT_TRUE(Keys("import").empty()) << "a dry run wrote";
  const auto imported = NodegateIpam(conf, args);
  ASSERT_EQ(imported.exit_code, 0) << imported.out << imported.err;
  EXPECT_NE(imported.out.find("pod-c/eth0"), std::string::npos) << imported.out;
  // The pods' repeated ADDs (the runtime's) get exactly their host-local addresses.
  EXPECT_EQ(AddressesOf(Cni("ADD", conf, "pod-a").out), std::vector<std::string>{"10.55.0.10"});
  EXPECT_EQ(AddressesOf(Cni("ADD", conf, "pod-c").out), std::vector<std::string>{"10.55.0.12"});
  EXPECT_EQ(AddressesOf(Cni("ADD", conf, "pod-d", "net1").out),
            std::vector<std::string>{"10.55.3.7"});
  // A new pod never gets an imported address.
  const auto fresh = AddressesOf(Cni("ADD", conf, "pod-new").out);
  ASSERT_EQ(fresh.size(), 1u);
  EXPECT_TRUE(fresh[0] != "10.55.0.10" && fresh[0] != "10.55.0.11" && fresh[0] != "10.55.0.12");
  // Again: nothing changes; and another node's file naming a taken address is refused.
  const auto before = Keys("import");
  EXPECT_EQ(NodegateIpam(conf, args).exit_code, 0);
  EXPECT_EQ(Keys("import"), before);
  std::ofstream(dir + "/10.55.0.10", std::ios::trunc) << "intruder\r\neth0";
  const auto clash = NodegateIpam(conf, args);
  EXPECT_EQ(clash.exit_code, 1) << clash.out;
  EXPECT_NE(clash.out.find("is held by pod-a/eth0"), std::string::npos) << clash.out;
  EXPECT_EQ(ProblemKinds(conf), std::vector<std::string>{});
  std::filesystem::remove_all(data_dir);
}

// A node removed from the cluster: check names its blocks and handles once told the cluster's
// nodes; release --node keeps every block a live handle holds, and with --handles releases
// the node's handles and then its blocks; other nodes are untouched.
TEST_F(CorrectnessTest, ReleaseOfARemovedNode) {
  const std::string ranges = R"([[{"subnet":"10.56.0.0/16","blockSize":28}]])";
  const std::string gone = C({.network = "removed", .node = "gone-1", .ranges = ranges});
  const std::string stays = C({.network = "removed", .node = "stays-1", .ranges = ranges});
  for (int i = 0; i < 20; ++i) ASSERT_EQ(Cni("ADD", gone, "g" + std::to_string(i)).exit_code, 0);
  ASSERT_EQ(Cni("ADD", stays, "s0").exit_code, 0);
  const auto kinds = ProblemKinds(stays, {"--nodes", "stays-1"});
  EXPECT_EQ(kinds.size(), 20u + 2u) << ::testing::PrintToString(kinds);  // handles and 2 blocks
  for (const auto& k : kinds) EXPECT_EQ(k.rfind("node-gone ", 0), 0u) << k;
  const auto kept = NodegateIpam(stays, {"-o", "json", "release", "--node", "gone-1"});
  EXPECT_EQ(kept.exit_code, 1) << kept.out << kept.err;
  EXPECT_EQ(Json::parse(kept.out)["keptBlocks"].size(), 2u) << kept.out;
  EXPECT_EQ(Json::parse(kept.out)["releasedBlocks"].size(), 0u) << kept.out;
  const auto released =
      NodegateIpam(stays, {"-o", "json", "release", "--node", "gone-1", "--handles"});
  ASSERT_EQ(released.exit_code, 0) << released.out << released.err;
  EXPECT_EQ(Json::parse(released.out)["releasedHandles"].size(), 20u);
  EXPECT_EQ(Json::parse(released.out)["releasedBlocks"].size(), 2u);
  for (const auto& [key, value] : Keys("removed")) {
    EXPECT_EQ(key.find("gone-1"), std::string::npos) << key;
  }
  EXPECT_EQ(ProblemKinds(stays, {"--nodes", "stays-1"}), std::vector<std::string>{});
  EXPECT_EQ(Cni("DEL", stays, "s0").exit_code, 0);
  // The freed blocks are claimed again by the next node that needs them.
  EXPECT_EQ(
      Cni("ADD", C({.network = "removed", .node = "new-1", .ranges = ranges}), "n0").exit_code, 0);
}

// One handle released by an operator (a pod whose runtime lost it).
TEST_F(CorrectnessTest, ReleaseOfOneHandle) {
  const std::string conf = C({.network = "onehandle"});
  ASSERT_EQ(Cni("ADD", conf, "lost").exit_code, 0);
  const auto out = NodegateIpam(conf, {"release", "--handle", "lost/eth0"});
  EXPECT_EQ(out.exit_code, 0) << out.err;
  EXPECT_EQ(out.out, "released lost/eth0\n");
  EXPECT_EQ(NodegateIpam(conf, {"release", "--handle", "lost/eth0"}).out,
            "released lost/eth0 (held nothing)\n");
  for (const auto& [key, value] : Keys("onehandle")) {
    EXPECT_EQ(key.find("/handles/"), std::string::npos) << key;
  }
  EXPECT_EQ(NodegateIpam(conf, {"release", "--handle", "no-slash"}).exit_code, 2);
}

}  // namespace
}  // namespace nodegate::cluster_ipam::testing
