// The ADD's plan as data: port VLANs, the L3 plan from an IPAM result (gateways, default
// routes, sysctls, DNS), the masquerade chain and comment.
#include "plugins/bridge/plan.h"

#include <gtest/gtest.h>

namespace nodegate::bridge {
namespace {

net::IpPrefix P(const char* text) { return *net::IpPrefix::Parse(text); }
net::IpAddress A(const char* text) { return *net::IpAddress::Parse(text); }

cni::CniResult Ipam(std::vector<cni::IpConfig> ips, std::vector<cni::Route> routes = {}) {
  cni::CniResult r;
  r.cni_version = "1.0.0";
  r.ips = std::move(ips);
  r.routes = std::move(routes);
  r.dns.nameservers = {"192.0.2.53"};
  return r;
}

TEST(PortVlans, AccessTrunkAndNative) {
  BridgeConfig c;
  EXPECT_TRUE(PortVlans(c).empty());
  c.vlan = 100;
  EXPECT_EQ(PortVlans(c), (std::vector<netlink::BridgeVlan>{{100, true, true}}));
  c.trunk = {200, 300};
  EXPECT_EQ(PortVlans(c), (std::vector<netlink::BridgeVlan>{{100, true, true}, {200}, {300}}));
  c.vlan = 0;  // a trunk alone keeps VLAN 1 native
  EXPECT_EQ(PortVlans(c), (std::vector<netlink::BridgeVlan>{{200}, {300}, {1, true, true}}));
}

TEST(L3Plan, GatewaysAndSysctls) {
  BridgeConfig c;
  c.is_gateway = true;
  auto plan = BuildL3Plan(c,
                          Ipam({{.address = P("10.99.0.2/24")},
                                {.address = P("fd00:99::2/64"), .gateway = A("fd00:99::9")}}),
                          "eth0");
  ASSERT_TRUE(plan.ok()) << plan.error().msg;
  // A missing gateway is the subnet's first address; every IP is on interface 2.
  EXPECT_EQ(plan->result.ips[0].gateway, A("10.99.0.1"));
  EXPECT_EQ(plan->result.ips[0].interface, 2);
  EXPECT_EQ(plan->result.ips[1].gateway, A("fd00:99::9"));
  EXPECT_EQ(plan->gateways_v4, std::vector<net::IpPrefix>{P("10.99.0.1/24")});
  EXPECT_EQ(plan->gateways_v6, std::vector<net::IpPrefix>{P("fd00:99::9/64")});
  EXPECT_TRUE(plan->enable_ipv6);
  EXPECT_EQ(plan->default_gw_v4, A("10.99.0.1"));
  EXPECT_TRUE(plan->result.routes.empty());  // not isDefaultGateway
  EXPECT_EQ(plan->container_sysctls, (std::vector<Sysctl>{{"net/ipv6/conf/eth0/accept_dad", "0"},
                                                          {"net/ipv4/conf/eth0/arp_notify", "1"}}));
  EXPECT_EQ(plan->result.dns.nameservers, std::vector<std::string>{"192.0.2.53"});  // IPAM's
}

TEST(L3Plan, NoGatewayWithoutIsGateway) {
  BridgeConfig c;
  auto plan = BuildL3Plan(c, Ipam({{.address = P("10.99.0.2/24")}}), "eth0");
  ASSERT_TRUE(plan.ok());
  EXPECT_FALSE(plan->result.ips[0].gateway);
  EXPECT_TRUE(plan->gateways_v4.empty());
  EXPECT_FALSE(plan->enable_ipv6);
}

TEST(L3Plan, DefaultRoutes) {
  BridgeConfig c;
  c.is_gateway = c.is_default_gateway = true;
  auto plan = BuildL3Plan(c,
                          Ipam({{.address = P("10.99.0.2/24")},
                                {.address = P("10.98.0.2/24")},
                                {.address = P("fd00::2/64")}},
                               {{.dst = P("192.0.2.0/24"), .gw = A("10.99.0.7")}}),
                          "eth0");
  ASSERT_TRUE(plan.ok());
  // One default route per family, through that family's first gateway, after IPAM's routes.
  ASSERT_EQ(plan->result.routes.size(), 3u);
  EXPECT_EQ(plan->result.routes[1].dst, P("0.0.0.0/0"));
  EXPECT_EQ(plan->result.routes[1].gw, A("10.99.0.1"));
  EXPECT_EQ(plan->result.routes[2].dst, P("::/0"));
  EXPECT_EQ(plan->result.routes[2].gw, A("fd00::1"));
  // IPAM's own default route, with or without a gateway, is the family's default route.
  plan = BuildL3Plan(c, Ipam({{.address = P("10.99.0.2/24")}}, {{.dst = P("0.0.0.0/0")}}), "eth0");
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->result.routes.size(), 1u);
}

TEST(L3Plan, DadAndDns) {
  BridgeConfig c;
  c.enable_dad = true;
  c.dns_given = true;
  c.dns.domain = "example";
  auto plan = BuildL3Plan(c, Ipam({{.address = P("fd00::2/64")}}), "net1");
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->container_sysctls, (std::vector<Sysctl>{{"net/ipv6/conf/net1/enhanced_dad", "1"},
                                                          {"net/ipv6/conf/net1/accept_dad", "1"},
                                                          {"net/ipv4/conf/net1/arp_notify", "1"}}));
  EXPECT_EQ(plan->result.dns.domain, "example");  // the config's replaces IPAM's
  EXPECT_TRUE(plan->result.dns.nameservers.empty());
}

TEST(L3Plan, NoAddress) {
  auto plan = BuildL3Plan(BridgeConfig{}, Ipam({}), "eth0");
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.error().msg, "IPAM plugin returned missing IP config");
}

TEST(MasqPlan, ReferenceNames) {
  // As Debian's reference names them (observed: network brnet, container ctr1).
  const MasqPlan plan = BuildMasqPlan("brnet", "ctr1", {P("10.99.0.2/24")});
  EXPECT_EQ(plan.chain, "CNI-2fbf118d4cafd020f013271b");
  EXPECT_EQ(plan.comment, "name: \"brnet\" id: \"ctr1\"");
  EXPECT_EQ(MasqComment("n", std::string(300, 'x')).size(), 255u);
}

TEST(RandomVethName, Shape) {
  const std::string a = RandomVethName();
  ASSERT_EQ(a.size(), 12u);
  EXPECT_EQ(a.substr(0, 4), "veth");
  EXPECT_NE(a, RandomVethName());
}

}  // namespace
}  // namespace nodegate::bridge
