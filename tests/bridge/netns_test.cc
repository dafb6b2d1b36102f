// Differential tests of the built bridge plugin against Debian's reference bridge (v1.1.1),
// each side in throwaway node and container namespaces of its own: the same calls must print
// the same results and errors, and leave the same kernel objects (links, addresses, routes,
// bridge ports and VLANs, sysctls, table nat of both families in the node's iptables mode, the
// nftables ruleset) and the same host-local files, random names and MACs aside. Then state
// made by one plugin is removed by the other on one node, and what the reference cannot do
// (its later keys) is checked against the kernel directly.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "lib/base/scope_guard.h"
#include "lib/cni/sibling.h"
#include "tests/bridge/support.h"

namespace nodegate::bridge::testing {
namespace {

namespace fs = std::filesystem;
using nodegate::testing::CountListed;
using nodegate::testing::RunCommand;

constexpr const char* kV4 = R"([[{"subnet":"10.22.0.0/24"}]])";
constexpr const char* kV6 = R"([[{"subnet":"fd22::/64"}]])";
constexpr const char* kDual = R"([[{"subnet":"10.22.0.0/24"}],[{"subnet":"fd22::/64"}]])";
constexpr const char* kDefaultRoute = R"(,"routes":[{"dst":"0.0.0.0/0"}])";

struct Case {
  std::string name;
  std::string extra;       // top-level keys, starting with a comma
  std::string ranges;      // "" : no ipam
  std::string ipam_extra;  // more ipam keys, starting with a comma
  std::string version = "1.0.0";
  std::string cni_args;  // CNI_ARGS
  // Run in each node before the first ADD (say a bridge with an address of its own).
  std::string node_setup;
  // Ours' message where it refuses earlier than the reference, in words of its own.
  std::string our_message;
};

// What ours does on purpose where Debian's 1.1.1 does not (plugins/bridge/README.md, "Where
// it differs"): upstream's later ConfigureIface keeps a container's IPv6 addresses when its
// interface goes down (keep_addr_on_down=1). Checked on its own below.
std::string WithoutKnownDifferences(std::string state) {
  const std::string kept = "ipv6/conf/eth0/keep_addr_on_down=1";
  for (size_t at; (at = state.find(kept)) != std::string::npos;) {
    state.replace(at, kept.size(), "ipv6/conf/eth0/keep_addr_on_down=0");
  }
  return state;
}

// What an attachment of `id` has on a node: veths, masquerade chains, macspoofchk rules, the
// container's interface, host-local reservations. A failed call must not add to it.
std::string Leftovers(BridgeNode& node, const std::string& id) {
  return "veths " + std::to_string(CountListed(node.node(), "ip -o link show type veth")) +
         ", masquerade rules " +
         std::to_string(
             CountListed(node.node(), ModeBinDir(node.mode()) + "/iptables-save -t nat", "CNI-") +
             CountListed(node.node(), ModeBinDir(node.mode()) + "/ip6tables-save -t nat", "CNI-")) +
         ", macspoofchk rules " +
         std::to_string(CountListed(node.node(), "nft list ruleset", "macspoofchk-" + id)) +
         ", container interface " +
         (node.Removed(id)
              ? std::string("(namespace gone)")
              : std::to_string(CountListed(node.Container(id), "ip -o link show", "eth0"))) +
         ", reserved " + std::to_string(node.IpamState().find(": " + id) != std::string::npos);
}

// ADD c1, ADD c2, CHECK c1, DEL c1 twice, DEL c2 with its namespace gone: every step's
// output and the state after it compared. Ours with our host-local, the reference with its.
void CompareLifecycle(const Case& c, Mode mode) {
  SCOPED_TRACE(c.name + " (" + ModeName(mode) + ")");
  BridgeNode ours("o", mode), ref("r", mode);
  if (!c.node_setup.empty()) {
    ours.node().MustRun(c.node_setup);
    ref.node().MustRun(c.node_setup);
  }
  const std::string ours_conf =
      BridgeConf(c.version, c.extra, ours.data_dir(), c.ranges, c.ipam_extra);
  const std::string ref_conf =
      BridgeConf(c.version, c.extra, ref.data_dir(), c.ranges, c.ipam_extra);
  auto step = [&](const std::string& what, const std::string& command, const std::string& id,
                  const std::string& o_conf, const std::string& r_conf, bool compare_state = true) {
    const std::string our_before = Leftovers(ours, id);
    PluginOutput o = ours.Run(Ours(), command, id, o_conf, OurIpamPath(), "eth0", c.cni_args);
    PluginOutput r =
        ref.Run(Reference(), command, id, r_conf, ReferenceIpamPath(), "eth0", c.cni_args);
    EXPECT_EQ(o.exit_code, r.exit_code)
        << what << "\nours: " << o.out << o.err << "\nref: " << r.out << r.err;
    if (r.exit_code == 0 && compare_state) {
      EXPECT_EQ(LineDiff(Normalise(o.out), Normalise(r.out)), "") << what;
    } else {
      EXPECT_EQ(ErrorMessage(o), c.our_message.empty() ? ErrorMessage(r) : c.our_message)
          << what << "\nours: " << o.out << "\nref: " << r.out;
    }
    if (r.exit_code == 0 && compare_state) {
      EXPECT_EQ(
          LineDiff(WithoutKnownDifferences(ours.State({"c1", "c2"})), ref.State({"c1", "c2"})), "")
          << what;
    } else if (r.exit_code != 0) {
      // A failed call leaves nothing behind in ours (the reference's failed ADD may leave its
      // veth pair and container interface: plugins/bridge/README.md).
      EXPECT_EQ(Leftovers(ours, id), our_before) << what;
    }
    return std::make_pair(o, r);
  };
  auto [add1, add1_ref] = step("ADD c1", "ADD", "c1", ours_conf, ref_conf);
  if (add1_ref.exit_code != 0) {
    // An error case: compared above, and nothing is reserved. Ours ran host-local while it
    // made the links, so its round-robin cursor (last_reserved_ip) may have moved.
    EXPECT_EQ(ours.IpamState().find(": c1"), std::string::npos) << ours.IpamState();
    return;
  }
  if (c.ranges.find("fd22") != std::string::npos) {
    EXPECT_EQ(CountListed(ours.Container("c1"),
                          "cat /proc/sys/net/ipv6/conf/eth0/keep_addr_on_down", "1"),
              1);
  }
  if (c.ranges.empty()) {
    // Debian's 1.1.1 runs IPAM CHECK without an IPAM (and fails: "no plugin name provided");
    // ours checks the layer-2 attachment.
    EXPECT_TRUE(Succeeds(ours.Run(Ours(), "CHECK", "c1", WithPrevResult(ours_conf, add1.out),
                                  OurIpamPath(), "eth0", c.cni_args)));
  } else if (c.version == "1.0.0" || c.version == "0.4.0") {
    step("CHECK c1", "CHECK", "c1", WithPrevResult(ours_conf, add1.out),
         WithPrevResult(ref_conf, add1_ref.out));
  }
  // After CHECK c1: a second port may move the bridge's MAC (when no gateway pins it), which
  // both plugins' CHECK compares with the result.
  // A failed second ADD (a requested address or MAC taken) ends the comparison: the
  // reference's failed ADD leaves its pair behind.
  if (step("ADD c2", "ADD", "c2", ours_conf, ref_conf).second.exit_code != 0) return;
  step("DEL c1", "DEL", "c1", ours_conf, ref_conf);
  step("DEL c1 again", "DEL", "c1", ours_conf, ref_conf);
  ours.RemoveContainer("c2");
  ref.RemoveContainer("c2");
  // Debian's 1.1.1 returns early when the namespace is gone, leaving the attachment's ipMasq and
  // macspoofchk rules; ours removes them (checked below), so only the outputs are compared.
  step("DEL c2, its netns gone", "DEL", "c2", ours_conf, ref_conf, /*compare_state=*/false);
  // Nothing of the attachments is left: no veth, no masquerade chain, no reservation.
  EXPECT_EQ(CountListed(ours.node(), "ip -o link show type veth"), 0);
  EXPECT_EQ(ours.NodeState().find("CNI-"), std::string::npos) << ours.NodeState();
  EXPECT_EQ(ours.NodeState().find("macspoofchk"), std::string::npos) << ours.NodeState();
  EXPECT_EQ(ours.IpamState().find(": c"), std::string::npos) << ours.IpamState();
}

class BridgeDifferential : public ::testing::TestWithParam<Mode> {
 protected:
  void SetUp() override { NG_REQUIRE_ROOT(); }
};

TEST_P(BridgeDifferential, Ipv4GatewayAndMasquerade) {
  CompareLifecycle({.name = "v4",
                    .extra = R"(,"isGateway":true,"ipMasq":true)",
                    .ranges = kV4,
                    .ipam_extra = kDefaultRoute},
                   GetParam());
}

TEST_P(BridgeDifferential, Ipv6DefaultGatewayAndMasquerade) {
  CompareLifecycle(
      {.name = "v6", .extra = R"(,"isDefaultGateway":true,"ipMasq":true)", .ranges = kV6},
      GetParam());
}

TEST_P(BridgeDifferential, DualStackDefaultGatewayAndMasquerade) {
  CompareLifecycle(
      {.name = "dual", .extra = R"(,"isDefaultGateway":true,"ipMasq":true)", .ranges = kDual},
      GetParam());
}

INSTANTIATE_TEST_SUITE_P(IptablesModes, BridgeDifferential,
                         ::testing::Values(Mode::kNft, Mode::kLegacy),
                         [](const auto& info) { return ModeName(info.param); });

class BridgeKeys : public ::testing::Test {
 protected:
  void SetUp() override { NG_REQUIRE_ROOT(); }
};

TEST_F(BridgeKeys, ResultsInEveryVersion) {
  for (const char* v : {"0.1.0", "0.2.0"}) {
    CompareLifecycle({.name = std::string("v4-") + v,
                      .extra = R"(,"isGateway":true)",
                      .ranges = kV4,
                      .version = v},
                     Mode::kNft);
  }
  for (const char* v : {"0.3.0", "0.3.1", "0.4.0", "1.0.0"}) {
    CompareLifecycle({.name = std::string("dual-") + v,
                      .extra = R"(,"isGateway":true)",
                      .ranges = kDual,
                      .ipam_extra = kDefaultRoute,
                      .version = v},
                     Mode::kNft);
  }
  // A 0.2.0 result of two addresses of one family cannot be written: the same error.
  CompareLifecycle({.name = "dual-0.2.0", .ranges = kDual, .version = "0.2.0"}, Mode::kNft);
}

TEST_F(BridgeKeys, LayerTwoOnly) {
  CompareLifecycle({.name = "l2"}, Mode::kNft);
  CompareLifecycle({.name = "l2-named", .extra = R"(,"bridge":"br-test7","mtu":1400)"}, Mode::kNft);
}

TEST_F(BridgeKeys, MtuHairpinPromisc) {
  CompareLifecycle({.name = "flags",
                    .extra = R"(,"bridge":"cni5","mtu":1400,"hairpinMode":true,)"
                             R"("promiscMode":true,"isGateway":true)",
                    .ranges = kV4},
                   Mode::kNft);
}

TEST_F(BridgeKeys, ForceAddress) {
  const std::string setup =
      "ip link add cni0 type bridge && ip addr add 10.99.0.1/24 dev cni0 && ip link set cni0 up";
  CompareLifecycle(
      {.name = "kept", .extra = R"(,"isGateway":true)", .ranges = kV4, .node_setup = setup},
      Mode::kNft);
  CompareLifecycle({.name = "forced",
                    .extra = R"(,"isGateway":true,"forceAddress":true)",
                    .ranges = kV4,
                    .node_setup = setup},
                   Mode::kNft);
}

// This machine's kernel has no VLAN filtering on bridges (CONFIG_BRIDGE_VLAN_FILTERING): both
// plugins fail to make the bridge, with the same words, and ours leaves nothing.
TEST_F(BridgeKeys, Vlans) {
  CompareLifecycle({.name = "vlan", .extra = R"(,"vlan":100)", .ranges = kV4}, Mode::kNft);
  CompareLifecycle({.name = "vlan-gw", .extra = R"(,"vlan":100,"isGateway":true)", .ranges = kDual},
                   Mode::kNft);
  CompareLifecycle({.name = "vlan-bad", .extra = R"(,"vlan":5000)"}, Mode::kNft);
}

TEST_F(BridgeKeys, MacSpoofCheckAndEnableDad) {
  CompareLifecycle({.name = "spoof", .extra = R"(,"macspoofchk":true)", .ranges = kV4}, Mode::kNft);
  CompareLifecycle({.name = "dad", .extra = R"(,"enabledad":true,"isGateway":true)", .ranges = kV6},
                   Mode::kNft);
}

TEST_F(BridgeKeys, RequestedMacAndAddresses) {
  CompareLifecycle({.name = "runtime-mac",
                    .extra = R"(,"runtimeConfig":{"mac":"0a:58:0a:16:00:63"})",
                    .ranges = kV4},
                   Mode::kNft);
  CompareLifecycle({.name = "args-mac",
                    .ranges = kV4,
                    .cni_args = "IgnoreUnknown=1;MAC=0a:58:0a:16:00:64;K8S_POD_NAME=p"},
                   Mode::kNft);
  CompareLifecycle(
      {.name = "args-ips", .extra = R"(,"args":{"cni":{"ips":["10.22.0.50"]}})", .ranges = kV4},
      Mode::kNft);
}

// Keys as Go's decoder matches them (case-insensitively): what a hand-written conflist may say.
TEST_F(BridgeKeys, KeysInGoSpellings) {
  CompareLifecycle({.name = "go-spellings",
                    .extra = R"(,"Bridge":"cni7","ISGATEWAY":true,"ipmasq":true,)"
                             R"("HairpinMode":true,"MTU":1450)",
                    .ranges = kV4},
                   Mode::kNft);
}

TEST_F(BridgeKeys, ConfigErrors) {
  CompareLifecycle({.name = "not-a-bridge", .extra = R"(,"bridge":"lo")", .ranges = kV4},
                   Mode::kNft);
  CompareLifecycle({.name = "no-ipam-plugin", .extra = R"(,"ipam":{"type":"nope"})"}, Mode::kNft);
  // The reference finds out when it makes the pair ("failed to make veth pair: address zz:
  // invalid MAC address"); ours before anything is made.
  CompareLifecycle({.name = "bad-mac",
                    .ranges = kV4,
                    .cni_args = "MAC=zz",
                    .our_message = "CNI_ARGS MAC: invalid MAC address \"zz\""},
                   Mode::kNft);
}

// A CHECK of an attachment whose address was removed fails in both.
TEST_F(BridgeKeys, CheckSeesMissingAddress) {
  BridgeNode ours("o"), ref("r");
  for (auto* side : {&ours, &ref}) {
    const bool is_ours = side == &ours;
    const std::string conf = BridgeConf("1.0.0", R"(,"isGateway":true)", side->data_dir(), kV4);
    const std::string bin = is_ours ? Ours() : Reference();
    const std::string ipam = is_ours ? OurIpamPath() : ReferenceIpamPath();
    PluginOutput add = side->Run(bin, "ADD", "c1", conf, ipam);
    ASSERT_TRUE(Succeeds(add));
    EXPECT_TRUE(Succeeds(side->Run(bin, "CHECK", "c1", WithPrevResult(conf, add.out), ipam)));
    side->Container("c1").MustRun("ip addr flush dev eth0");
    PluginOutput check = side->Run(bin, "CHECK", "c1", WithPrevResult(conf, add.out), ipam);
    EXPECT_NE(check.exit_code, 0) << (is_ours ? "ours" : "ref") << check.out;
    EXPECT_NE(ErrorMessage(check), "") << check.out;
    EXPECT_TRUE(Succeeds(side->Run(bin, "DEL", "c1", conf, ipam)));
  }
}

// Pods added by the reference and by ours on one bridge talk to each other; each is then
// deleted by the other plugin (and the other host-local), and nothing is left.
class BridgeCrossCleanup : public ::testing::TestWithParam<Mode> {
 protected:
  void SetUp() override { NG_REQUIRE_ROOT(); }
};

TEST_P(BridgeCrossCleanup, EachSideDeletesTheOthersPods) {
  BridgeNode node("x", GetParam());
  const std::string conf =
      BridgeConf("1.0.0", R"(,"isGateway":true,"ipMasq":true)", node.data_dir(), kDual);
  PluginOutput a = node.Run(Reference(), "ADD", "ref-pod", conf, ReferenceIpamPath());
  ASSERT_TRUE(Succeeds(a));
  PluginOutput b = node.Run(Ours(), "ADD", "our-pod", conf, OurIpamPath());
  ASSERT_TRUE(Succeeds(b));
  EXPECT_EQ(CountListed(node.node(), "ip -o link show master cni0"), 2);
  const std::string b_ip = nlohmann::json::parse(b.out)["ips"][0]["address"].get<std::string>();
  node.Container("ref-pod").MustRun("ping -c1 -W2 " + b_ip.substr(0, b_ip.find('/')));
  // Each CHECKs the other's attachment.
  EXPECT_TRUE(
      Succeeds(node.Run(Ours(), "CHECK", "ref-pod", WithPrevResult(conf, a.out), OurIpamPath())));
  EXPECT_TRUE(Succeeds(
      node.Run(Reference(), "CHECK", "our-pod", WithPrevResult(conf, b.out), ReferenceIpamPath())));
  // Ours deletes the reference's pod with its namespace gone (the reference, whose DEL returns
  // early without a namespace, deletes ours with the namespace there).
  node.RemoveContainer("ref-pod");
  EXPECT_TRUE(Succeeds(node.Run(Ours(), "DEL", "ref-pod", conf, OurIpamPath())));
  EXPECT_TRUE(Succeeds(node.Run(Reference(), "DEL", "our-pod", conf, ReferenceIpamPath())));
  EXPECT_EQ(CountListed(node.node(), "ip -o link show type veth"), 0);
  const std::string state = node.NodeState();
  EXPECT_EQ(state.find("CNI-"), std::string::npos) << state;
  EXPECT_EQ(node.IpamState().find("-pod"), std::string::npos) << node.IpamState();
}

INSTANTIATE_TEST_SUITE_P(IptablesModes, BridgeCrossCleanup,
                         ::testing::Values(Mode::kNft, Mode::kLegacy),
                         [](const auto& info) { return ModeName(info.param); });

// This build's host-local runs inside bridge (lib/cni/sibling.h). The same host-local exec'd
// (a copy whose note names another build, so bridge cannot take it for its own) gives the same
// outputs, errors and state at every step: the in-process run is the exec's equal.
TEST(BridgeSiblingIpam, InProcessHostLocalMatchesTheExecdOne) {
  NG_REQUIRE_ROOT();
  const std::string execd_dir = "/tmp/ng-bridge-execd-ipam-" + std::to_string(::getpid());
  fs::create_directories(execd_dir);
  ScopeGuard remove_execd_dir([&] { fs::remove_all(execd_dir); });
  const std::string execd_ipam = execd_dir + "/host-local";
  fs::copy_file(nodegate::testing::BinPath("host-local"), execd_ipam);
  {
    std::fstream file(execd_ipam, std::ios::in | std::ios::out | std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    const std::string token = std::string("host-local") + '\0' + std::string(cni::kBuildToken);
    const size_t at = bytes.find(token);
    ASSERT_NE(at, std::string::npos) << "host-local carries its note";
    file.seekp(static_cast<std::streamoff>(at + token.size() - 1));
    file.put(token.back() == '0' ? '1' : '0');
  }
  BridgeNode inproc("si"), execd("se");
  inproc.SetEnv("NODEGATE_LOG_LEVEL", "debug");
  execd.SetEnv("NODEGATE_LOG_LEVEL", "debug");
  // One address to give (a /30 less its gateway): the second ADD fails, STATUS reports it.
  const char* kOne = R"([[{"subnet":"10.23.0.0/30"}]])";
  const std::string in_conf =
      BridgeConf("1.1.0", R"(,"isGateway":true,"ipMasq":true)", inproc.data_dir(), kOne);
  const std::string ex_conf =
      BridgeConf("1.1.0", R"(,"isGateway":true,"ipMasq":true)", execd.data_dir(), kOne);
  auto step = [&](const std::string& command, const std::string& id, const std::string& in_c,
                  const std::string& ex_c) {
    SCOPED_TRACE(command + " " + id);
    PluginOutput a = inproc.Run(Ours(), command, id, in_c, OurIpamPath());
    PluginOutput b = execd.Run(Ours(), command, id, ex_c, execd_dir);
    EXPECT_EQ(a.exit_code, b.exit_code) << a.out << a.err << "\n" << b.out << b.err;
    EXPECT_EQ(LineDiff(Normalise(a.out), Normalise(b.out)), "");
    EXPECT_NE(a.err.find("delegate host-local: " + OurIpamPath() + "/host-local is this build's"),
              std::string::npos)
        << a.err;
    EXPECT_EQ(b.err.find("is this build's"), std::string::npos) << b.err;
    EXPECT_EQ(LineDiff(inproc.State({"c1", "c2"}), execd.State({"c1", "c2"})), "");
    return std::make_pair(a, b);
  };
  auto [add, add_execd] = step("ADD", "c1", in_conf, ex_conf);
  ASSERT_TRUE(Succeeds(add)) << add.out << add.err;
  step("CHECK", "c1", WithPrevResult(in_conf, add.out), WithPrevResult(ex_conf, add_execd.out));
  EXPECT_NE(step("ADD", "c2", in_conf, ex_conf).first.exit_code, 0);
  EXPECT_NE(step("STATUS", "c1", in_conf, ex_conf).first.exit_code, 0);
  step("DEL", "c1", in_conf, ex_conf);
  step("DEL", "c1", in_conf, ex_conf);
  EXPECT_TRUE(Succeeds(step("STATUS", "c1", in_conf, ex_conf).first));
}

// Keys Debian's 1.1.1 does not have (upstream's later ones): checked against the kernel.
class BridgeLaterKeys : public ::testing::Test {
 protected:
  void SetUp() override { NG_REQUIRE_ROOT(); }
};

TEST_F(BridgeLaterKeys, PortIsolationAndDisabledContainerInterface) {
  BridgeNode node("l");
  const std::string conf = BridgeConf(
      "1.0.0", R"(,"portIsolation":true,"disableContainerInterface":true)", node.data_dir(), "");
  ASSERT_TRUE(Succeeds(node.Run(Ours(), "ADD", "c1", conf, OurIpamPath())));
  EXPECT_EQ(CountListed(node.node(), "bridge -d link show", "isolated on"), 1);
  EXPECT_EQ(CountListed(node.Container("c1"), "ip -o link show eth0", "state DOWN"), 1);
  EXPECT_TRUE(Succeeds(node.Run(Ours(), "DEL", "c1", conf, OurIpamPath())));
  EXPECT_EQ(CountListed(node.node(), "ip -o link show type veth"), 0);
}

// vlanTrunk (upstream's): invalid ranges refused before anything is made; valid ones need VLAN
// filtering, which this machine's kernel lacks (the error, and nothing left behind).
TEST_F(BridgeLaterKeys, VlanTrunk) {
  BridgeNode node("t");
  const std::string bad =
      BridgeConf("1.0.0", R"(,"vlanTrunk":[{"minID":5}])", node.data_dir(), kV4);
  PluginOutput out = node.Run(Ours(), "ADD", "c1", bad, OurIpamPath());
  EXPECT_NE(out.exit_code, 0);
  EXPECT_EQ(ErrorMessage(out),
            "minID and maxID should be configured simultaneously, maxID is missing");
  EXPECT_EQ(CountListed(node.node(), "ip -o link show"), 1);  // lo only: not even the bridge
  const std::string good = BridgeConf(
      "1.0.0", R"(,"vlanTrunk":[{"minID":101,"maxID":103},{"id":200}])", node.data_dir(), kV4);
  out = node.Run(Ours(), "ADD", "c1", good, OurIpamPath());
  if (out.exit_code == 0) {
    EXPECT_EQ(CountListed(node.node(), "bridge vlan show", "101"), 1);
    EXPECT_TRUE(Succeeds(node.Run(Ours(), "DEL", "c1", good, OurIpamPath())));
  } else {
    EXPECT_EQ(CountListed(node.node(), "ip -o link show type bridge"), 0);
    EXPECT_NE(ErrorMessage(out).find("operation not supported"), std::string::npos) << out.out;
  }
  EXPECT_EQ(CountListed(node.node(), "ip -o link show type veth"), 0);
  EXPECT_EQ(node.IpamState().find(": c1"), std::string::npos) << node.IpamState();
}

TEST_F(BridgeLaterKeys, NftablesMasqueradeBackendAndGc) {
  BridgeNode node("n");
  const std::string conf =
      BridgeConf("1.1.0", R"(,"isGateway":true,"ipMasq":true,"ipMasqBackend":"nftables")",
                 node.data_dir(), kDual);
  ASSERT_TRUE(Succeeds(node.Run(Ours(), "ADD", "c1", conf, OurIpamPath())));
  ASSERT_TRUE(Succeeds(node.Run(Ours(), "ADD", "c2", conf, OurIpamPath())));
  const std::string listing = "nft list table inet cni_plugins_masquerade";
  EXPECT_EQ(CountListed(node.node(), listing, "masquerade comment"), 4);
  EXPECT_EQ(CountListed(node.node(), listing, "net: net1, if: eth0, id: c1"), 2);
  EXPECT_EQ(CountListed(node.node(), "iptables-nft-save -t nat", "CNI-"), 0);
  // GC with only c2 valid removes c1's rules (its veth and reservation are DEL's).
  auto gc = nlohmann::json::parse(conf);
  gc["cni.dev/valid-attachments"] = {{{"containerID", "c2"}, {"ifname", "eth0"}}};
  EXPECT_TRUE(Succeeds(node.Run(Ours(), "GC", "", gc.dump(), OurIpamPath())));
  EXPECT_EQ(CountListed(node.node(), listing, "id: c1"), 0);
  EXPECT_EQ(CountListed(node.node(), listing, "id: c2"), 2);
  EXPECT_TRUE(Succeeds(node.Run(Ours(), "STATUS", "", conf, OurIpamPath())));
  for (const char* id : {"c1", "c2"}) {
    EXPECT_TRUE(Succeeds(node.Run(Ours(), "DEL", id, conf, OurIpamPath())));
  }
  EXPECT_EQ(CountListed(node.node(), listing, "masquerade comment"), 0);
}

}  // namespace
}  // namespace nodegate::bridge::testing

namespace nodegate::bridge::testing {
namespace {

// Hostile input: every bad config, argument or environment gets a CNI error on stdout (an
// object with a non-zero integer code and a message), a non-zero exit, and leaves the node as
// it was: no link (not even the bridge), no rule, no reservation.
TEST(BridgeHostileInput, ErrorJsonAndNothingLeft) {
  NG_REQUIRE_ROOT();
  BridgeNode node("h");
  const std::string dir = node.data_dir();
  const std::string good_ipam = R"(,"ipam":{"type":"host-local","dataDir":")" + dir +
                                R"(","ranges":[[{"subnet":"10.22.0.0/24"}]]})";
  auto conf = [&](const std::string& keys) {
    return R"({"cniVersion":"1.0.0","name":"net1","type":"bridge")" + keys + good_ipam + "}";
  };
  std::string deep;
  for (int i = 0; i < 100000; ++i) deep += "[";
  struct Bad {
    std::string what, stdin_data, args, ifname = "eth0";
    std::optional<std::string> netns, container_id, command;
  };
  const std::vector<Bad> cases = {
      {"empty stdin", ""},
      {"not JSON", "{\"cniVersion\":"},
      {"a JSON array", "[1,2,3]"},
      {"nesting 100,000 deep", deep},
      {"non-UTF-8 bytes", std::string("{\"cniVersion\":\"1.0.0\",\"name\":\"\xff\xfe\"}")},
      {"unknown cniVersion", R"({"cniVersion":"9.9.9","name":"net1","type":"bridge"})"},
      {"no name", R"({"cniVersion":"1.0.0","type":"bridge"})"},
      {"bridge a number", conf(R"(,"bridge":7)")},
      {"bridge name too long", conf(R"(,"bridge":"a-very-long-bridge-name")")},
      {"bridge name with a slash", conf(R"(,"bridge":"a/b")")},
      {"mtu negative", conf(R"(,"mtu":-1)")},
      {"mtu huge", conf(R"(,"mtu":1e300)")},
      {"vlan out of range", conf(R"(,"vlan":4095)")},
      {"vlan negative", conf(R"(,"vlan":-3)")},
      {"vlanTrunk not a list", conf(R"(,"vlanTrunk":{"id":3})")},
      {"hairpin and promisc", conf(R"(,"hairpinMode":true,"promiscMode":true)")},
      {"isGateway a string", conf(R"(,"isGateway":"true")")},
      {"ipMasqBackend unknown", conf(R"(,"ipMasq":true,"ipMasqBackend":"pf")")},
      {"runtimeConfig mac multicast", conf(R"(,"runtimeConfig":{"mac":"01:00:5e:00:00:01"})")},
      {"ipam type missing plugin", R"({"cniVersion":"1.0.0","name":"net1","type":"bridge",)"
                                   R"("ipam":{"type":"no-such-ipam"}})"},
      {"ipam type with a path", R"({"cniVersion":"1.0.0","name":"net1","type":"bridge",)"
                                R"("ipam":{"type":"../../bin/sh"}})"},
      {"CNI_ARGS MAC invalid", conf(""), "MAC=nope"},
      {"CNI_ARGS unknown key", conf(""), "FOO=bar"},
      {"CNI_ARGS without =", conf(""), "garbage"},
      {"ifname too long", conf(""), "", "an-interface-name-too-long"},
      {"ifname with a slash", conf(""), "", "eth/0"},
      {"ifname empty", conf(""), "", ""},
      {"netns missing", conf(""), "", "eth0", "/run/netns/ng-no-such-netns"},
      {"netns not a namespace", conf(""), "", "eth0", "/etc/hostname"},
      {"netns empty", conf(""), "", "eth0", ""},
      {"no CNI_CONTAINERID", conf(""), "", "eth0", std::nullopt, ""},
      {"CNI_COMMAND unknown", conf(""), "", "eth0", std::nullopt, std::nullopt, "DESTROY"},
      // Last: host-local fails while the bridge is made, and the bridge stays (the node's, as
      // the reference's): the link count is not compared after it.
      {"ipam's own error", R"({"cniVersion":"1.0.0","name":"net1","type":"bridge","ipam":)"
                           R"({"type":"host-local","dataDir":")" +
                               dir + R"(","ranges":[[{"subnet":"10.22.0.1/31"}]]}})"},
  };
  const int links_before = CountListed(node.node(), "ip -o link show");
  for (const Bad& bad : cases) {
    SCOPED_TRACE(bad.what);
    PluginCall call;
    call.binary = Ours();
    call.command = bad.command.value_or("ADD");
    call.container_id = bad.container_id.value_or("hostile");
    call.netns = bad.netns.value_or(node.Container("hostile").path());
    call.ifname = bad.ifname;
    call.args = bad.args;
    call.path = OurIpamPath();
    call.stdin_data = bad.stdin_data;
    call.run_in_netns = node.node().path();
    const PluginOutput out = nodegate::testing::RunPlugin(call);
    EXPECT_NE(out.exit_code, 0) << out.out << out.err;
    const auto j = nlohmann::json::parse(out.out, nullptr, false);
    ASSERT_TRUE(j.is_object()) << "stdout is not a CNI error: " << out.out;
    EXPECT_TRUE(j.contains("code") && j["code"].is_number_integer() && j["code"] != 0) << out.out;
    EXPECT_TRUE(j.contains("msg") && j["msg"].is_string() && !j["msg"].get<std::string>().empty())
        << out.out;
    if (bad.what != "ipam's own error") {
      EXPECT_EQ(CountListed(node.node(), "ip -o link show"), links_before);
    }
    EXPECT_EQ(CountListed(node.node(), "ip -o link show type veth"), 0);
    EXPECT_EQ(CountListed(node.Container("hostile"), "ip -o link show"), 1);  // lo only
  }
  EXPECT_EQ(node.IpamState().find("hostile"), std::string::npos) << node.IpamState();
  EXPECT_EQ(node.NodeState().find("CNI-"), std::string::npos);
}

}  // namespace
}  // namespace nodegate::bridge::testing
