// Config parsing: every key of the reference's NetConf, its defaults and its words, the checks
// the reference makes late or not at all, and Go's key spelling.
#include "plugins/bridge/config.h"

#include <gtest/gtest.h>

namespace nodegate::bridge {
namespace {

cni::NetConf Conf(const std::string& extra, const std::string& version = "1.0.0") {
  const std::string json = R"({"cniVersion":")" + version + R"(","name":"brnet","type":"bridge")" +
                           (extra.empty() ? "" : ",") + extra + "}";
  auto conf = cni::ParseNetConf(json, ConfigShape());
  EXPECT_TRUE(conf.ok()) << json << ": " << (conf.ok() ? "" : conf.error().msg);
  return conf.ok() ? *conf : cni::NetConf{};
}

Result<BridgeConfig> Parse(const std::string& extra, const std::string& cni_args = "") {
  return ParseBridgeConfig(Conf(extra), cni_args);
}

std::string ErrorOf(const std::string& extra, const std::string& cni_args = "") {
  auto c = Parse(extra, cni_args);
  return c.ok() ? "(parsed)" : c.error().msg;
}

TEST(BridgeConfig, Defaults) {
  auto c = Parse("");
  ASSERT_TRUE(c.ok()) << c.error().msg;
  EXPECT_EQ(c->bridge, "cni0");
  EXPECT_FALSE(c->is_gateway);
  EXPECT_FALSE(c->ip_masq);
  EXPECT_EQ(c->mtu, 0u);
  EXPECT_EQ(c->vlan, 0);
  EXPECT_FALSE(c->vlan_filtering());
  EXPECT_FALSE(c->layer3());
  EXPECT_EQ(c->mac, "");
  EXPECT_FALSE(c->masq_backend.has_value());
  EXPECT_FALSE(c->dns_given);
}

TEST(BridgeConfig, EveryKey) {
  auto c = Parse(R"("bridge":"br7","isDefaultGateway":true,"forceAddress":true,"ipMasq":true,
      "ipMasqBackend":"nftables","mtu":9000,"hairpinMode":true,"vlan":100,
      "vlanTrunk":[{"minID":200,"maxID":202},{"id":300},{"id":201}],"preserveDefaultVlan":true,
      "macspoofchk":true,"enabledad":true,"portIsolation":true,
      "ipam":{"type":"host-local"},"dns":{"nameservers":["192.0.2.53"],"domain":"example"})");
  ASSERT_TRUE(c.ok()) << c.error().msg;
  EXPECT_EQ(c->bridge, "br7");
  EXPECT_TRUE(c->is_default_gateway);
  EXPECT_TRUE(c->is_gateway);  // implied
  EXPECT_TRUE(c->force_address);
  EXPECT_TRUE(c->ip_masq);
  EXPECT_EQ(c->masq_backend, MasqBackend::kNftables);
  EXPECT_EQ(c->mtu, 9000u);
  EXPECT_TRUE(c->hairpin);
  EXPECT_EQ(c->vlan, 100);
  EXPECT_EQ(c->trunk, (std::vector<uint16_t>{200, 201, 202, 300}));
  EXPECT_TRUE(c->vlan_filtering());
  EXPECT_TRUE(c->preserve_default_vlan);
  EXPECT_TRUE(c->mac_spoof_check);
  EXPECT_TRUE(c->enable_dad);
  EXPECT_TRUE(c->port_isolation);
  EXPECT_EQ(c->ipam_type, "host-local");
  EXPECT_TRUE(c->dns_given);
  EXPECT_EQ(c->dns.nameservers, std::vector<std::string>{"192.0.2.53"});
  EXPECT_EQ(c->VlanGatewayName(), "br7.100");
}

TEST(BridgeConfig, GoKeySpelling) {
  // containerd and hand-written configs may use Go's field names or any case.
  auto c = Parse(R"("Bridge":"br8","ISGATEWAY":true,"HairpinMode":true,"Mtu":1400)");
  ASSERT_TRUE(c.ok()) << c.error().msg;
  EXPECT_EQ(c->bridge, "br8");
  EXPECT_TRUE(c->is_gateway);
  EXPECT_TRUE(c->hairpin);
  EXPECT_EQ(c->mtu, 1400u);
}

TEST(BridgeConfig, ReferenceMessages) {
  EXPECT_EQ(ErrorOf(R"("vlan":4095)"), "invalid VLAN ID 4095 (must be between 0 and 4094)");
  EXPECT_EQ(ErrorOf(R"("vlan":-1)"), "invalid VLAN ID -1 (must be between 0 and 4094)");
  EXPECT_EQ(ErrorOf(R"("hairpinMode":true,"promiscMode":true)"),
            "cannot set hairpin mode and promiscuous mode at the same time.");
  EXPECT_EQ(ErrorOf(R"("disableContainerInterface":true,"ipam":{"type":"host-local"})"),
            "cannot use IPAM when DisableContainerInterface flag is set");
  EXPECT_EQ(ErrorOf(R"("ipMasqBackend":"pf")"), "unknown ipmasq backend \"pf\"");
  EXPECT_EQ(ErrorOf(R"("vlanTrunk":[{"minID":0,"maxID":5}])"), "incorrect trunk minID parameter");
  EXPECT_EQ(ErrorOf(R"("vlanTrunk":[{"minID":5,"maxID":4095}])"),
            "incorrect trunk maxID parameter");
  EXPECT_EQ(ErrorOf(R"("vlanTrunk":[{"minID":9,"maxID":5}])"),
            "minID is greater than maxID in trunk parameter");
  EXPECT_EQ(ErrorOf(R"("vlanTrunk":[{"maxID":5}])"),
            "minID and maxID should be configured simultaneously, minID is missing");
  EXPECT_EQ(ErrorOf(R"("vlanTrunk":[{"minID":5}])"),
            "minID and maxID should be configured simultaneously, maxID is missing");
  EXPECT_EQ(ErrorOf(R"("vlanTrunk":[{"id":0}])"), "incorrect trunk id parameter");
  EXPECT_EQ(ErrorOf("", "MAC=c2:11:22:33:44:55;K8S_POD_NAME=x"),
            "ARGS: unknown args [\"K8S_POD_NAME=x\"]");
}

TEST(BridgeConfig, WhatTheReferenceChecksLate) {
  EXPECT_EQ(ErrorOf(R"("bridge":"")"), "invalid bridge name \"\": it is empty");
  EXPECT_EQ(ErrorOf(R"("bridge":"a-very-long-bridge")"),
            "invalid bridge name \"a-very-long-bridge\": it is longer than 15 bytes");
  EXPECT_EQ(ErrorOf(R"("mtu":-1)"), "invalid MTU -1 (must be 0 or between 68 and 65535)");
  EXPECT_EQ(ErrorOf(R"("mtu":65536)"), "invalid MTU 65536 (must be 0 or between 68 and 65535)");
  EXPECT_EQ(ErrorOf(R"("vlanTrunk":[null])"),
            "each vlanTrunk entry must be an object with minID and maxID, or id");
  EXPECT_EQ(ErrorOf(R"("runtimeConfig":{"mac":"01:00:5e:00:00:01"})"),
            "runtimeConfig.mac: \"01:00:5e:00:00:01\" is not a unicast Ethernet address (a veth "
            "cannot have it)");
  EXPECT_EQ(ErrorOf(R"("args":{"cni":{"mac":"nope"}})"),
            "args.cni.mac: invalid MAC address \"nope\"");
  EXPECT_EQ(ErrorOf(R"("bridge":"brlonger123","isGateway":true,"vlan":1000,
                      "ipam":{"type":"host-local"})"),
            "the VLAN gateway interface \"brlonger123.1000\" cannot be made: it is longer than 15 "
            "bytes");
}

TEST(BridgeConfig, TypesAndEveryProblemInDetails) {
  auto c = Parse(R"("isGateway":"yes","mtu":1.5,"vlan":"7")");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code, kErrInvalidConfig);
  EXPECT_EQ(c.error().msg, "\"isGateway\" must be a boolean");
  EXPECT_EQ(c.error().details,
            "\"isGateway\" must be a boolean; \"mtu\" must be an integer; \"vlan\" must be an "
            "integer");
}

TEST(BridgeConfig, MacPrecedence) {
  // CNI_ARGS MAC, then args.cni.mac, then runtimeConfig.mac: the last one given wins.
  auto c = Parse(R"("args":{"cni":{"mac":"c2:00:00:00:00:02"}})",
                 "IgnoreUnknown=1;MAC=c2:00:00:00:00:01;K8S_POD_NAME=x");
  ASSERT_TRUE(c.ok()) << c.error().msg;
  EXPECT_EQ(c->mac, "c2:00:00:00:00:02");
  c = Parse(
      R"("args":{"cni":{"mac":"c2:00:00:00:00:02"}},"runtimeConfig":{"mac":"C2-00-00-00-00-03"})",
      "MAC=c2:00:00:00:00:01");
  ASSERT_TRUE(c.ok()) << c.error().msg;
  EXPECT_EQ(c->mac, "c2:00:00:00:00:03");  // normalised
  c = Parse("", "MAC=c2:00:00:00:00:01");
  ASSERT_TRUE(c.ok()) << c.error().msg;
  EXPECT_EQ(c->mac, "c2:00:00:00:00:01");
}

TEST(BridgeConfig, VlanFilteringWithAnEmptyTrunk) {
  // The reference turns VLAN filtering on for any vlanTrunk given, even an empty one.
  auto c = Parse(R"("vlanTrunk":[])");
  ASSERT_TRUE(c.ok()) << c.error().msg;
  EXPECT_TRUE(c->vlan_filtering());
  EXPECT_TRUE(c->trunk.empty());
  c = Parse(R"("vlanTrunk":null)");
  ASSERT_TRUE(c.ok()) << c.error().msg;
  EXPECT_FALSE(c->vlan_filtering());
}

TEST(BridgeConfig, DnsSetAsGoSeesIt) {
  // An empty list counts as set (Go's slice is non-nil), an empty domain does not.
  auto c = Parse(R"("dns":{"search":[]})");
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->dns_given);
  c = Parse(R"("dns":{"domain":""})");
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->dns_given);
}

}  // namespace
}  // namespace nodegate::bridge
