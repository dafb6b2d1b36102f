// conditionsV4/V6 in nft syntax compiled into expressions: each supported construct gives
// the expressions nft 1.0.6 writes for the same text (the expected text below is nft's own
// `--debug=netlink` output; tests/portmap/nftables_netns_test.cc checks every construct against
// a live nft too), and every other construct is refused with code 7 naming it.
#include "plugins/portmap/nftables/conditions.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace nodegate::portmap {
namespace {

// The expressions of every match, in nft's debug text, with the dependencies a rule gets.
std::string Text(const std::vector<std::string>& tokens, net::Family family = net::Family::kV4) {
  auto parsed = ParseNftConditions(tokens, family);
  if (!parsed.ok()) return "error: " + parsed.error().msg;
  std::string out;
  for (const auto& m : parsed->matches) out += netfilter::ExpressionsText(m.exprs);
  return out;
}

Error ErrorOf(const std::vector<std::string>& tokens, net::Family family = net::Family::kV4) {
  auto parsed = ParseNftConditions(tokens, family);
  return parsed.ok() ? Error(0, "parsed") : parsed.error();
}

TEST(NftConditions, TheReferencesExampleIsOneMatch) {
  auto v4 = ParseNftConditions({"ip", "daddr", "!=", "192.0.2.0/24"}, net::Family::kV4);
  ASSERT_TRUE(v4.ok()) << v4.error().msg;
  EXPECT_EQ(v4->text, "ip daddr != 192.0.2.0/24");
  ASSERT_EQ(v4->matches.size(), 1u);
  EXPECT_EQ(v4->matches[0].family, net::Family::kV4);
  // An octet-aligned prefix loads its whole bytes only.
  EXPECT_EQ(netfilter::ExpressionsText(v4->matches[0].exprs),
            "  [ payload load 3b @ network header + 16 => reg 1 ]\n"
            "  [ cmp neq reg 1 0x000200c0 ]\n");
  auto v6 = ParseNftConditions({"ip6", "daddr", "!=", "fc00::/7"}, net::Family::kV6);
  ASSERT_TRUE(v6.ok()) << v6.error().msg;
  EXPECT_EQ(netfilter::ExpressionsText(v6->matches[0].exprs),
            "  [ payload load 16b @ network header + 24 => reg 1 ]\n"
            "  [ bitwise reg 1 = ( reg 1 & 0x000000fe 0x00000000 0x00000000 0x00000000 ) ^ "
            "0x00000000 0x00000000 0x00000000 0x00000000 ]\n"
            "  [ cmp neq reg 1 0x000000fc 0x00000000 0x00000000 0x00000000 ]\n");
}

TEST(NftConditions, TokensMaySplitOrJoinTheText) {
  EXPECT_EQ(Text({"ip saddr 10.16.0.0/12"}), Text({"ip", "saddr", "10.16.0.0/12"}));
  EXPECT_EQ(Text({"ip saddr 10.16.0.0/12"}),
            "  [ payload load 4b @ network header + 12 => reg 1 ]\n"
            "  [ bitwise reg 1 = ( reg 1 & 0x0000f0ff ) ^ 0x00000000 ]\n"
            "  [ cmp eq reg 1 0x0000100a ]\n");
}

TEST(NftConditions, PortsRangesAndOrdering) {
  EXPECT_EQ(Text({"th", "dport", "!=", "1000-2000"}),
            "  [ payload load 2b @ transport header + 2 => reg 1 ]\n"
            "  [ range neq reg 1 0x0000e803 0x0000d007 ]\n");
  EXPECT_EQ(Text({"th dport 1000-2000"}),
            "  [ payload load 2b @ transport header + 2 => reg 1 ]\n"
            "  [ cmp gte reg 1 0x0000e803 ]\n"
            "  [ cmp lte reg 1 0x0000d007 ]\n");
  EXPECT_EQ(Text({"udp sport >= 1024"}),
            "  [ payload load 2b @ transport header + 0 => reg 1 ]\n"
            "  [ cmp gte reg 1 0x00000004 ]\n");
  auto tcp = ParseNftConditions({"tcp", "dport", "80"}, net::Family::kV4);
  ASSERT_TRUE(tcp.ok());
  EXPECT_EQ(tcp->matches[0].needs_l4, 6);  // `meta l4proto tcp` goes before it
  auto proto = ParseNftConditions({"ip protocol tcp tcp sport 1"}, net::Family::kV4);
  ASSERT_TRUE(proto.ok());
  EXPECT_EQ(proto->matches[0].gives_l4, 6);  // ... unless a match already says tcp
}

TEST(NftConditions, InterfacesMarksAndProtocols) {
  EXPECT_EQ(Text({"iifname", "\"eth*\""}),
            "  [ meta load iifname => reg 1 ]\n"
            "  [ cmp eq reg 1 0x00687465 ]\n");
  EXPECT_EQ(Text({"oifname lo"}),
            "  [ meta load oifname => reg 1 ]\n"
            "  [ cmp eq reg 1 0x00006f6c 0x00000000 0x00000000 0x00000000 ]\n");
  EXPECT_EQ(Text({"meta mark & 0xff != 0x1"}),
            "  [ meta load mark => reg 1 ]\n"
            "  [ bitwise reg 1 = ( reg 1 & 0x000000ff ) ^ 0x00000000 ]\n"
            "  [ cmp neq reg 1 0x00000001 ]\n");
  EXPECT_EQ(Text({"meta l4proto != tcp"}),
            "  [ meta load l4proto => reg 1 ]\n"
            "  [ cmp neq reg 1 0x00000006 ]\n");
  EXPECT_EQ(Text({"ip6 nexthdr udp"}, net::Family::kV6),
            "  [ payload load 1b @ network header + 6 => reg 1 ]\n"
            "  [ cmp eq reg 1 0x00000011 ]\n");
}

TEST(NftConditions, SetsAreAnonymousSets) {
  auto ports = ParseNftConditions({"tcp dport { 80, 1000-2000 }"}, net::Family::kV4);
  ASSERT_TRUE(ports.ok()) << ports.error().msg;
  ASSERT_TRUE(ports->matches[0].set);
  const AnonymousSet& set = *ports->matches[0].set;
  EXPECT_EQ(set.flags, 7u);  // anonymous, constant, interval
  EXPECT_EQ(set.key_len, 2u);
  // As nft writes an interval set: an end at zero, then each range's start and the value
  // after it, flagged as an end.
  ASSERT_EQ(set.elements.size(), 5u);
  EXPECT_TRUE(set.elements[0].interval_end);
  EXPECT_EQ(set.elements[1].key, (netfilter::Bytes{0, 80}));
  EXPECT_EQ(set.elements[2].key, (netfilter::Bytes{0, 81}));
  EXPECT_TRUE(set.elements[2].interval_end);
  EXPECT_EQ(set.elements[3].key, (netfilter::Bytes{0x03, 0xe8}));
  EXPECT_EQ(set.elements[4].key, (netfilter::Bytes{0x07, 0xd1}));
  auto names = ParseNftConditions({"iifname != { eth0, \"eth1\" }"}, net::Family::kV4);
  ASSERT_TRUE(names.ok()) << names.error().msg;
  EXPECT_EQ(names->matches[0].set->flags, 3u);  // anonymous, constant: a hash
  EXPECT_EQ(netfilter::ExpressionsText(names->matches[0].exprs),
            "  [ meta load iifname => reg 1 ]\n"
            "  [ lookup reg 1 set __set%d 0x1 ]\n");
  // Touching and overlapping ranges merge, as nft merges them.
  auto merged =
      ParseNftConditions({"ip saddr { 10.0.0.0/25, 10.0.0.128/25, 10.0.0.5 }"}, net::Family::kV4);
  ASSERT_TRUE(merged.ok());
  EXPECT_EQ(merged->matches[0].set->elements.size(), 3u);  // end at 0, 10.0.0.0, 10.0.1.0
}

TEST(NftConditions, EverythingElseIsRefusedNamingTheConstruct) {
  const struct {
    std::vector<std::string> tokens;
    std::string names;
  } cases[] = {
      {{"ct", "state", "new"}, "\"ct\" is not supported"},
      {{"fib", "daddr", "type", "local"}, "\"fib\" is not supported"},
      {{"ip", "daddr", "10.0.0.1", "accept"}, "\"accept\" is not supported"},
      {{"meta", "skuid", "0"}, "\"meta skuid\" is not supported"},
      {{"ip", "ttl", "64"}, "\"ip ttl\" is not supported"},
      {{"ip6", "saddr", "::1"}, "belong in conditionsV6"},
      {{"ip", "saddr", "fd00::1"}, "not an IPv4 address"},
      {{"ip", "saddr", "0.0.0.0/0"}, "matches every address"},
      {{"iifname", "*"}, "matches every interface"},
      {{"iifname", "{", "eth*", "}"}, "wildcards in a set"},
      {{"th", "dport", "{", "80"}, "closing }"},
      {{"th", "dport", "70000"}, "not a port"},
      {{"ip", "saddr", "<", "10.0.0.1"}, "on ports only"},
      {{"ip", "saddr"}, "no value"},
      {{"ip", "saddr", "\"10.0.0.1"}, "unterminated string"},
      {{"ip saddr 10.0.0.1; flush ruleset"}, "would end the rule"},
  };
  for (const auto& c : cases) {
    const Error e = ErrorOf(c.tokens);
    EXPECT_EQ(e.code, kErrInvalidConfig) << c.tokens.front() << ": " << e.msg;
    EXPECT_NE(e.msg.find(c.names), std::string::npos) << e.msg;
  }
  EXPECT_NE(
      ErrorOf({"ip", "saddr", "10.0.0.1"}, net::Family::kV6).msg.find("belong in conditionsV4"),
      std::string::npos);
}

}  // namespace
}  // namespace nodegate::portmap
