// Kernel-state tests of the built bandwidth plugin, each in throwaway namespaces (the plugin
// runs inside the node namespace). State is read with the independent `tc`/`ip` tools and,
// where the reference is right, compared with what Debian's reference plugin creates.
#include "lib/sys/netns.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "lib/netlink/link.h"
#include "lib/netlink/socket.h"
#include "tests/bandwidth/support.h"

namespace nodegate::bandwidth::testing {
namespace {

constexpr const char* kBoth =
    R"("ingressRate":1000000,"ingressBurst":1000000,"egressRate":2000000,"egressBurst":500000)";
constexpr const char* kIfb = "bwp6ef8579d92ac";  // HashedName("bwp", "rnet", "ctr1")

// The reference's filter listing without its second (unreachable) redirect action.
std::string WithoutSecondAction(std::string text) {
  const size_t start = text.find("\n\taction order 2:");
  if (start == std::string::npos) {
    return text;
  }
  const size_t end = text.find("\n\n", start + 1);
  text.erase(start, end == std::string::npos ? std::string::npos : end - start + 1);
  return text;
}

TEST(BandwidthNetnsTest, KernelObjectsReadLikeTheReference) {
  NG_REQUIRE_ROOT();
  NodeWithContainer ref, ours;
  ASSERT_TRUE(Succeeds(Invoke(Reference(), "ADD", ref, BandwidthConf(ref, kBoth))));
  PluginOutput add = Invoke(Ours(), "ADD", ours, BandwidthConf(ours, kBoth));
  ASSERT_TRUE(Succeeds(add));

  const std::string ref_qdiscs = QdiscShow(ref.node, ref.host_veth);
  const std::string our_qdiscs = QdiscShow(ours.node, ours.host_veth);
  EXPECT_EQ(our_qdiscs, ref_qdiscs);
  EXPECT_NE(our_qdiscs.find("qdisc tbf 1: dev VETH root refcnt 3 rate 1Mbit burst 125000b/1 mpu "
                            "0b lat 25ms linklayer unspec"),
            std::string::npos)
      << our_qdiscs;
  EXPECT_NE(our_qdiscs.find("qdisc ingress ffff: dev VETH parent ffff:fff1"), std::string::npos);
  EXPECT_NE(our_qdiscs.find(std::string("qdisc tbf 1: dev ") + kIfb +
                            " root refcnt 2 rate 2Mbit burst 62500b/1"),
            std::string::npos);
  // Exact limit and buffer (latency in µs): the JSON form shows what the text rounds.
  EXPECT_EQ(ours.node.MustRun("tc -j qdisc show dev " + ours.host_veth + " root"),
            ref.node.MustRun("tc -j qdisc show dev " + ref.host_veth + " root"));

  const std::string ref_filters = IngressFilterShow(ref.node, ref.host_veth);
  const std::string our_filters = IngressFilterShow(ours.node, ours.host_veth);
  EXPECT_NE(ref_filters.find("action order 2: mirred"), std::string::npos) << ref_filters;
  EXPECT_EQ(our_filters.find("action order 2"), std::string::npos) << our_filters;
  EXPECT_EQ(our_filters, WithoutSecondAction(ref_filters));
  EXPECT_NE(our_filters.find(std::string("action order 1: mirred (Egress Redirect to device ") +
                             kIfb + ") stolen"),
            std::string::npos);

  // Same ifb settings (up, MTU of the veth, txqueuelen 0), plus our ownership alias.
  const std::string link = ours.node.MustRun(std::string("ip -d link show ") + kIfb);
  EXPECT_NE(link.find("<BROADCAST,NOARP,UP,LOWER_UP> mtu 1500"), std::string::npos) << link;
  EXPECT_EQ(link.find("qlen"), std::string::npos) << link;  // txqueuelen 0 is not printed
  EXPECT_NE(link.find("alias nodegate/bandwidth rnet ctr1 eth0"), std::string::npos) << link;

  // The ADD result appends the ifb with its MAC, like the reference.
  auto result = nlohmann::json::parse(add.out);
  ASSERT_EQ(result["interfaces"].size(), 3u);
  EXPECT_EQ(result["interfaces"][2]["name"], kIfb);
  const std::string mac = result["interfaces"][2]["mac"].get<std::string>();
  EXPECT_NE(link.find("link/ether " + mac), std::string::npos) << mac;
}

TEST(BandwidthNetnsTest, LifecycleAddCheckReAddDelDelCheck) {
  NG_REQUIRE_ROOT();
  NodeWithContainer topo;
  const std::string conf = BandwidthConf(topo, kBoth);
  EXPECT_TRUE(Succeeds(Invoke(Ours(), "ADD", topo, conf)));
  EXPECT_TRUE(Succeeds(Invoke(Ours(), "CHECK", topo, conf)));
  const std::string before = QdiscShow(topo.node, topo.host_veth);
  EXPECT_TRUE(Succeeds(Invoke(Ours(), "ADD", topo, conf)));  // converges, no "file exists"
  EXPECT_EQ(QdiscShow(topo.node, topo.host_veth), before);
  EXPECT_TRUE(Succeeds(Invoke(Ours(), "CHECK", topo, conf)));
  EXPECT_TRUE(Succeeds(Invoke(Ours(), "DEL", topo, conf)));
  EXPECT_TRUE(Succeeds(Invoke(Ours(), "DEL", topo, conf)));
  EXPECT_TRUE(FailsWith(Invoke(Ours(), "CHECK", topo, conf), 103, "Failed to find qdisc"));

  const std::string after = QdiscShow(topo.node, topo.host_veth);
  EXPECT_EQ(after.find("tbf"), std::string::npos) << after;
  EXPECT_EQ(after.find("ingress"), std::string::npos) << after;
  EXPECT_EQ(SettledIfbNames(topo.node), "");
}

// DEL takes the ifb out of service at once (its name is free: a new ADD of the same container
// gets a fresh ifb that the helper of the earlier DEL leaves alone) and the ifb is gone soon.
TEST(BandwidthNetnsTest, DelRetiresTheIfbAndItsHelperDeletesIt) {
  NG_REQUIRE_ROOT();
  NodeWithContainer topo;
  const std::string conf = BandwidthConf(topo, kBoth);
  ASSERT_TRUE(Succeeds(Invoke(Ours(), "ADD", topo, conf)));
  const std::string first_index =
      topo.node.MustRun(std::string("ip -o link show ") + kIfb + " | cut -d: -f1");
  ASSERT_TRUE(Succeeds(Invoke(Ours(), "DEL", topo, conf)));
  const std::string right_after = LinkNames(topo.node, "ifb");
  EXPECT_EQ(right_after.find(kIfb), std::string::npos) << right_after;
  ASSERT_TRUE(Succeeds(Invoke(Ours(), "ADD", topo, conf)));
  EXPECT_EQ(SettledIfbNames(topo.node), std::string(kIfb) + "\n");
  EXPECT_NE(topo.node.MustRun(std::string("ip -o link show ") + kIfb + " | cut -d: -f1"),
            first_index);
  EXPECT_TRUE(Succeeds(Invoke(Ours(), "CHECK", topo, conf)));
  // The ifb has no IPv6 (every up/down of a device with IPv6 walks the IPv6 routes).
  EXPECT_EQ(topo.node.MustRun(std::string("cat /proc/sys/net/ipv6/conf/") + kIfb + "/disable_ipv6"),
            "1\n");
  ASSERT_TRUE(Succeeds(Invoke(Ours(), "DEL", topo, conf)));
  EXPECT_EQ(SettledIfbNames(topo.node), "");
}

TEST(BandwidthNetnsTest, RepeatedAddConvergesToTheNewConfig) {
  NG_REQUIRE_ROOT();
  NodeWithContainer topo;
  const std::string first = BandwidthConf(topo, kBoth);
  ASSERT_TRUE(Succeeds(Invoke(Ours(), "ADD", topo, first)));

  const std::string faster = BandwidthConf(
      topo,
      R"("ingressRate":4000000,"ingressBurst":1000000,"egressRate":2000000,"egressBurst":500000)");
  ASSERT_TRUE(Succeeds(Invoke(Ours(), "ADD", topo, faster)));
  EXPECT_TRUE(Succeeds(Invoke(Ours(), "CHECK", topo, faster)));
  EXPECT_TRUE(FailsWith(Invoke(Ours(), "CHECK", topo, first), 103, "Rate doesn't match"));
  EXPECT_NE(QdiscShow(topo.node, topo.host_veth).find("root refcnt 3 rate 4Mbit"),
            std::string::npos);

  const std::string subnets = BandwidthConf(
      topo, std::string(kBoth) + R"(,"unshapedSubnets":["198.51.100.0/24","2001:db8:5::/48"])");
  ASSERT_TRUE(Succeeds(Invoke(Ours(), "ADD", topo, subnets)));
  EXPECT_TRUE(Succeeds(Invoke(Ours(), "CHECK", topo, subnets)));

  const std::string ingress_only =
      BandwidthConf(topo, R"("ingressRate":1000000,"ingressBurst":1000000)");
  ASSERT_TRUE(Succeeds(Invoke(Ours(), "ADD", topo, ingress_only)));
  EXPECT_TRUE(Succeeds(Invoke(Ours(), "CHECK", topo, ingress_only)));
  EXPECT_EQ(SettledIfbNames(topo.node), "");  // egress turned off: ifb removed
  const std::string qdiscs = QdiscShow(topo.node, topo.host_veth);
  EXPECT_EQ(qdiscs.find("ingress"), std::string::npos) << qdiscs;
  EXPECT_EQ(qdiscs.find("htb"), std::string::npos) << qdiscs;
}

TEST(BandwidthNetnsTest, CheckNamesWhatDiffers) {
  NG_REQUIRE_ROOT();
  NodeWithContainer topo;
  const std::string conf = BandwidthConf(topo, kBoth);
  ASSERT_TRUE(Succeeds(Invoke(Ours(), "ADD", topo, conf)));

  topo.node.MustRun(std::string("tc qdisc change dev ") + kIfb +
                    " root handle 1: tbf rate 3mbit burst 62500 latency 25ms");
  EXPECT_TRUE(FailsWith(Invoke(Ours(), "CHECK", topo, conf), 103,
                        std::string("Rate doesn't match on ") + kIfb));
  topo.node.MustRun(std::string("tc qdisc change dev ") + kIfb +
                    " root handle 1: tbf rate 2mbit burst 62500 latency 50ms");
  EXPECT_TRUE(FailsWith(Invoke(Ours(), "CHECK", topo, conf), 103, "Limit doesn't match"));

  ASSERT_TRUE(Succeeds(Invoke(Ours(), "ADD", topo, conf)));  // repairs
  EXPECT_TRUE(Succeeds(Invoke(Ours(), "CHECK", topo, conf)));
  topo.node.MustRun("tc filter del dev " + topo.host_veth + " ingress");
  EXPECT_TRUE(FailsWith(Invoke(Ours(), "CHECK", topo, conf), 103, "Failed to find filter"));
  topo.node.MustRun(std::string("ip link del ") + kIfb);
  EXPECT_TRUE(FailsWith(Invoke(Ours(), "CHECK", topo, conf), 103, "get ifb device"));
  EXPECT_TRUE(FailsWith(Invoke(Ours(), "CHECK", topo, BandwidthConf(topo, kBoth, "1.0.0", false)),
                        7, "must be called as a chained plugin"));
}

TEST(BandwidthNetnsTest, ReferenceStateIsCheckedConvergedAndRemoved) {
  NG_REQUIRE_ROOT();
  NodeWithContainer topo;
  const std::string conf = BandwidthConf(topo, kBoth);
  ASSERT_TRUE(Succeeds(Invoke(Reference(), "ADD", topo, conf)));
  // The Debian reference cannot CHECK its own state; ours accepts it (duplicate action included).
  EXPECT_TRUE(Succeeds(Invoke(Ours(), "CHECK", topo, conf)));
  // Our ADD over it converges to a single redirect.
  ASSERT_TRUE(Succeeds(Invoke(Ours(), "ADD", topo, conf)));
  EXPECT_EQ(IngressFilterShow(topo.node, topo.host_veth).find("action order 2"), std::string::npos);
  EXPECT_TRUE(Succeeds(Invoke(Ours(), "CHECK", topo, conf)));
  // And reference-made state goes away with our DEL, qdiscs included (the reference leaves
  // them behind, redirecting to a deleted device).
  NodeWithContainer topo2;
  const std::string conf2 = BandwidthConf(topo2, kBoth);
  ASSERT_TRUE(Succeeds(Invoke(Reference(), "ADD", topo2, conf2)));
  ASSERT_TRUE(Succeeds(Invoke(Ours(), "DEL", topo2, conf2)));
  const std::string qdiscs = QdiscShow(topo2.node, topo2.host_veth);
  EXPECT_EQ(qdiscs.find("tbf"), std::string::npos) << qdiscs;
  EXPECT_EQ(qdiscs.find("ingress"), std::string::npos) << qdiscs;
  EXPECT_EQ(SettledIfbNames(topo2.node), "");
}

TEST(BandwidthNetnsTest, DelNeedsNeitherNetnsNorPrevResult) {
  NG_REQUIRE_ROOT();
  NodeWithContainer topo;
  ASSERT_TRUE(Succeeds(Invoke(Ours(), "ADD", topo, BandwidthConf(topo, kBoth))));
  const std::string bare = BandwidthConf(topo, kBoth, "1.0.0", /*with_prev_result=*/false);
  EXPECT_TRUE(Succeeds(Invoke(Ours(), "DEL", topo.node, "", bare)));
  EXPECT_EQ(SettledIfbNames(topo.node), "");
  EXPECT_TRUE(Succeeds(Invoke(Ours(), "DEL", topo.node, "", bare)));
  // With the netns but no prevResult, the host veth is found through the peer index.
  ASSERT_TRUE(Succeeds(Invoke(Ours(), "ADD", topo, BandwidthConf(topo, kBoth))));
  EXPECT_TRUE(Succeeds(Invoke(Ours(), "DEL", topo, bare)));
  EXPECT_EQ(QdiscShow(topo.node, topo.host_veth).find("tbf"), std::string::npos);
  // A namespace that no longer exists is not an error either.
  EXPECT_TRUE(Succeeds(Invoke(Ours(), "DEL", topo.node, "/run/netns/ng-gone-xyz", bare)));
}

// A runtime stops tearing down a chain at the first failing DEL (the main plugin's DEL would
// never run), so a config that cannot be read does not stop DEL: the ifb is named by network
// and container, the host veth is found through the container. The reference fails here.
TEST(BandwidthNetnsTest, DelWithAnUnreadableConfigRemovesWhatTheContainerOwns) {
  NG_REQUIRE_ROOT();
  NodeWithContainer topo;
  for (const std::string& bad :
       {BandwidthConf(topo, R"("ingressRate":5)"), BandwidthConf(topo, R"("ingressRate":"fast")"),
        BandwidthConf(topo, R"("runtimeConfig":[1])")}) {
    SCOPED_TRACE(bad);
    ASSERT_TRUE(Succeeds(Invoke(Ours(), "ADD", topo, BandwidthConf(topo, kBoth))));
    ASSERT_NE(SettledIfbNames(topo.node), "");
    EXPECT_TRUE(Succeeds(Invoke(Ours(), "DEL", topo, bad)));
    EXPECT_EQ(SettledIfbNames(topo.node), "");
    EXPECT_EQ(QdiscShow(topo.node, topo.host_veth).find("tbf"), std::string::npos);
  }
  // What names the attachment must still be readable.
  EXPECT_FALSE(Succeeds(Invoke(Ours(), "DEL", topo, "{not json")));
}

TEST(BandwidthNetnsTest, BadInputIsCode7AndChangesNothing) {
  NG_REQUIRE_ROOT();
  NodeWithContainer topo;
  const std::string before = QdiscShow(topo.node, topo.host_veth);
  EXPECT_TRUE(FailsWith(Invoke(Ours(), "ADD", topo, BandwidthConf(topo, R"("egressRate":1000)")), 7,
                        "if rate is set, burst must also be set"));
  EXPECT_TRUE(
      FailsWith(Invoke(Ours(), "ADD", topo,
                       BandwidthConf(topo, R"("ingressRate":1000000,"ingressBurst":34359738368)")),
                7, "burst cannot be more than 4GB"));
  EXPECT_TRUE(FailsWith(
      Invoke(Ours(), "ADD", topo, BandwidthConf(topo, R"("ingressRate":-1,"ingressBurst":8)")), 7,
      "non-negative integer"));
  // An interface that is not a veth.
  EXPECT_TRUE(
      FailsWith(Invoke(Ours(), "ADD", topo.node, topo.container.path(), BandwidthConf(topo, kBoth),
                       "ctr1", "lo"),
                7, "container interface lo has no veth peer: interface \"lo\" was not a veth"));
  // prevResult that does not name the host veth.
  EXPECT_TRUE(FailsWith(
      Invoke(Ours(), "ADD", topo, BandwidthConf("not-the-veth", topo.container.path(), kBoth)), 7,
      "no veth peer of container interface found in host ns"));
  EXPECT_EQ(QdiscShow(topo.node, topo.host_veth), before);
  EXPECT_EQ(SettledIfbNames(topo.node), "");
}

TEST(BandwidthNetnsTest, FailedAddRollsBack) {
  NG_REQUIRE_ROOT();
  NodeWithContainer topo;
  // A clsact qdisc (as eBPF agents install) occupies the ingress hook: the egress redirect
  // cannot be installed, after the ifb and its TBF were already created.
  topo.node.MustRun("tc qdisc add dev " + topo.host_veth + " clsact");
  EXPECT_TRUE(FailsWith(Invoke(Ours(), "ADD", topo, BandwidthConf(topo, kBoth)), 100, "clsact"));
  EXPECT_EQ(SettledIfbNames(topo.node), "");
  const std::string qdiscs = QdiscShow(topo.node, topo.host_veth);
  EXPECT_EQ(qdiscs.find("tbf"), std::string::npos) << qdiscs;
  EXPECT_NE(qdiscs.find("clsact"), std::string::npos) << qdiscs;
}

// Issue 13 row 5: the owner tag kept in the ifb's alias ("nodegate/bandwidth <network>
// <containerID> <ifname>") must fit the kernel's 255-byte ifalias whatever the lengths the CNI
// spec allows (it caps none but the interface name), and the ifb is still recognised by CHECK,
// GC and DEL. A failing ADD leaves no ifb behind.
TEST(BandwidthNetnsTest, LongNamesFitTheIfbAlias) {
  NG_REQUIRE_ROOT();
  NodeWithContainer topo;
  const std::string network(200, 'n');
  const std::string id(256, 'c');
  const std::string conf =
      BandwidthConf(topo.host_veth, topo.container.path(), kBoth, "1.0.0", true, network);
  auto run = [&](const std::string& command) {
    return Invoke(Ours(), command, topo.node, topo.container.path(), conf, id,
                  topo.container_ifname);
  };
  const PluginOutput add = run("ADD");
  ASSERT_TRUE(Succeeds(add)) << add.out << add.err;
  const std::string ifb = IfbNameFor(network, id);
  EXPECT_EQ(SettledIfbNames(topo.node), ifb + "\n");
  const std::string link = topo.node.MustRun("ip -d link show " + ifb);
  const size_t at = link.find("alias nodegate/bandwidth sha512:");
  ASSERT_NE(at, std::string::npos) << link;
  const std::string alias = link.substr(at + 6, link.find('\n', at) - at - 6);
  EXPECT_LE(alias.size(), 255u) << alias;
  EXPECT_NE(alias.find(" " + topo.container_ifname), std::string::npos) << alias;
  EXPECT_TRUE(Succeeds(run("CHECK")));
  EXPECT_TRUE(Succeeds(run("ADD")));  // converges on the existing ifb

  // GC of this network with the attachment valid keeps the ifb; GC of another network too.
  auto gc = [&](const std::string& name, const std::string& valid) {
    nodegate::testing::PluginCall call;
    call.binary = Ours();
    call.command = "GC";
    call.stdin_data = R"({"cniVersion":"1.1.0","name":")" + name +
                      R"(","type":"bandwidth","cni.dev/valid-attachments":[)" + valid + "]}";
    call.run_in_netns = topo.node.path();
    return nodegate::testing::RunPlugin(call);
  };
  const std::string valid =
      R"({"containerID":")" + id + R"(","ifname":")" + topo.container_ifname + R"("})";
  ASSERT_TRUE(Succeeds(gc(network, valid)));
  ASSERT_TRUE(Succeeds(gc("othernet", "")));
  EXPECT_EQ(SettledIfbNames(topo.node), ifb + "\n");
  // A GC of this network where it is not valid removes it.
  ASSERT_TRUE(Succeeds(gc(network, R"({"containerID":"other","ifname":"eth0"})")));
  EXPECT_EQ(SettledIfbNames(topo.node), "");

  ASSERT_TRUE(Succeeds(run("ADD")));
  EXPECT_TRUE(Succeeds(run("DEL")));
  EXPECT_EQ(SettledIfbNames(topo.node), "");
  EXPECT_TRUE(FailsWith(run("CHECK"), 103, ""));
}

// A netlink socket of `ns`'s: it stays bound there once the scope that opened it has ended.
Result<netlink::Socket> SocketIn(const TestNetns& ns) {
  NG_ASSIGN_OR_RETURN(auto in_ns, sys::NetnsScope::Enter(ns.path()));
  return netlink::Socket::Open();
}

// An ifb whose creation fails half-way (here: an alias the kernel refuses, set after the
// device exists) is deleted again, so a failing ADD never leaves it behind.
TEST(BandwidthNetnsTest, FailedIfbCreationLeavesNoDevice) {
  NG_REQUIRE_ROOT();
  TestNetns node("ng-node");
  {
    auto sock = SocketIn(node);
    ASSERT_TRUE(sock.ok()) << sock.error().msg;
    const auto created = netlink::CreateIfb(
        *sock, netlink::IfbSpec{.name = "bwpfault", .mtu = 1500, .alias = std::string(300, 'a')});
    EXPECT_FALSE(created.ok());
  }
  EXPECT_EQ(LinkNames(node, "ifb"), "");
}

// CreateIfb answers with the new device as it is once up; a name already taken is answered
// with nullopt, and the device holding it is left as it was.
TEST(BandwidthNetnsTest, CreateIfbReportsTheNewDeviceAndLeavesATakenName) {
  NG_REQUIRE_ROOT();
  TestNetns node("ng-node");
  auto sock = SocketIn(node);
  ASSERT_TRUE(sock.ok()) << sock.error().msg;
  auto first = netlink::CreateIfb(
      *sock, netlink::IfbSpec{.name = "bwpnew", .mtu = 1400, .alias = "first owner"});
  ASSERT_TRUE(first.ok()) << first.error().msg;
  ASSERT_TRUE(first->has_value());
  auto seen = netlink::GetLinkByName(*sock, "bwpnew");
  ASSERT_TRUE(seen.ok() && seen->has_value());
  const netlink::LinkInfo& created = **first;
  const netlink::LinkInfo& kernel = **seen;
  EXPECT_EQ(created.index, kernel.index);
  EXPECT_EQ(created.mac, kernel.mac);
  EXPECT_EQ(created.kind, "ifb");
  EXPECT_EQ(kernel.kind, "ifb");
  EXPECT_TRUE(created.up && kernel.up);
  EXPECT_EQ(created.mtu, 1400u);
  EXPECT_EQ(kernel.mtu, 1400u);
  EXPECT_EQ(created.alias, "first owner");
  EXPECT_EQ(kernel.alias, "first owner");

  auto second = netlink::CreateIfb(
      *sock, netlink::IfbSpec{.name = "bwpnew", .mtu = 1500, .alias = "second owner"});
  ASSERT_TRUE(second.ok()) << second.error().msg;
  EXPECT_FALSE(second->has_value());
  auto after = netlink::GetLinkByName(*sock, "bwpnew");
  ASSERT_TRUE(after.ok() && after->has_value());
  EXPECT_EQ((*after)->index, kernel.index);
  EXPECT_EQ((*after)->alias, "first owner");
  EXPECT_EQ((*after)->mtu, 1400u);
}

TEST(BandwidthNetnsTest, SubnetLayoutAndCleanup) {
  NG_REQUIRE_ROOT();
  NodeWithContainer topo;
  const std::string conf = BandwidthConf(
      topo, std::string(kBoth) + R"(,"unshapedSubnets":["198.51.100.0/24","2001:db8:5::/48"])");
  ASSERT_TRUE(Succeeds(Invoke(Ours(), "ADD", topo, conf)));
  EXPECT_TRUE(Succeeds(Invoke(Ours(), "CHECK", topo, conf)));
  const std::string qdiscs = QdiscShow(topo.node, topo.host_veth);
  EXPECT_NE(qdiscs.find("qdisc htb 1: dev VETH root refcnt 3 r2q 10 default 0x1 "
                        "direct_packets_stat 0 ver 3.17 direct_qlen 1000"),
            std::string::npos)
      << qdiscs;
  EXPECT_NE(qdiscs.find("qdisc bfifo 2: dev VETH parent 1:1 limit 128125b"), std::string::npos)
      << qdiscs;
  const std::string classes = topo.node.MustRun("tc class show dev " + topo.host_veth);
  EXPECT_NE(classes.find("class htb 1:1 root leaf 2: prio 0 rate 1Mbit ceil 1Mbit burst 125000b "
                         "cburst 125000b"),
            std::string::npos)
      << classes;
  const std::string root_filters = topo.node.MustRun("tc filter show dev " + topo.host_veth);
  EXPECT_NE(root_filters.find("match c6336400/ffffff00 at 12"), std::string::npos) << root_filters;
  const std::string ingress = IngressFilterShow(topo.node, topo.host_veth);
  EXPECT_NE(ingress.find("match c6336400/ffffff00 at 16"), std::string::npos) << ingress;
  EXPECT_EQ(ingress.find("pref 1 u32 chain 0 fh 800::800 order 2048 key ht 800 bkt 0 *flowid 1:1 "
                         "not_in_hw \n  match c6336400/ffffff00 at 16\n\tactio"),
            std::string::npos)
      << ingress;
  EXPECT_NE(ingress.find("protocol all pref 3 u32"), std::string::npos) << ingress;
  ASSERT_TRUE(Succeeds(Invoke(Ours(), "DEL", topo, conf)));
  const std::string after = QdiscShow(topo.node, topo.host_veth);
  EXPECT_EQ(after.find("htb"), std::string::npos) << after;
  EXPECT_EQ(after.find("ingress"), std::string::npos) << after;
}

TEST(BandwidthNetnsTest, GcRemovesOnlyStaleIfbs) {
  NG_REQUIRE_ROOT();
  TestNetns node("ng-node");
  Container live = AddContainer(node), stale = AddContainer(node), other_net = AddContainer(node),
            ref_live = AddContainer(node);
  auto add = [&](const std::string& binary, const Container& c, const std::string& id,
                 const std::string& network) {
    return Invoke(binary, "ADD", node, c.ns->path(),
                  BandwidthConf(c.host_veth, c.ns->path(), kBoth, "1.0.0", true, network), id);
  };
  ASSERT_TRUE(Succeeds(add(Ours(), live, "live", "rnet")));
  ASSERT_TRUE(Succeeds(add(Ours(), stale, "stale", "rnet")));
  ASSERT_TRUE(Succeeds(add(Ours(), other_net, "other", "othernet")));
  // Made by the reference (no alias), still redirected to by its veth: kept although not valid.
  ASSERT_TRUE(Succeeds(add(Reference(), ref_live, "reflive", "othernet")));
  // An alias-less ifb nothing redirects to: a leak from a lost DEL.
  node.MustRun("ip link add bwp0123456789ab type ifb && ip link set bwp0123456789ab up");
  // Taken out of service by a DEL whose helper never ran.
  node.MustRun("ip link add bwpdel7f type ifb");
  // Not ours at all (no bwp prefix).
  node.MustRun("ip link add ifbother type ifb");

  const std::string gc = R"({"cniVersion":"1.1.0","name":"rnet","type":"bandwidth",)"
                         R"("cni.dev/valid-attachments":[{"containerID":"live","ifname":"eth0"}]})";
  nodegate::testing::PluginCall call;
  call.binary = Ours();
  call.command = "GC";
  call.stdin_data = gc;
  call.run_in_netns = node.path();
  ASSERT_TRUE(Succeeds(nodegate::testing::RunPlugin(call)));

  const std::string left = LinkNames(node, "ifb");
  EXPECT_NE(left.find(IfbNameFor("rnet", "live")), std::string::npos) << left;
  EXPECT_EQ(left.find(IfbNameFor("rnet", "stale")), std::string::npos) << left;
  EXPECT_NE(left.find(IfbNameFor("othernet", "other")), std::string::npos) << left;
  EXPECT_NE(left.find(IfbNameFor("othernet", "reflive")), std::string::npos) << left;
  EXPECT_EQ(left.find("bwp0123456789ab"), std::string::npos) << left;
  EXPECT_EQ(left.find("bwpdel7f"), std::string::npos) << left;
  EXPECT_NE(left.find("ifbother"), std::string::npos) << left;

  call.command = "STATUS";
  EXPECT_TRUE(Succeeds(nodegate::testing::RunPlugin(call)));
}

class VersionTest : public ::testing::TestWithParam<std::string> {};

TEST_P(VersionTest, AddCheckDel) {
  NG_REQUIRE_ROOT();
  NodeWithContainer topo;
  const std::string conf = BandwidthConf(topo, kBoth, GetParam());
  PluginOutput add = Invoke(Ours(), "ADD", topo, conf);
  ASSERT_TRUE(Succeeds(add));
  auto result = nlohmann::json::parse(add.out);
  EXPECT_EQ(result["cniVersion"], GetParam());
  EXPECT_EQ(result["interfaces"].back()["name"], kIfb);
  if (GetParam() != "0.3.0" && GetParam() != "0.3.1") {
    EXPECT_TRUE(Succeeds(Invoke(Ours(), "CHECK", topo, conf)));
  }
  EXPECT_TRUE(Succeeds(Invoke(Ours(), "DEL", topo, conf)));
  EXPECT_EQ(SettledIfbNames(topo.node), "");
}

INSTANTIATE_TEST_SUITE_P(Versions, VersionTest,
                         ::testing::Values("0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& c : name) {
                             if (c == '.') c = '_';
                           }
                           return "v" + name;
                         });

}  // namespace
}  // namespace nodegate::bandwidth::testing
