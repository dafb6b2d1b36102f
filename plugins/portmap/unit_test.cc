// portmap unit tests: config parsing and validation, the iptables rules as data (compared with
// the reference's observed iptables-save lines), libiptc entry encoding, and the nftables
// script generation. No kernel involved.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <variant>

#include "lib/netfilter/nft.h"
#include "plugins/portmap/config.h"
#include "plugins/portmap/iptables_encode.h"
#include "plugins/portmap/iptables_mode.h"
#include "plugins/portmap/iptables_rules.h"
#include "plugins/portmap/nftables_rules.h"

namespace nodegate::portmap {
namespace {

// The reference's setup, as observed from Debian's portmap (v1.1.1).
constexpr char kPrev[] = R"("prevResult":{"cniVersion":"1.0.0",
  "interfaces":[{"name":"eth0","sandbox":"/run/netns/x"}],
  "ips":[{"interface":0,"address":"10.88.0.2/16","gateway":"10.88.0.1"},
         {"interface":0,"address":"fd00:88::2/64"}]})";
constexpr char kMappings[] =
    R"([{"hostPort":8080,"containerPort":80,"protocol":"tcp","hostIP":"10.88.0.1"},
  {"hostPort":5353,"containerPort":53,"protocol":"udp"}])";

std::string ConfText(const std::string& extra, const std::string& mappings = kMappings,
                     bool with_prev = true) {
  return std::string(R"({"cniVersion":"1.0.0","name":"rnet","type":"portmap")") + extra +
         R"(,"runtimeConfig":{"portMappings":)" + mappings + "}" +
         (with_prev ? std::string(",") + kPrev : "") + "}";
}

Result<Config> Parse(const std::string& text, Purpose purpose = Purpose::kAdd) {
  auto conf = cni::ParseNetConf(text, ConfigShape());
  if (!conf.ok()) return conf.error();
  return ParseConfig(*conf, {.container_id = "ctr1", .ifname = "eth0", .purpose = purpose});
}

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

// A node as ChooseMode sees it: which binary PATH resolves to, and which chains exist.
struct FakeNode {
  std::map<std::string, std::string> binaries;      // "iptables" -> resolved path
  std::set<std::string> nft_chains, legacy_chains;  // "mangle/KUBE-IPTABLES-HINT"
  NodeView View() const {
    return NodeView{[this](const std::string& name) -> std::optional<std::string> {
                      auto it = binaries.find(name);
                      return it == binaries.end() ? std::nullopt
                                                  : std::optional<std::string>(it->second);
                    },
                    [this](net::Family, const std::string& table, const std::string& chain) {
                      return nft_chains.count(table + "/" + chain) > 0;
                    },
                    [this](net::Family, const std::string& table, const std::string& chain) {
                      return legacy_chains.count(table + "/" + chain) > 0;
                    }};
  }
};

TEST(IptablesMode, TheBinaryOnPathDecidesFirst) {
  EXPECT_EQ(ModeOfBinary("/usr/sbin/xtables-nft-multi"), IptablesMode::kNft);
  EXPECT_EQ(ModeOfBinary("/usr/sbin/iptables-nft"), IptablesMode::kNft);
  EXPECT_EQ(ModeOfBinary("/usr/sbin/xtables-legacy-multi"), IptablesMode::kLegacy);
  EXPECT_EQ(ModeOfBinary("/sbin/xtables-multi"), IptablesMode::kLegacy);  // iptables < 1.8
  EXPECT_EQ(ModeOfBinary("/usr/sbin/iptables-wrapper"), std::nullopt);
  EXPECT_EQ(ModeOfBinary("/usr/local/bin/iptables"), std::nullopt);

  FakeNode node;
  node.binaries = {{"iptables", "/usr/sbin/xtables-legacy-multi"},
                   {"ip6tables", "/usr/sbin/xtables-nft-multi"}};
  node.nft_chains = {"mangle/KUBE-IPTABLES-HINT"};  // the binary wins over hints
  EXPECT_EQ(ChooseMode(net::Family::kV4, std::nullopt, node.View()).mode, IptablesMode::kLegacy);
  EXPECT_EQ(ChooseMode(net::Family::kV6, std::nullopt, node.View()).mode, IptablesMode::kNft);
  const ModeChoice forced = ChooseMode(net::Family::kV4, IptablesMode::kNft, node.View());
  EXPECT_EQ(forced.mode, IptablesMode::kNft);
  EXPECT_EQ(forced.reason, "iptablesMode in the config");
}

TEST(IptablesMode, WithoutABinaryTheNodesHintsDecideThenNft) {
  FakeNode node;  // no iptables on PATH (a distroless node image)
  const auto mode = [&] { return ChooseMode(net::Family::kV4, std::nullopt, node.View()); };
  EXPECT_EQ(mode().mode, IptablesMode::kNft);
  EXPECT_EQ(mode().reason, "no iptables on PATH; no hint on the node: nft");
  node.legacy_chains = {"nat/CNI-HOSTPORT-DNAT"};
  EXPECT_EQ(mode().mode, IptablesMode::kLegacy);
  node.nft_chains = {"nat/CNI-HOSTPORT-DNAT"};
  EXPECT_EQ(mode().mode, IptablesMode::kNft);  // nf_tables first
  node.legacy_chains.insert("mangle/KUBE-KUBELET-CANARY");
  EXPECT_EQ(mode().mode, IptablesMode::kLegacy);  // the kubelet's hint beats CNI chains
  node.nft_chains.insert("mangle/KUBE-IPTABLES-HINT");
  EXPECT_EQ(mode().mode, IptablesMode::kNft);
  EXPECT_NE(mode().reason.find("KUBE-IPTABLES-HINT is in nf_tables"), std::string::npos);
  node.binaries = {{"iptables", "/usr/sbin/iptables-wrapper"}};  // a script says nothing
  EXPECT_EQ(mode().mode, IptablesMode::kNft);
  EXPECT_EQ(mode().reason.rfind("iptables (/usr/sbin/iptables-wrapper) names no mode", 0), 0u);
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

std::vector<std::string> Lines(const ipt::Plan& plan) {
  std::vector<std::string> out;
  for (const auto& r : plan.container_rules)
    out.push_back("-A " + plan.container_chain + " " + r.ToString());
  for (const auto& r : plan.entry_rules) out.push_back("-A CNI-HOSTPORT-DNAT " + r.ToString());
  return out;
}

TEST(IptablesRules, MatchReferenceSaveOutputV4) {
  auto config = Parse(ConfText(""));
  ASSERT_TRUE(config.ok());
  const ipt::Plan plan = ipt::BuildPlan(*config, net::Family::kV4);
  EXPECT_EQ(plan.container_chain, "CNI-DN-6ef8579d92ac413d65a3e");
  // Verbatim from iptables-save after Debian's reference portmap (v1.1.1) ran.
  const std::vector<std::string> expected = {
      "-A CNI-DN-6ef8579d92ac413d65a3e -s 10.88.0.0/16 -d 10.88.0.1/32 -p tcp -m tcp --dport 8080 "
      "-j CNI-HOSTPORT-SETMARK",
      "-A CNI-DN-6ef8579d92ac413d65a3e -s 127.0.0.1/32 -d 10.88.0.1/32 -p tcp -m tcp --dport 8080 "
      "-j CNI-HOSTPORT-SETMARK",
      "-A CNI-DN-6ef8579d92ac413d65a3e -d 10.88.0.1/32 -p tcp -m tcp --dport 8080 -j DNAT "
      "--to-destination 10.88.0.2:80",
      "-A CNI-DN-6ef8579d92ac413d65a3e -s 10.88.0.0/16 -p udp -m udp --dport 5353 -j "
      "CNI-HOSTPORT-SETMARK",
      "-A CNI-DN-6ef8579d92ac413d65a3e -s 127.0.0.1/32 -p udp -m udp --dport 5353 -j "
      "CNI-HOSTPORT-SETMARK",
      "-A CNI-DN-6ef8579d92ac413d65a3e -p udp -m udp --dport 5353 -j DNAT --to-destination "
      "10.88.0.2:53",
      R"(-A CNI-HOSTPORT-DNAT -p tcp -m comment --comment "dnat name: \"rnet\" id: \"ctr1\"" -m multiport --dports 8080 -j CNI-DN-6ef8579d92ac413d65a3e)",
      R"(-A CNI-HOSTPORT-DNAT -p udp -m comment --comment "dnat name: \"rnet\" id: \"ctr1\"" -m multiport --dports 5353 -j CNI-DN-6ef8579d92ac413d65a3e)",
  };
  EXPECT_EQ(Lines(plan), expected);
  std::vector<std::string> shared;
  for (const auto& s : plan.shared_rules)
    shared.push_back("-A " + s.chain + " " + s.rule.ToString());
  EXPECT_EQ(
      shared,
      (std::vector<std::string>{
          R"(-A CNI-HOSTPORT-SETMARK -m comment --comment "CNI portfwd masquerade mark" -j MARK --set-xmark 0x2000/0x2000)",
          "-A CNI-HOSTPORT-MASQ -m mark --mark 0x2000/0x2000 -j MASQUERADE",
          R"(-A POSTROUTING -m comment --comment "CNI portfwd requiring masquerade" -j CNI-HOSTPORT-MASQ)",
          "-A PREROUTING -m addrtype --dst-type LOCAL -j CNI-HOSTPORT-DNAT",
          "-A OUTPUT -m addrtype --dst-type LOCAL -j CNI-HOSTPORT-DNAT"}));
  EXPECT_TRUE(plan.shared_rules[2].insert_first);
}

TEST(IptablesRules, MatchReferenceSaveOutputV6) {
  auto config = Parse(ConfText(""));
  const ipt::Plan plan = ipt::BuildPlan(*config, net::Family::kV6);
  const std::vector<std::string> expected = {
      "-A CNI-DN-6ef8579d92ac413d65a3e -s fd00:88::/64 -p udp -m udp --dport 5353 -j "
      "CNI-HOSTPORT-SETMARK",
      "-A CNI-DN-6ef8579d92ac413d65a3e -p udp -m udp --dport 5353 -j DNAT --to-destination "
      "[fd00:88::2]:53",
      // The reference does not filter entry rules by hostIP family.
      R"(-A CNI-HOSTPORT-DNAT -p tcp -m comment --comment "dnat name: \"rnet\" id: \"ctr1\"" -m multiport --dports 8080 -j CNI-DN-6ef8579d92ac413d65a3e)",
      R"(-A CNI-HOSTPORT-DNAT -p udp -m comment --comment "dnat name: \"rnet\" id: \"ctr1\"" -m multiport --dports 5353 -j CNI-DN-6ef8579d92ac413d65a3e)",
  };
  EXPECT_EQ(Lines(plan), expected);
}

TEST(IptablesRules, ChunksPortsSortsProtocolsAndAppliesConditions) {
  std::string mappings = "[";
  for (int i = 0; i < 16; ++i) {
    mappings += (i ? "," : "") + std::string(R"({"hostPort":)") + std::to_string(9000 + i) +
                R"(,"containerPort":80,"protocol":"tcp"})";
  }
  mappings += R"(,{"hostPort":9091,"containerPort":80,"protocol":"sctp"}])";
  auto config = Parse(ConfText(R"(,"conditionsV4":["!","-d","192.0.2.0/24"])", mappings));
  ASSERT_TRUE(config.ok()) << config.error().msg;
  const ipt::Plan plan = ipt::BuildPlan(*config, net::Family::kV4);
  ASSERT_EQ(plan.entry_rules.size(), 3u);
  EXPECT_EQ(plan.entry_rules[0].ToString().substr(0, 32), "! -d 192.0.2.0/24 -p sctp -m com");
  EXPECT_NE(plan.entry_rules[1].ToString().find("--dports 9000,9001,9002,9003,9004,9005,9006,9007,"
                                                "9008,9009,9010,9011,9012,9013,9014 -j"),
            std::string::npos);
  EXPECT_NE(plan.entry_rules[2].ToString().find("--dports 9015 -j"), std::string::npos);
}

TEST(IptablesRules, SnatOffMasqAllAndExternalChain) {
  auto nosnat = Parse(ConfText(R"(,"snat":false)"));
  const ipt::Plan a = ipt::BuildPlan(*nosnat, net::Family::kV4);
  EXPECT_EQ(a.container_rules.size(), 2u);  // DNAT only
  EXPECT_EQ(a.shared_chains, std::vector<std::string>{"CNI-HOSTPORT-DNAT"});

  auto masq_all = Parse(ConfText(R"(,"masqAll":true)"));
  const ipt::Plan b = ipt::BuildPlan(*masq_all, net::Family::kV4);
  ASSERT_EQ(b.container_rules.size(), 4u);  // hairpin from anywhere, no localhost rule
  EXPECT_EQ(b.container_rules[0].ToString(),
            "-d 10.88.0.1/32 -p tcp -m tcp --dport 8080 -j CNI-HOSTPORT-SETMARK");

  auto external = Parse(ConfText(R"(,"externalSetMarkChain":"KUBE-MARK-MASQ")"));
  const ipt::Plan c = ipt::BuildPlan(*external, net::Family::kV4);
  EXPECT_EQ(c.shared_chains, std::vector<std::string>{"CNI-HOSTPORT-DNAT"});
  EXPECT_EQ(std::get<ipt::JumpTarget>(c.container_rules[0].target).chain, "KUBE-MARK-MASQ");
}

TEST(IptablesRules, CommentsRoundTripAndAreCut) {
  const std::string comment = ipt::EntryComment("rnet", "ctr1");
  auto owner = ipt::ParseEntryComment(comment);
  ASSERT_TRUE(owner.has_value());
  EXPECT_EQ(owner->network_name, "rnet");
  EXPECT_EQ(owner->container_id, "ctr1");
  EXPECT_FALSE(ipt::ParseEntryComment("CNI portfwd masquerade mark").has_value());
  const std::string long_comment = ipt::EntryComment("rnet", std::string(300, 'a'));
  EXPECT_EQ(long_comment.size(), 255u);
  EXPECT_EQ(long_comment.substr(252), "...");
}

TEST(IptablesEncode, LayoutAndComparison) {
  auto config = Parse(ConfText(""));
  for (const auto family : {net::Family::kV4, net::Family::kV6}) {
    const ipt::Plan plan = ipt::BuildPlan(*config, family);
    for (const auto& rule : plan.container_rules) {
      const auto blob = ipt::EncodeRule(rule, family);
      ASSERT_GT(blob.size(), ipt::EntryHeaderSize(family));
      EXPECT_EQ(blob.size() % 8, 0u);
      EXPECT_TRUE(
          ipt::SameRule(blob.data(), ipt::TargetName(rule), blob, ipt::TargetName(rule), family));
    }
    // Rules differing only in the port, the target data or the target are different rules.
    const auto& dnat = plan.container_rules.back();
    ipt::Rule other_port = dnat;
    std::get<ipt::PortMatch>(other_port.matches[0]).dport = 1;
    ipt::Rule other_target = dnat;
    std::get<ipt::DnatTarget>(other_target.target).port = 1;
    const auto a = ipt::EncodeRule(dnat, family);
    EXPECT_FALSE(
        ipt::SameRule(ipt::EncodeRule(other_port, family).data(), "DNAT", a, "DNAT", family));
    EXPECT_FALSE(
        ipt::SameRule(ipt::EncodeRule(other_target, family).data(), "DNAT", a, "DNAT", family));
    EXPECT_FALSE(ipt::SameRule(a.data(), "MARK", a, "DNAT", family));
  }
  const auto entry =
      ipt::EncodeRule(ipt::BuildPlan(*config, net::Family::kV4).entry_rules[0], net::Family::kV4);
  EXPECT_EQ(ipt::EntryCommentText(entry.data(), net::Family::kV4),
            R"(dnat name: "rnet" id: "ctr1")");
}

TEST(NftablesRules, ElementsAndAddScript) {
  auto config = Parse(ConfText(R"(,"backend":"nftables")"));
  ASSERT_TRUE(config.ok());
  const auto names = nft::NamesFor("rnet");
  const auto v4 = nft::ContainerElements(*config, net::Family::kV4);
  ASSERT_EQ(v4.size(), 2u);
  EXPECT_EQ(v4[0].map, names.DnatIp(net::Family::kV4));
  EXPECT_EQ(v4[0].key, "10.88.0.1 . tcp . 8080");
  EXPECT_EQ(v4[0].value, "10.88.0.2 . 80");
  EXPECT_EQ(v4[1].map, names.DnatAny(net::Family::kV4));
  EXPECT_EQ(v4[1].key, "udp . 5353");
  const auto v6 = nft::ContainerElements(*config, net::Family::kV6);
  ASSERT_EQ(v6.size(), 1u);
  EXPECT_EQ(v6[0].value, "fd00:88::2 . 53");

  nft::Script script;
  nft::AppendAdd(*config, true, true, script);
  EXPECT_EQ(script.LinesOf(nft::Role::kNetcfg), std::vector<int>{1});
  EXPECT_EQ(script.LinesOf(nft::Role::kMarker).size(), 2u);
  EXPECT_EQ(script.LinesOf(nft::Role::kElement).size(), 3u);
  const std::string owner = nft::OwnerTag("rnet", "ctr1");
  EXPECT_NE(
      script.text().find("create element inet cni_hostport owned { \"" + owner + "\" . \"all4\" }"),
      std::string::npos);
  EXPECT_NE(script.text().find("add element inet cni_hostport " + names.DnatIp(net::Family::kV4) +
                               " { 10.88.0.1 . tcp . 8080 comment \"ctr1\" : 10.88.0.2 . 80 }"),
            std::string::npos);
  EXPECT_NE(script.text().find(names.Hairpin(net::Family::kV4) + " { 10.88.0.0/16 }"),
            std::string::npos);
  // Ownership includes the network name.
  EXPECT_NE(nft::OwnerTag("rnet", "ctr1"), nft::OwnerTag("other", "ctr1"));
  EXPECT_NE(nft::NamesFor("rnet").prefix, nft::NamesFor("other").prefix);
}

TEST(NftablesRules, NetworkChainsAndConfigHash) {
  auto config = Parse(
      ConfText(R"(,"backend":"nftables","conditionsV4":["ip","saddr","!=","203.0.113.0/24"])"));
  ASSERT_TRUE(config.ok()) << config.error().msg;
  const auto rules = nft::HostportsRules(*config);
  ASSERT_EQ(rules.size(), 10u);
  const auto n = nft::NamesFor("rnet");
  EXPECT_EQ(rules[0], "ip saddr != 203.0.113.0/24 ip saddr @" + n.Hairpin(net::Family::kV4) +
                          " ip daddr . meta l4proto . th dport @" + n.DnatIp(net::Family::kV4) +
                          " meta mark set meta mark | 0x00002000");
  EXPECT_EQ(rules[5],
            "ip saddr != 203.0.113.0/24 meta nfproto ipv4 dnat ip to meta l4proto . "
            "th dport map @" +
                n.DnatAny(net::Family::kV4));
  // IPv6 rules do not carry the IPv4 conditions and have no localhost rule.
  EXPECT_EQ(rules[6].rfind("ip6 saddr @", 0), 0u);

  nft::Script setup;
  nft::AppendSetup(*config, setup);
  EXPECT_NE(setup.text().find("fib daddr type local jump " + n.Hostports()), std::string::npos);
  EXPECT_NE(setup.text().find("meta mark & 0x00002000 == 0x00002000 masquerade"),
            std::string::npos);

  auto plain = Parse(ConfText(R"(,"backend":"nftables")"));
  auto masq_all = Parse(ConfText(R"(,"backend":"nftables","masqAll":true)"));
  EXPECT_NE(nft::ConfigHash(*config), nft::ConfigHash(*plain));
  EXPECT_NE(nft::ConfigHash(*plain), nft::ConfigHash(*masq_all));
  EXPECT_EQ(nft::HostportsRules(*masq_all).size(), 8u);
}

// A pod with many host ports is a handful of commands: one per set or map, whatever the
// number of mappings (nft evaluates each command on its own).
TEST(NftablesRules, ManyMappingsAreOneCommandPerMap) {
  std::string mappings = "[";
  for (int port = 20000; port < 20300; ++port) {
    mappings += (port > 20000 ? "," : "") + std::string("{\"hostPort\":") + std::to_string(port) +
                ",\"containerPort\":53,\"protocol\":\"udp\"}";
  }
  mappings += "]";
  const std::string conf = R"({"cniVersion":"1.0.0","name":"rnet","type":"portmap",)"
                           R"("backend":"nftables","runtimeConfig":{"portMappings":)" +
                           mappings +
                           R"(},"prevResult":{"cniVersion":"1.0.0",)"
                           R"("ips":[{"address":"10.88.0.2/16"}]}})";
  auto config = Parse(conf);
  ASSERT_TRUE(config.ok()) << config.error().msg;
  nft::Script add;
  nft::AppendAdd(*config, true, true, add);
  // netcfg delete + add, marker, ownership records, the map's elements, hairpin.
  EXPECT_EQ(add.lines(), 6) << add.text();
  const auto element_lines = add.LinesOf(nft::Role::kElement);
  ASSERT_EQ(element_lines.size(), 1u);
  const nft::Command* elements = add.Line(element_lines[0]);
  EXPECT_EQ(elements->subject, "");  // several keys: a conflict is named by listing
  EXPECT_NE(elements->text.find("{ udp . 20000 comment \"ctr1\" : 10.88.0.2 . 53, udp . 20001 "),
            std::string::npos);
  EXPECT_NE(elements->text.find("udp . 20299 comment \"ctr1\" : 10.88.0.2 . 53 }"),
            std::string::npos);
  nft::Script del;
  nft::AppendDelete(nft::OwnerTag("rnet", "ctr1"),
                    nft::ContainerElements(*config, net::Family::kV4), net::Family::kV4, del);
  EXPECT_EQ(del.lines(), 3) << del.text();
}

TEST(NftablesRules, DeleteScriptPutsTheMarkerFirst) {
  auto config = Parse(ConfText(R"(,"backend":"nftables")"), Purpose::kDel);
  nft::Script script;
  nft::AppendDelete(nft::OwnerTag("rnet", "ctr1"),
                    nft::ContainerElements(*config, net::Family::kV4), net::Family::kV4, script);
  EXPECT_EQ(script.LinesOf(nft::Role::kMarker), std::vector<int>{1});
  // Then one command per set: the ownership records, and each map's keys.
  EXPECT_EQ(script.lines(), 4);
  EXPECT_NE(script.text().find("delete element inet cni_hostport " +
                               nft::NamesFor("rnet").DnatAny(net::Family::kV4) + " { udp . 5353 }"),
            std::string::npos);
}

// Issue 13 row 8: chain comments fit nft's 128 bytes whatever the network name's length;
// names that fit keep the comment earlier versions wrote.
TEST(NftablesRules, NetworkCommentFitsTheCommentLimit) {
  EXPECT_EQ(nft::NetworkComment("rnet"), "network rnet");
  const std::string fits(120, 'a');  // "network " + 120 = 128 bytes
  EXPECT_EQ(nft::NetworkComment(fits), "network " + fits);
  for (const std::string& name :
       {std::string(121, 'a'), std::string(200, 'n'), std::string(5000, 'x'),
        std::string(118, 'a') + "\xc3\xa9\xc3\xa9\xc3\xa9"}) {
    const std::string c = nft::NetworkComment(name);
    EXPECT_LE(c.size(), 128u) << name.size();
    EXPECT_EQ(c.rfind("network ", 0), 0u);
    EXPECT_NE(c.find("... sha512:"), std::string::npos) << c;
  }
  // Cut at a character boundary, never inside a UTF-8 sequence.
  const std::string accented = std::string(92, 'a') + "\xc3\xa9" + std::string(40, 'b');
  const std::string c = nft::NetworkComment(accented);
  EXPECT_EQ(c.substr(0, c.find("... ")), "network " + std::string(92, 'a')) << c;
  // Names sharing their first bytes still differ.
  EXPECT_NE(nft::NetworkComment(std::string(200, 'n')),
            nft::NetworkComment(std::string(199, 'n') + "m"));
  auto config = Parse(ConfText(R"(,"backend":"nftables")"));
  ASSERT_TRUE(config.ok());
  config->network_name = std::string(200, 'n');
  nft::Script setup;
  nft::AppendSetup(*config, setup);
  EXPECT_EQ(setup.text().find(std::string(121, 'n')), std::string::npos);
}

// Issue 13 row 6: the hairpin set keeps the outermost container subnets only.
TEST(NftablesRules, HairpinPlanKeepsTheOutermostSubnets) {
  auto p = [](const char* text) { return *net::IpPrefix::Parse(text, true); };
  // Empty set, or a disjoint or adjacent element: add.
  EXPECT_TRUE(nft::PlanHairpin({}, p("10.1.0.5/24")).add);
  auto adjacent = nft::PlanHairpin({p("10.1.1.0/24"), p("fd00::/64")}, p("10.1.0.5/24"));
  EXPECT_TRUE(adjacent.add);
  EXPECT_TRUE(adjacent.remove.empty());
  // Covered by a larger element or already there: nothing.
  auto covered = nft::PlanHairpin({p("10.1.0.0/16")}, p("10.1.0.5/24"));
  EXPECT_FALSE(covered.add);
  EXPECT_TRUE(covered.remove.empty());
  EXPECT_FALSE(nft::PlanHairpin({p("10.1.0.0/24")}, p("10.1.0.6/24")).add);
  EXPECT_FALSE(nft::PlanHairpin({p("10.1.0.6")}, p("10.1.0.6/32")).add);
  // Around smaller elements: add, deleting what it covers.
  auto around =
      nft::PlanHairpin({p("10.1.0.0/24"), p("10.1.7.0/25"), p("10.2.0.0/24")}, p("10.1.0.6/16"));
  EXPECT_TRUE(around.add);
  EXPECT_EQ(around.remove, (std::vector<std::string>{"10.1.0.0/24", "10.1.7.0/25"}));
  auto v6 = nft::PlanHairpin({p("fd00:88::/64")}, p("fd00::2/16"));
  EXPECT_EQ(v6.remove, (std::vector<std::string>{"fd00:88::/64"}));

  auto config = Parse(ConfText(R"(,"backend":"nftables")"));
  ASSERT_TRUE(config.ok());
  nft::HairpinPlan plan;
  plan.v4 = around;
  plan.v6 = nft::HairpinChange{.add = false, .remove = {}};
  nft::Script script;
  nft::AppendAdd(*config, true, true, script, plan);
  EXPECT_EQ(script.LinesOf(nft::Role::kHairpin).size(), 1u);
  const auto names = nft::NamesFor("rnet");
  EXPECT_NE(script.text().find("delete element inet cni_hostport " +
                               names.Hairpin(net::Family::kV4) + " { 10.1.7.0/25 }"),
            std::string::npos);
  EXPECT_EQ(script.text().find(names.Hairpin(net::Family::kV6)), std::string::npos);
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

// The iptables builder reads the parsed header, not the tokens.
TEST(IptablesRules, EntryRulesCarryTheParsedConditions) {
  auto config = Parse(ConfText("", R"([{"hostPort":80,"containerPort":80,"protocol":"tcp"}])"));
  ASSERT_TRUE(config.ok());
  ipt::Header header;
  header.in_iface = "eth0";
  config->conditions_v4.parsed = header;
  const ipt::Plan plan = ipt::BuildPlan(*config, net::Family::kV4);
  ASSERT_EQ(plan.entry_rules.size(), 1u);
  EXPECT_EQ(plan.entry_rules[0].header.in_iface, "eth0");
  EXPECT_EQ(plan.entry_rules[0].header.protocol, Protocol::kTcp);
  EXPECT_TRUE(ipt::BuildPlan(*config, net::Family::kV6).entry_rules[0].header.in_iface.empty());
}

std::string Hex32(uint32_t value) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%08x", value);
  return buf;
}

// One tcp mapping, IPv4 container only.
Result<Config> OneMapping(Purpose purpose = Purpose::kAdd) {
  return Parse(std::string(R"({"cniVersion":"1.0.0","name":"rnet","type":"portmap",
    "backend":"nftables",
    "runtimeConfig":{"portMappings":[{"hostPort":8080,"containerPort":80,"protocol":"tcp"}]},
    "prevResult":{"cniVersion":"1.0.0","ips":[{"address":"10.88.0.2/16"}]}})"),
               purpose);
}

TEST(NftablesRules, AddPlanForOneMapping) {
  auto config = OneMapping();
  ASSERT_TRUE(config.ok()) << config.error().msg;
  const auto n = nft::NamesFor("rnet");
  const std::string owner = nft::OwnerTag("rnet", "ctr1");
  const std::string netcfg = "{ \"" + n.prefix + "\" . " + Hex32(nft::ConfigHash(*config)) + " }";
  const nft::Element element = nft::ContainerElements(*config, net::Family::kV4).at(0);
  const std::string t = "inet cni_hostport ";
  nft::Script script;
  nft::AppendAdd(*config, true, true, script);
  const std::vector<nft::Command> want = {
      {"delete element " + t + "netcfg " + netcfg, nft::Role::kNetcfg, ""},
      {"add element " + t + "netcfg " + netcfg, nft::Role::kOther, ""},
      {"create element " + t + "owned { \"" + owner + "\" . \"all4\" }", nft::Role::kMarker, ""},
      {"add element " + t + "owned { \"" + owner + "\" . \"" + element.Tag() + "\" }",
       nft::Role::kOther, ""},
      {"add element " + t + n.DnatAny(net::Family::kV4) +
           " { tcp . 8080 comment \"ctr1\" : 10.88.0.2 . 80 }",
       nft::Role::kElement, "tcp . 8080"},
      {"add element " + t + n.Hairpin(net::Family::kV4) + " { 10.88.0.0/16 }", nft::Role::kHairpin,
       ""},
  };
  EXPECT_EQ(script.commands(), want);
  EXPECT_EQ(script.Line(5)->subject, "tcp . 8080");
  EXPECT_EQ(script.Line(0), nullptr);
  EXPECT_EQ(script.Line(7), nullptr);
  EXPECT_EQ(script.text().substr(0, script.text().find('\n') + 1), want[0].text + "\n");
}

TEST(NftablesRules, CheckPlanNamesEachObject) {
  auto config = OneMapping(Purpose::kCheck);
  ASSERT_TRUE(config.ok()) << config.error().msg;
  const auto n = nft::NamesFor("rnet");
  const std::string owner = nft::OwnerTag("rnet", "ctr1");
  const std::string map = n.DnatAny(net::Family::kV4);
  const std::string tag = nft::ContainerElements(*config, net::Family::kV4).at(0).Tag();
  const nft::CheckScripts check = nft::BuildCheck(*config);
  std::vector<std::pair<std::string, std::string>> exists;
  for (const auto& c : check.exists.commands()) exists.emplace_back(c.text, c.subject);
  const std::string t = "delete element inet cni_hostport ";
  EXPECT_EQ(
      exists,
      (std::vector<std::pair<std::string, std::string>>{
          {t + "netcfg { \"" + n.prefix + "\" . " + Hex32(nft::ConfigHash(*config)) + " }",
           "the chains of network rnet for this configuration"},
          {t + "owned { \"" + owner + "\" . \"all4\" }", "the ownership marker of the container"},
          {t + map + " { tcp . 8080 }", "element tcp . 8080 in map " + map},
          {t + "owned { \"" + owner + "\" . \"" + tag + "\" }",
           "the ownership record of tcp . 8080"}}));
  EXPECT_EQ(check.values.text(),
            "add element inet cni_hostport " + map + " { tcp . 8080 : 10.88.0.2 . 80 }\n");
  std::vector<std::pair<std::string, size_t>> counts;
  for (const auto& c : nft::NetworkChainRuleCounts(*config)) counts.emplace_back(c.chain, c.rules);
  EXPECT_EQ(counts,
            (std::vector<std::pair<std::string, size_t>>{
                {n.Prerouting(), 1}, {n.Output(), 1}, {n.Hostports(), 10}, {n.Masquerade(), 1}}));
  EXPECT_EQ(nft::ListChainCommand(n.Output()), "list chain inet cni_hostport " + n.Output());
}

// The commands the backend builds from listings: re-ADD and GC (forget), DEL without the
// ADD's mappings, stale netcfg records, GC's hairpin sources, the reference's leftovers.
TEST(NftablesRules, ListingDrivenDeletes) {
  auto config = OneMapping();
  ASSERT_TRUE(config.ok()) << config.error().msg;
  const auto n = nft::NamesFor("rnet");
  const nft::Element e = nft::ContainerElements(*config, net::Family::kV4).at(0);
  const std::string owned = "inet cni_hostport owned { \"o\" . ";
  const std::string in_map = "delete element inet cni_hostport " + e.map + " { tcp . 8080 }\n";

  nft::Script forget;
  nft::AppendForget("o", {e}, {net::Family::kV6}, forget);
  EXPECT_EQ(forget.text(), "add element " + owned + "\"all6\" }\ndelete element " + owned +
                               "\"all6\" }\nadd element " + owned + "\"" + e.Tag() +
                               "\" }\ndelete element " + owned + "\"" + e.Tag() + "\" }\n" +
                               in_map);

  nft::Script listed;
  nft::AppendDeleteListed("o", {{"o", "all4"}, {"other", "all4"}, {"o", "abc"}}, {e}, listed);
  EXPECT_EQ(listed.text(), "delete element " + owned + "\"all4\" }\ndelete element " + owned +
                               "\"abc\" }\n" + in_map);

  nft::Script netcfg;
  const uint32_t hash = nft::ConfigHash(*config);
  nft::AppendDropOtherConfigs(
      *config, {{n.prefix, Hex32(hash)}, {n.prefix, "0x1f"}, {"n0000000000", "0x2"}}, netcfg);
  EXPECT_EQ(netcfg.text(),
            "delete element inet cni_hostport netcfg { \"" + n.prefix + "\" . 0x0000001f }\n");

  nft::Script hairpin;
  nft::AppendDeleteHairpin("rnet", *net::IpPrefix::Parse("fd00:88::5/64"), hairpin);
  EXPECT_EQ(hairpin.text(), "delete element inet cni_hostport " + n.Hairpin(net::Family::kV6) +
                                " { fd00:88::/64 }\n");

  const nft::Script leftovers = nft::ReferenceLeftovers("ip6",
                                                        {{"hostports", "ctr1", 7},
                                                         {"hostports", "ctr2", 8},
                                                         {"other", "ctr1", 9},
                                                         {"masquerading", "ctr1", 12}},
                                                        "ctr1");
  EXPECT_EQ(leftovers.text(),
            "delete rule ip6 cni_hostport hostports handle 7\n"
            "delete rule ip6 cni_hostport masquerading handle 12\n");
  EXPECT_EQ(nft::ListReferenceTableCommand("ip"), "list table ip cni_hostport");
}

TEST(NftErrors, MessagesMapToErrno) {
  EXPECT_EQ(netfilter::NftMessageErrno("Error: Could not process rule: File exists"), EEXIST);
  EXPECT_EQ(netfilter::NftMessageErrno("Error: No such file or directory"), ENOENT);
  EXPECT_EQ(netfilter::NftMessageErrno("Error: syntax error"), 0);
}

}  // namespace
}  // namespace nodegate::portmap
