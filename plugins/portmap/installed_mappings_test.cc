// The pure parts of the installed-mapping listing: iptables rules, the reference nftables
// backend's rules and our map elements read back as mappings, and the filters that skip entry rules
// before decoding.
#include "plugins/portmap/installed_mappings.h"

// clang-format off
#include <netinet/in.h>
// clang-format on
#include <gtest/gtest.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>

#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "plugins/portmap/iptables/nft/encode.h"

namespace nodegate::portmap {
namespace {

net::IpAddress Ip(const char* text) { return *net::IpAddress::Parse(text); }

TEST(InstalledMappingsParse, DnatRuleOfAContainerChain) {
  ipt::Rule rule;
  rule.header.dst = net::IpPrefix(Ip("10.88.0.1"), 32);
  rule.header.protocol = Protocol::kTcp;
  const ipt::Match port = ipt::PortMatch{Protocol::kTcp, 8080};
  rule.matches = {port};
  rule.target = ipt::DnatTarget{Ip("10.88.0.2"), 80};
  const auto m = MappingOfDnatRule(rule, net::Family::kV4);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->host_ip, Ip("10.88.0.1"));
  EXPECT_EQ(m->protocol, Protocol::kTcp);
  EXPECT_EQ(m->host_port, 8080);
  EXPECT_EQ(m->target, "10.88.0.2:80");
  rule.target = ipt::JumpTarget{"CNI-HOSTPORT-SETMARK"};
  EXPECT_FALSE(MappingOfDnatRule(rule, net::Family::kV4));
  EXPECT_EQ(TargetText(Ip("fd00::2"), 53), "[fd00::2]:53");
}

TEST(InstalledMappingsParse, EntryRulePortsFilterChains) {
  ipt::Rule entry;
  entry.header.protocol = Protocol::kUdp;
  const ipt::Match ports = ipt::MultiportMatch{{5353, 9000}};
  entry.matches = {ports};
  const std::set<PortKey> want = {{net::Family::kV4, Protocol::kUdp, 9000}};
  EXPECT_TRUE(EntryRuleMayMatch(entry, net::Family::kV4, want));
  EXPECT_FALSE(EntryRuleMayMatch(entry, net::Family::kV6, want));
  entry.header.protocol = Protocol::kTcp;
  EXPECT_FALSE(EntryRuleMayMatch(entry, net::Family::kV4, want));
}

// A container chain's DNAT rule is kept before decoding, its SETMARK jumps (with the same
// address, protocol and port) are passed over, in both families.
TEST(InstalledMappingsParse, RawDnatRulesFoundBeforeDecoding) {
  for (const auto& [family, host, container] :
       {std::tuple{net::Family::kV4, "10.88.0.1", "10.88.0.2"},
        std::tuple{net::Family::kV6, "fd00::1", "fd00::2"}}) {
    ipt::Rule rule;
    rule.header.dst = net::IpPrefix(Ip(host), family == net::Family::kV4 ? 32 : 128);
    rule.header.protocol = Protocol::kTcp;
    rule.matches = {ipt::PortMatch{Protocol::kTcp, 8080}};
    rule.target = ipt::DnatTarget{Ip(container), 80};
    auto dnat = ipt::EncodeNftRule(rule, family);
    ASSERT_TRUE(dnat.ok()) << dnat.error().msg;
    EXPECT_TRUE(RawRuleMayBeDnat(dnat->expressions));
    rule.target = ipt::JumpTarget{ipt::kSetMarkChain};
    auto setmark = ipt::EncodeNftRule(rule, family);
    ASSERT_TRUE(setmark.ok()) << setmark.error().msg;
    EXPECT_FALSE(RawRuleMayBeDnat(setmark->expressions));
  }
}

// The undecoded filter never drops an entry rule the decoded one keeps, and drops the others.
TEST(InstalledMappingsParse, RawEntryRulesFilteredBeforeDecoding) {
  ipt::Rule entry;
  entry.header.protocol = Protocol::kTcp;
  entry.matches = {ipt::CommentMatch{"dnat name: \"net\" id: \"ctr\""},
                   ipt::MultiportMatch{{8080, 9000}}};
  entry.target = ipt::JumpTarget{"CNI-DN-0123456789abcdef01234"};
  auto encoded = ipt::EncodeNftRule(entry, net::Family::kV4);
  ASSERT_TRUE(encoded.ok()) << encoded.error().msg;
  std::vector<uint8_t> expressions = encoded->expressions;
  const auto key = [](int port) {
    return std::set<PortKey>{{net::Family::kV4, Protocol::kTcp, port}};
  };
  EXPECT_TRUE(RawEntryMayMatch(expressions, net::Family::kV4, key(9000)));
  EXPECT_TRUE(RawEntryMayMatch(expressions, net::Family::kV4, key(8080)));
  EXPECT_FALSE(RawEntryMayMatch(expressions, net::Family::kV4, key(9001)));
  EXPECT_FALSE(RawEntryMayMatch(expressions, net::Family::kV6, key(9000)));
  // Of a multiport rule the raw filter keeps exactly the ports the decoded one keeps (it reads
  // the match's ports, not bytes that happen to look like one).
  for (int port = 1; port < 65536; ++port) {
    EXPECT_EQ(RawEntryMayMatch(expressions, net::Family::kV4, key(port)),
              EntryRuleMayMatch(entry, net::Family::kV4, key(port)))
        << port;
  }
  // A rule without multiport is never dropped undecoded.
  entry.matches = {ipt::PortMatch{Protocol::kTcp, 9000}};
  auto single = ipt::EncodeNftRule(entry, net::Family::kV4);
  ASSERT_TRUE(single.ok());
  expressions = single->expressions;
  EXPECT_TRUE(RawEntryMayMatch(expressions, net::Family::kV4, key(1)));
}

TEST(InstalledMappingsParse, OurMapsReadOverNetlink) {
  EXPECT_FALSE(DnatMapShapeOf("owned"));
  EXPECT_FALSE(DnatMapShapeOf("n0123456789_hairpin_v4"));
  const auto any6 = DnatMapShapeOf("n0123456789_dnat_any_v6");
  ASSERT_TRUE(any6);
  EXPECT_EQ(any6->family, net::Family::kV6);
  EXPECT_FALSE(any6->with_host_ip);
  const auto ip4 = DnatMapShapeOf("n0123456789_dnat_ip_v4");
  ASSERT_TRUE(ip4);
  EXPECT_EQ(ip4->family, net::Family::kV4);
  EXPECT_TRUE(ip4->with_host_ip);

  // udp . 8080 -> 10.88.0.2 . 80, as the kernel holds it (fields padded to 4 bytes).
  EXPECT_EQ(DnatAnyKey(Protocol::kUdp, 8080),
            (std::vector<uint8_t>{17, 0, 0, 0, 0x1f, 0x90, 0, 0}));
  netfilter::SetElement any{.key = DnatAnyKey(Protocol::kUdp, 8080),
                            .data = {10, 88, 0, 2, 0, 80, 0, 0},
                            .comment = "ctr-1"};
  auto m = MappingOfMapElement(any, {net::Family::kV4, false});
  ASSERT_TRUE(m);
  EXPECT_EQ(m->layout, "nftables");
  EXPECT_EQ(m->protocol, Protocol::kUdp);
  EXPECT_EQ(m->host_port, 8080);
  EXPECT_FALSE(m->host_ip);
  EXPECT_EQ(m->target, "10.88.0.2:80");
  EXPECT_EQ(m->container_id, "ctr-1");

  // 192.0.2.1 . sctp . 9000 -> 10.88.0.3 . 9001
  netfilter::SetElement ip{.key = {192, 0, 2, 1, 132, 0, 0, 0, 0x23, 0x28, 0, 0},
                           .data = {10, 88, 0, 3, 0x23, 0x29, 0, 0}};
  m = MappingOfMapElement(ip, {net::Family::kV4, true});
  ASSERT_TRUE(m);
  EXPECT_EQ(m->host_ip->ToString(), "192.0.2.1");
  EXPECT_EQ(m->protocol, Protocol::kSctp);
  EXPECT_EQ(m->host_port, 9000);
  EXPECT_EQ(m->target, "10.88.0.3:9001");

  // Bytes of another layout are not read as a mapping.
  EXPECT_FALSE(MappingOfMapElement(any, {net::Family::kV6, false}));
  EXPECT_FALSE(MappingOfMapElement(ip, {net::Family::kV4, false}));
  netfilter::SetElement odd_protocol = any;
  odd_protocol.key[0] = 1;
  EXPECT_FALSE(MappingOfMapElement(odd_protocol, {net::Family::kV4, false}));
}

// The reference nftables backend's dnat rules as its versions wrote them (nft 1.0.6's encoding
// of `ip daddr 10.88.0.1 tcp dport 8080 dnat to 10.88.0.2:80`, of `udp dport 5353 dnat to
// [fd00:88::2]:53`, and of v1.6.0's `ip protocol tcp th dport 8043 dnat ip addr . port to
// 172.16.30.2 . 443`), read from their expressions.
TEST(InstalledMappingsParse, ReferenceRules) {
  namespace expr = netfilter::expr;
  const std::vector<netfilter::Expr> hostip = {
      expr::Payload{NFT_PAYLOAD_NETWORK_HEADER, 16, 4, NFT_REG_1},
      expr::Cmp{NFT_REG_1, NFT_CMP_EQ, {10, 88, 0, 1}},
      expr::Meta{NFT_META_L4PROTO, NFT_REG_1},
      expr::Cmp{NFT_REG_1, NFT_CMP_EQ, {6}},
      expr::Payload{NFT_PAYLOAD_TRANSPORT_HEADER, 2, 2, NFT_REG_1},
      expr::Cmp{NFT_REG_1, NFT_CMP_EQ, {0x1f, 0x90}},
      expr::Immediate{NFT_REG_1, {10, 88, 0, 2}},
      expr::Immediate{NFT_REG_2, {0, 80}},
      expr::Nat{NFT_NAT_DNAT, NFPROTO_IPV4, NFT_REG_1, NFT_REG_2, 2, NFT_REG_1, NFT_REG_2}};
  auto m = MappingOfReferenceRule(hostip, net::Family::kV4);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->layout, "nftables-reference");
  EXPECT_EQ(m->host_ip, Ip("10.88.0.1"));
  EXPECT_EQ(m->protocol, Protocol::kTcp);
  EXPECT_EQ(m->host_port, 8080);
  EXPECT_EQ(m->target, "10.88.0.2:80");

  const std::vector<netfilter::Expr> v6 = {
      expr::Meta{NFT_META_L4PROTO, NFT_REG_1},
      expr::Cmp{NFT_REG_1, NFT_CMP_EQ, {17}},
      expr::Payload{NFT_PAYLOAD_TRANSPORT_HEADER, 2, 2, NFT_REG_1},
      expr::Cmp{NFT_REG_1, NFT_CMP_EQ, {0x14, 0xe9}},
      expr::Immediate{NFT_REG_1, {0xfd, 0, 0, 0x88, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2}},
      expr::Immediate{NFT_REG_2, {0, 53}},
      expr::Nat{NFT_NAT_DNAT, NFPROTO_IPV6, NFT_REG_1, NFT_REG_2, 2, 0, 0}};
  m = MappingOfReferenceRule(v6, net::Family::kV6);
  ASSERT_TRUE(m);
  EXPECT_FALSE(m->host_ip);
  EXPECT_EQ(m->protocol, Protocol::kUdp);
  EXPECT_EQ(m->target, "[fd00:88::2]:53");

  const std::vector<netfilter::Expr> old = {
      expr::Payload{NFT_PAYLOAD_NETWORK_HEADER, 9, 1, NFT_REG_1},
      expr::Cmp{NFT_REG_1, NFT_CMP_EQ, {6}},
      expr::Payload{NFT_PAYLOAD_TRANSPORT_HEADER, 2, 2, NFT_REG_1},
      expr::Cmp{NFT_REG_1, NFT_CMP_EQ, {0x1f, 0x6b}},
      expr::Immediate{NFT_REG_1, {172, 16, 30, 2}},
      expr::Immediate{NFT_REG32_01, {0x01, 0xbb}},
      expr::Nat{NFT_NAT_DNAT, NFPROTO_IPV4, NFT_REG_1, NFT_REG32_01, 0, 0, 0}};
  m = MappingOfReferenceRule(old, net::Family::kV4);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->host_port, 8043);
  EXPECT_EQ(m->target, "172.16.30.2:443");

  // Its masquerade rules and anything without a dnat are not mappings.
  EXPECT_FALSE(MappingOfReferenceRule({expr::Masquerade{}}, net::Family::kV4));
  EXPECT_FALSE(MappingOfReferenceRule({hostip.begin(), hostip.begin() + 6}, net::Family::kV4));
}

}  // namespace
}  // namespace nodegate::portmap
