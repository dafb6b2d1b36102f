// The iptables layout as data, compared with the reference's observed iptables-save lines:
// chains, chunked ports, conditions, SNAT/masquerade options, entry comments.
#include "plugins/portmap/iptables/rules.h"

#include <gtest/gtest.h>

#include <string>
#include <variant>
#include <vector>

#include "plugins/portmap/testing/config_text.h"

namespace nodegate::portmap {
namespace {

using testing::ConfText;
using testing::Parse;

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

}  // namespace
}  // namespace nodegate::portmap
