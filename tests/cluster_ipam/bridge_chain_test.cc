// The bridge plugins, ours and Debian's reference, delegating their IPAM to cluster-ipam as a
// node of a cluster-ipam cluster runs them. Each bridge runs in a node namespace of the test's
// own (tests/bridge/support.h); the cluster-ipam it execs runs there too and reaches the three
// etcd members on the machine's loopback through the node agent's Unix socket, which a network
// namespace does not hide: the way the DaemonSet's agent serves a node.
//   - ADD: the container's eth0 holds the pool's first address, the bridge holds the gateway,
//     etcd holds the handle; CHECK passes; DEL removes the handle, and DEL again and DEL with the
//     namespace gone succeed.
//   - Ours and the reference print the same result for the same pool (one network each).
//   - An attachment added by one bridge is deleted by the other, its address released.
//   - An exhausted pool: ADD fails with cluster-ipam's error, and ours leaves no veth behind.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/bridge/support.h"
#include "tests/cluster_ipam/harness.h"

namespace nodegate::cluster_ipam::testing {
namespace {

using Json = nlohmann::json;
using nodegate::bridge::testing::BridgeNode;
using nodegate::bridge::testing::ErrorMessage;
using nodegate::bridge::testing::LineDiff;
using nodegate::bridge::testing::Normalise;
using nodegate::bridge::testing::Ours;
using nodegate::bridge::testing::Reference;
using nodegate::bridge::testing::WithPrevResult;
using nodegate::testing::CountListed;

class BridgeChainTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    etcd_ = new EtcdCluster();
    if (!etcd_->ok()) return;
    agent_ = new Agent(etcd_->dir() + "/agent.sock", etcd_->dir() + "/agent.log");
    agent_started_ = agent_->Start();
  }
  static void TearDownTestSuite() {
    delete agent_;
    agent_ = nullptr;
    delete etcd_;
    etcd_ = nullptr;
  }
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root: the bridges run in network namespaces";
    ASSERT_TRUE(etcd_->ok()) << etcd_->failure();
    ASSERT_TRUE(agent_started_) << agent_->log();
  }

  // A bridge config (name `network`) whose IPAM is cluster-ipam through the agent.
  static std::string BridgeConf(const std::string& network, const std::string& ranges,
                                const std::string& version = "1.0.0") {
    Json conf = Json::parse(Conf(*etcd_, {.version = version,
                                          .network = network,
                                          .ranges = ranges,
                                          .agent_socket = agent_->socket()}));
    conf["type"] = "bridge";
    conf["bridge"] = "cni0";
    conf["isGateway"] = true;
    conf["ipMasq"] = true;
    return conf.dump();
  }
  // The handles etcd holds for `network` (etcdctl prints one key per line); -1 when etcdctl
  // failed (could not look is not none).
  static int Handles(const std::string& network) {
    int exit_code = -1;
    const std::string keys =
        etcd_->Ctl("get --prefix --keys-only /nodegate/ipam/" + network + "/handles/", &exit_code);
    if (exit_code != 0) return -1;
    int count = 0;
    for (size_t at = 0; (at = keys.find("/handles/", at)) != std::string::npos; ++at) ++count;
    return count;
  }
  // How many verbs the agent has served that its log names "<VERB> <container>/<ifname>".
  static int AgentServed(const std::string& verb_and_handle) {
    const std::string log = agent_->log(), line = "cluster-ipam " + verb_and_handle + " node ";
    int count = 0;
    for (size_t at = 0; (at = log.find(line, at)) != std::string::npos; ++at) ++count;
    return count;
  }
  // The bridge in `node` run with CNI_PATH holding our cluster-ipam.
  static nodegate::testing::PluginOutput Run(BridgeNode& node, const std::string& bridge,
                                             const std::string& command, const std::string& id,
                                             const std::string& conf) {
    const std::string cni_path =
        std::filesystem::path(nodegate::testing::BinPath("cluster-ipam")).parent_path();
    return node.Run(bridge, command, id, conf, cni_path);
  }

  static EtcdCluster* etcd_;
  static Agent* agent_;
  static bool agent_started_;
};
EtcdCluster* BridgeChainTest::etcd_ = nullptr;
Agent* BridgeChainTest::agent_ = nullptr;
bool BridgeChainTest::agent_started_ = false;

constexpr const char* kPool = R"([[{"subnet":"10.66.0.0/16","blockSize":28}]])";

TEST_F(BridgeChainTest, AddCheckDelWithEitherBridge) {
  std::string results[2];
  for (int i = 0; i < 2; ++i) {
    const bool ours = i == 0;
    SCOPED_TRACE(ours ? "our bridge" : "the reference bridge");
    const std::string network = ours ? "chain-ours" : "chain-ref";
    BridgeNode node(ours ? "cio" : "cir");
    const std::string conf = BridgeConf(network, kPool);
    const std::string bridge = ours ? Ours() : Reference();
    const int served = AgentServed("ADD c1/eth0");
    const auto add = Run(node, bridge, "ADD", "c1", conf);
    ASSERT_EQ(add.exit_code, 0) << add.out << add.err;
    EXPECT_EQ(AgentServed("ADD c1/eth0"), served + 1) << "the agent served the ADD";
    results[i] = add.out;
    // The address and the gateway cluster-ipam gave, where the bridge put them.
    const Json ip = Json::parse(add.out)["ips"][0];
    const std::string address = ip.value("address", "");
    const std::string gateway = ip.value("gateway", "");
    const std::string prefix_length = address.substr(address.find('/'));
    EXPECT_EQ(address.rfind("10.66.", 0), 0u) << add.out;
    EXPECT_FALSE(gateway.empty()) << add.out;
    EXPECT_EQ(CountListed(node.Container("c1"), "ip -o -4 addr show dev eth0", address), 1);
    EXPECT_EQ(CountListed(node.node(), "ip -o -4 addr show dev cni0", gateway + prefix_length), 1);
    EXPECT_EQ(Handles(network), 1);

    const auto check = Run(node, bridge, "CHECK", "c1", WithPrevResult(conf, add.out));
    EXPECT_EQ(check.exit_code, 0) << check.out << check.err;

    const auto del = Run(node, bridge, "DEL", "c1", conf);
    EXPECT_EQ(del.exit_code, 0) << del.out << del.err;
    EXPECT_EQ(Handles(network), 0) << "DEL released the address";
    EXPECT_EQ(CountListed(node.node(), "ip -o link show type veth"), 0);
    EXPECT_EQ(Run(node, bridge, "DEL", "c1", conf).exit_code, 0) << "DEL again";

    ASSERT_EQ(Run(node, bridge, "ADD", "c2", conf).exit_code, 0);
    EXPECT_EQ(Handles(network), 1);
    node.RemoveContainer("c2");
    const auto gone = Run(node, bridge, "DEL", "c2", conf);
    EXPECT_EQ(gone.exit_code, 0) << gone.out << gone.err;
    EXPECT_EQ(Handles(network), 0) << "DEL with the namespace gone released the address";
  }
  // The same pool (one network each), the same first address: the same result.
  EXPECT_EQ(LineDiff(Normalise(results[0]), Normalise(results[1])), "");
}

TEST_F(BridgeChainTest, EitherBridgeDeletesTheOthersAttachment) {
  for (int i = 0; i < 2; ++i) {
    const bool ours_adds = i == 0;
    SCOPED_TRACE(ours_adds ? "ours adds, the reference deletes"
                           : "the reference adds, ours deletes");
    const std::string network = ours_adds ? "mixed-o" : "mixed-r";
    BridgeNode node(ours_adds ? "cmo" : "cmr");
    const std::string conf = BridgeConf(network, kPool);
    const auto add = Run(node, ours_adds ? Ours() : Reference(), "ADD", "c1", conf);
    ASSERT_EQ(add.exit_code, 0) << add.out << add.err;
    ASSERT_EQ(Handles(network), 1);
    const auto del = Run(node, ours_adds ? Reference() : Ours(), "DEL", "c1", conf);
    EXPECT_EQ(del.exit_code, 0) << del.out << del.err;
    EXPECT_EQ(Handles(network), 0);
    EXPECT_EQ(CountListed(node.node(), "ip -o link show type veth"), 0);
    EXPECT_EQ(CountListed(node.Container("c1"), "ip -o link show", "eth0"), 0);
  }
}

TEST_F(BridgeChainTest, ExhaustedPoolFailsAndOursLeavesNothing) {
  // A /29 in one block: a handful of addresses, then none.
  const std::string ranges = R"([[{"subnet":"10.67.0.0/29","blockSize":29}]])";
  BridgeNode ours("cxo"), ref("cxr");
  const std::string ours_conf = BridgeConf("full-ours", ranges);
  const std::string ref_conf = BridgeConf("full-ref", ranges);
  int added = 0;
  nodegate::testing::PluginOutput o, r;
  for (; added < 8; ++added) {
    const std::string id = "c" + std::to_string(added);
    o = Run(ours, Ours(), "ADD", id, ours_conf);
    r = Run(ref, Reference(), "ADD", id, ref_conf);
    ASSERT_EQ(o.exit_code, r.exit_code) << "ours: " << o.out << "\nref: " << r.out;
    if (o.exit_code != 0) break;
  }
  ASSERT_GT(added, 0) << o.out << o.err;
  ASSERT_LT(added, 8) << "the pool never ran out";
  // The failed ADD: the same error from either bridge, and nothing of it left in ours.
  EXPECT_EQ(ErrorMessage(o), ErrorMessage(r)) << "ours: " << o.out << "\nref: " << r.out;
  EXPECT_NE(ErrorMessage(o).find("no IP addresses available"), std::string::npos) << o.out;
  const std::string failed = "c" + std::to_string(added);
  EXPECT_EQ(CountListed(ours.node(), "ip -o link show type veth"), added) << "no veth left";
  EXPECT_EQ(CountListed(ours.Container(failed), "ip -o link show", "eth0"), 0);
  EXPECT_EQ(Handles("full-ours"), added);
  for (int i = 0; i <= added; ++i) {
    const std::string id = "c" + std::to_string(i);
    EXPECT_EQ(Run(ours, Ours(), "DEL", id, ours_conf).exit_code, 0) << id;
    EXPECT_EQ(Run(ref, Reference(), "DEL", id, ref_conf).exit_code, 0) << id;
  }
  EXPECT_EQ(Handles("full-ours"), 0);
  EXPECT_EQ(Handles("full-ref"), 0);
}

}  // namespace
}  // namespace nodegate::cluster_ipam::testing
