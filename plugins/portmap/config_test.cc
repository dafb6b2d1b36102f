// portmap's config: parsing and validation before any kernel call, the backend and iptables
// mode keys, and conditionsV4/V6 parsed once for the backend of their syntax.
#include "plugins/portmap/config.h"

#include <gtest/gtest.h>

#include <string>
#include <variant>
#include <vector>

#include "lib/cni/conf.h"
#include "plugins/portmap/iptables/rules.h"
#include "plugins/portmap/testing/config_text.h"

namespace nodegate::portmap {
namespace {

using testing::ConfText;
using testing::kMappings;
using testing::Parse;

void ExpectInvalid(const std::string& text, const std::string& needle) {
  auto config = Parse(text);
  ASSERT_FALSE(config.ok()) << text;
  EXPECT_EQ(config.error().code, kErrInvalidConfig);
  EXPECT_NE(config.error().msg.find(needle), std::string::npos) << config.error().msg;
}

TEST(PortmapConfig, DefaultsAndContainerAddresses) {
  auto config = Parse(ConfText(""));
  ASSERT_TRUE(config.ok()) << config.error().msg;
  EXPECT_TRUE(config->snat);
  EXPECT_FALSE(config->masq_all);
  EXPECT_EQ(config->mark(), 0x2000u);
  EXPECT_FALSE(config->backend.has_value());
  ASSERT_EQ(config->mappings.size(), 2u);
  EXPECT_EQ(config->mappings[0].host_port, 8080);
  EXPECT_EQ(config->mappings[0].container_port, 80);
  EXPECT_EQ(config->mappings[0].protocol, Protocol::kTcp);
  EXPECT_EQ(config->mappings[0].host_ip->ToString(), "10.88.0.1");
  EXPECT_EQ(config->container_v4->ToString(), "10.88.0.2/16");
  EXPECT_EQ(config->container_v6->ToString(), "fd00:88::2/64");
  EXPECT_EQ(config->MappingsFor(net::Family::kV6).size(), 1u);
}

TEST(PortmapConfig, SkipsAddressesOfOtherInterfaces) {
  const std::string text = R"({"cniVersion":"1.0.0","name":"rnet","type":"portmap",
    "runtimeConfig":{"portMappings":[{"hostPort":1,"containerPort":2,"protocol":"tcp"}]},
    "prevResult":{"cniVersion":"1.0.0",
      "interfaces":[{"name":"veth0"},{"name":"eth1","sandbox":"/x"},{"name":"eth0","sandbox":"/x"}],
      "ips":[{"interface":0,"address":"192.0.2.9/24"},{"interface":1,"address":"192.0.2.8/24"},
             {"interface":2,"address":"192.0.2.7/24"},{"address":"192.0.2.6/24"}]}})";
  auto config = Parse(text);
  ASSERT_TRUE(config.ok()) << config.error().msg;
  EXPECT_EQ(config->container_v4->ToString(), "192.0.2.7/24");
  EXPECT_FALSE(config->container_v6.has_value());
}

TEST(PortmapConfig, RejectsBadMappings) {
  ExpectInvalid(ConfText("", R"([{"hostPort":0,"containerPort":80,"protocol":"tcp"}])"),
                "Invalid host port number: 0");
  ExpectInvalid(ConfText("", R"([{"hostPort":65536,"containerPort":80,"protocol":"tcp"}])"),
                "Invalid host port number: 65536");
  ExpectInvalid(ConfText("", R"([{"hostPort":80,"containerPort":-1,"protocol":"tcp"}])"),
                "Invalid container port number: -1");
  ExpectInvalid(ConfText("", R"([{"hostPort":80,"containerPort":"80","protocol":"tcp"}])"),
                "Invalid container port number");
  ExpectInvalid(ConfText("", R"([{"hostPort":80,"containerPort":80,"protocol":"icmp"}])"),
                "unknown protocol \"icmp\"");
  ExpectInvalid(ConfText("", R"([{"hostPort":80,"containerPort":80}])"), "protocol");
  ExpectInvalid(
      ConfText("", R"([{"hostPort":80,"containerPort":80,"protocol":"tcp","hostIP":"nope"}])"),
      "invalid hostIP");
  ExpectInvalid(ConfText("", R"([{"hostPort":80,"containerPort":80,"protocol":"tcp"},
                                 {"hostPort":80,"containerPort":81,"protocol":"TCP"}])"),
                "duplicate port mapping");
}

TEST(PortmapConfig, HostIpMustMatchAContainerFamily) {
  const std::string v4_only = R"({"cniVersion":"1.0.0","name":"rnet","type":"portmap",
    "runtimeConfig":{"portMappings":[{"hostPort":80,"containerPort":80,"protocol":"tcp",
                                      "hostIP":"2001:db8::1"}]},
    "prevResult":{"cniVersion":"1.0.0","ips":[{"address":"192.0.2.2/24"}]}})";
  ExpectInvalid(v4_only, "no address of that family");
  // DEL must still work (the container may be gone and its result unknown).
  EXPECT_TRUE(Parse(v4_only, Purpose::kDel).ok());
}

TEST(PortmapConfig, ProtocolIsCaseInsensitiveAndUnspecifiedHostIpKeepsFamily) {
  auto config = Parse(
      ConfText("", R"([{"hostPort":80,"containerPort":80,"protocol":"UDP","hostIP":"0.0.0.0"}])"));
  ASSERT_TRUE(config.ok()) << config.error().msg;
  EXPECT_EQ(config->mappings[0].protocol, Protocol::kUdp);
  EXPECT_FALSE(config->mappings[0].has_specific_host_ip());
  EXPECT_EQ(config->MappingsFor(net::Family::kV4).size(), 1u);
  EXPECT_EQ(config->MappingsFor(net::Family::kV6).size(), 0u);
}

TEST(PortmapConfig, MarkBitAndExternalChain) {
  auto config = Parse(ConfText(R"(,"markMasqBit":5)"));
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->mark(), 0x20u);
  ExpectInvalid(ConfText(R"(,"markMasqBit":32)"), "MasqMarkBit must be between 0 and 31");
  ExpectInvalid(ConfText(R"(,"markMasqBit":-1)"), "MasqMarkBit must be between 0 and 31");
  ExpectInvalid(ConfText(R"(,"markMasqBit":5,"externalSetMarkChain":"X")"),
                "Cannot specify externalSetMarkChain and markMasqBit");
  auto external = Parse(ConfText(R"(,"externalSetMarkChain":"KUBE-MARK-MASQ")"));
  ASSERT_TRUE(external.ok());
  EXPECT_EQ(external->backend, Backend::kIptables);
}

TEST(PortmapConfig, BackendSelection) {
  EXPECT_EQ(Parse(ConfText(R"(,"backend":"nftables")"))->backend, Backend::kNftables);
  EXPECT_EQ(Parse(ConfText(R"(,"backend":"iptables")"))->backend, Backend::kIptables);
  ExpectInvalid(ConfText(R"(,"backend":"ebpf")"), "unrecognized backend \"ebpf\"");
  // Options imply their backend; options of the other backend are an error.
  EXPECT_EQ(Parse(ConfText(R"(,"conditionsV4":["ip","saddr","192.0.2.0/24"])"))->backend,
            Backend::kNftables);
  EXPECT_EQ(Parse(ConfText(R"(,"conditionsV4":["!","-d","192.0.2.0/24"])"))->backend,
            Backend::kIptables);
  ExpectInvalid(ConfText(R"(,"backend":"iptables","conditionsV4":["ip","saddr","192.0.2.1"])"),
                "iptables backend was requested but configuration contains nftables-specific "
                "options [conditionsV4]");
  ExpectInvalid(ConfText(R"(,"backend":"nftables","externalSetMarkChain":"X")"),
                "nftables backend was requested but configuration contains iptables-specific "
                "options [externalSetMarkChain]");
  ExpectInvalid(
      ConfText(R"(,"conditionsV4":["-s","192.0.2.0/24"],"conditionsV6":["ip6","saddr","::1"])"),
      "mixes");
}

TEST(PortmapConfig, IptablesModeKeyForcesTheModeAndImpliesTheLayout) {
  EXPECT_EQ(Parse(ConfText(""))->iptables_mode, std::nullopt);
  const auto nft = Parse(ConfText(R"(,"iptablesMode":"nft")"));
  ASSERT_TRUE(nft.ok());
  EXPECT_EQ(nft->iptables_mode, IptablesMode::kNft);
  EXPECT_EQ(nft->backend, Backend::kIptables);
  EXPECT_EQ(Parse(ConfText(R"(,"IptablesMode":"legacy")"))->iptables_mode, IptablesMode::kLegacy);
  ExpectInvalid(ConfText(R"(,"iptablesMode":"auto")"), "\"iptablesMode\" must be");
  ExpectInvalid(ConfText(R"(,"backend":"nftables","iptablesMode":"nft")"),
                "iptables-specific options [iptablesMode]");
}

TEST(PortmapConfig, ConditionsAreCheckedBeforeAnyKernelCall) {
  ExpectInvalid(ConfText(R"(,"conditionsV4":["-m","set","--match-set","x","dst"])"),
                "unsupported iptables condition \"-m\"");
  ExpectInvalid(ConfText(R"(,"conditionsV4":["-d","2001:db8::/32"])"), "needs an IPv4");
  ExpectInvalid(ConfText(R"(,"conditionsV4":["ip","saddr","1.2.3.4;","flush","ruleset"])"),
                "would end the rule");
  ExpectInvalid(ConfText(R"(,"conditionsV4":["!"])"), "trailing");
  ExpectInvalid(ConfText(R"(,"conditionsV4":["-s"])"), "needs a value");
}

TEST(PortmapConfig, MissingPrevResult) {
  ExpectInvalid(ConfText("", kMappings, false), "must be called as chained plugin");
  EXPECT_TRUE(Parse(ConfText("", kMappings, false), Purpose::kDel).ok());
}

TEST(PortmapConfig, ValidateConfigIsPure) {
  auto conf = cni::ParseNetConf(ConfText(""));
  ASSERT_TRUE(conf.ok());
  EXPECT_TRUE(ValidateConfig(*conf).ok());
  auto bad = cni::ParseNetConf(
      ConfText("", R"([{"hostPort":99999,"containerPort":80,"protocol":"tcp"}])"));
  ASSERT_TRUE(bad.ok());
  EXPECT_EQ(ValidateConfig(*bad).error().code, kErrInvalidConfig);
}

// conditionsV4/V6 are parsed once, in ParseConfig, into the form their backend's builder uses;
// the tokens stay for the nftables config hash.
TEST(PortmapConditions, ParsedOnceForTheBackendOfTheirSyntax) {
  auto nft = Parse(ConfText(R"(,"conditionsV4":["ip","saddr","!=","203.0.113.0/24"])"));
  ASSERT_TRUE(nft.ok()) << nft.error().msg;
  ASSERT_NE(nft->conditions_v4.nftables(), nullptr);
  EXPECT_EQ(nft->conditions_v4.nftables()->text, "ip saddr != 203.0.113.0/24");
  EXPECT_EQ(nft->conditions_v4.iptables(), nullptr);
  EXPECT_EQ(nft->conditions_v4.tokens,
            (std::vector<std::string>{"ip", "saddr", "!=", "203.0.113.0/24"}));
  EXPECT_TRUE(std::holds_alternative<std::monostate>(nft->conditions_v6.parsed));

  auto ipt = Parse(ConfText(R"(,"conditionsV6":["!","-s","fd00::1","-o","veth+"])"));
  ASSERT_TRUE(ipt.ok()) << ipt.error().msg;
  ipt::Header want;
  want.src = net::IpPrefix::Parse("fd00::1/128");
  want.src_invert = true;
  want.out_iface = "veth+";
  ASSERT_NE(ipt->conditions(net::Family::kV6).iptables(), nullptr);
  EXPECT_EQ(*ipt->conditions(net::Family::kV6).iptables(), want);
  EXPECT_EQ(ipt->conditions(net::Family::kV6).nftables(), nullptr);
  EXPECT_TRUE(std::holds_alternative<std::monostate>(ipt->conditions_v4.parsed));
}

TEST(PortmapConditions, ErrorsOfEachSyntax) {
  const auto error = [](std::vector<std::string> tokens, net::Family family) {
    auto parsed = ParseConditions(std::move(tokens), family);
    return parsed.ok() ? std::string("ok") : parsed.error().msg;
  };
  EXPECT_EQ(error({}, net::Family::kV4), "ok");
  EXPECT_EQ(error({"-d", "10.0.0.0/8"}, net::Family::kV6),
            "condition -d needs an IPv6 address or prefix, got \"10.0.0.0/8\"");
  EXPECT_EQ(error({"!", "!"}, net::Family::kV4), "double \"!\" in conditions");
  EXPECT_EQ(error({"-i", ""}, net::Family::kV4), "condition -i needs an interface name");
  EXPECT_EQ(error({"-m", "x"}, net::Family::kV4),
            "unsupported iptables condition \"-m\" (supported: [!] -s, -d, -i, -o with a value)");
  EXPECT_EQ(error({"ip", "saddr;"}, net::Family::kV4),
            "nft condition token \"saddr;\" contains a character that would end the rule");
  // Through ParseConfig the key is named.
  ExpectInvalid(ConfText(R"(,"conditionsV6":["-d","10.0.0.0/8"])"), "conditionsV6: condition -d");
}

}  // namespace
}  // namespace nodegate::portmap
