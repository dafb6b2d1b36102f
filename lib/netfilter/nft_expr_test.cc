// Expressions as values: encoding and decoding give back the same expressions, registers are
// named as nft names them, and the text is what `nft --debug=netlink` prints for the same
// rule (the expected lines below are nft 1.0.6's own output for the rules in the comments).
#include "lib/netfilter/nft_expr.h"

// clang-format off
#include <netinet/in.h>
// clang-format on
#include <gtest/gtest.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_nat.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nf_tables_compat.h>

#include <string>
#include <vector>

namespace nodegate::netfilter {
namespace {

TEST(NftExpr, RegistersAreNamedAsNftNamesThem) {
  EXPECT_EQ(RegisterOfWord(0), uint32_t{NFT_REG_1});
  EXPECT_EQ(RegisterOfWord(1), uint32_t{NFT_REG32_01});
  EXPECT_EQ(RegisterOfWord(2), uint32_t{NFT_REG32_02});
  EXPECT_EQ(RegisterOfWord(4), uint32_t{NFT_REG_2});
  EXPECT_EQ(RegisterOfWord(5), uint32_t{NFT_REG32_05});
  for (size_t word = 0; word < 16; ++word) EXPECT_EQ(WordOfRegister(RegisterOfWord(word)), word);
  EXPECT_EQ(WordOfRegister(NFT_REG32_00), 0u);
}

// `ip daddr . meta l4proto . th dport @m dnat ip to ...` and the other shapes the backend
// writes, in nft's words.
TEST(NftExpr, TextIsNftDebugText) {
  const std::vector<Expr> rule = {
      expr::Meta{NFT_META_NFPROTO, NFT_REG_1},
      expr::Cmp{NFT_REG_1, NFT_CMP_EQ, {NFPROTO_IPV4}},
      expr::Payload{NFT_PAYLOAD_NETWORK_HEADER, 16, 4, NFT_REG_1},
      expr::Meta{NFT_META_L4PROTO, NFT_REG32_01},
      expr::Payload{NFT_PAYLOAD_TRANSPORT_HEADER, 2, 2, NFT_REG32_02},
      expr::Lookup{NFT_REG_1, "nX_dnat_ip_v4", 0, NFT_REG_1, 0},
      expr::Nat{NFT_NAT_DNAT, NFPROTO_IPV4, NFT_REG_1, NFT_REG32_01, 0, 0, 0},
  };
  EXPECT_EQ(ExpressionsText(rule),
            "  [ meta load nfproto => reg 1 ]\n"
            "  [ cmp eq reg 1 0x00000002 ]\n"
            "  [ payload load 4b @ network header + 16 => reg 1 ]\n"
            "  [ meta load l4proto => reg 9 ]\n"
            "  [ payload load 2b @ transport header + 2 => reg 10 ]\n"
            "  [ lookup reg 1 set nX_dnat_ip_v4 dreg 1 ]\n"
            "  [ nat dnat ip addr_min reg 1 proto_min reg 9 ]\n");
  const std::vector<Expr> other = {
      expr::Fib{NFTA_FIB_F_DADDR, NFT_FIB_RESULT_ADDRTYPE, NFT_REG_1},
      expr::Verdict{NFT_JUMP, "nX_hostports"},
      expr::Meta{NFT_META_MARK, NFT_REG_1},
      expr::Bitwise{NFT_REG_1, NFT_REG_1, {0xff, 0xdf, 0xff, 0xff}, {0x00, 0x20, 0x00, 0x00}},
      expr::MetaSet{NFT_META_MARK, NFT_REG_1},
      expr::Byteorder{NFT_REG32_01, NFT_REG32_01, NFT_BYTEORDER_HTON, 1, 2},
      expr::Lookup{NFT_REG_1, "__set%d", 1, std::nullopt, NFT_LOOKUP_F_INV},
      expr::Range{NFT_REG_1, NFT_RANGE_NEQ, {0x03, 0xe8}, {0x07, 0xd0}},
      expr::Masquerade{},
  };
  EXPECT_EQ(ExpressionsText(other),
            "  [ fib daddr type => reg 1 ]\n"
            "  [ immediate reg 0 jump -> nX_hostports ]\n"
            "  [ meta load mark => reg 1 ]\n"
            "  [ bitwise reg 1 = ( reg 1 & 0xffffdfff ) ^ 0x00002000 ]\n"
            "  [ meta set mark with reg 1 ]\n"
            "  [ byteorder reg 9 = hton(reg 9, 2, 1) ]\n"
            "  [ lookup reg 1 set __set%d 0x1 ]\n"
            "  [ range neq reg 1 0x0000e803 0x0000d007 ]\n"
            "  [ masq ]\n");
}

TEST(NftExpr, EncodingDecodesBack) {
  const std::vector<Expr> rule = {
      expr::Payload{NFT_PAYLOAD_NETWORK_HEADER, 12, 4, NFT_REG_1},
      expr::Cmp{NFT_REG_1, NFT_CMP_NEQ, {10, 0, 0, 1}},
      expr::Range{NFT_REG_1, NFT_RANGE_EQ, {0, 80}, {0, 90}},
      expr::Bitwise{NFT_REG_1, NFT_REG_1, {0xff, 0, 0, 0}, {0, 0, 0, 0}},
      expr::Byteorder{NFT_REG_1, NFT_REG_1, NFT_BYTEORDER_HTON, 1, 2},
      expr::Lookup{NFT_REG_1, "m", 0, NFT_REG_1, 0},
      expr::Immediate{NFT_REG_2, {0, 80}},
      expr::Verdict{NF_ACCEPT, ""},
      expr::Fib{NFTA_FIB_F_DADDR, NFT_FIB_RESULT_ADDRTYPE, NFT_REG_1},
      expr::Nat{NFT_NAT_DNAT, NFPROTO_IPV6, NFT_REG_1, NFT_REG_2, NF_NAT_RANGE_PROTO_SPECIFIED, 0,
                0},
      expr::Masquerade{},
      expr::MetaSet{NFT_META_MARK, NFT_REG_1},
      expr::Counter{1500, 3},
      expr::Match{"comment", 0, Bytes(256, 0)},
      expr::Target{"MARK", 2, {0, 0x20, 0, 0, 0, 0x20, 0, 0}},
  };
  const auto back = DecodeExpressions(EncodeExpressions(rule));
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, rule);
}

TEST(NftExpr, UnknownExpressionsAndMalformedPayloads) {
  // An expression kind the model does not have decodes as its name.
  AttrWriter w;
  const size_t elem = w.BeginNested(NFTA_LIST_ELEM);
  w.PutString(NFTA_EXPR_NAME, "quota");
  const size_t data = w.BeginNested(NFTA_EXPR_DATA);
  w.PutBe64(NFTA_QUOTA_BYTES, 0);
  w.EndNested(data);
  w.EndNested(elem);
  const auto decoded = DecodeExpressions(w.bytes());
  ASSERT_TRUE(decoded);
  ASSERT_EQ(decoded->size(), 1u);
  EXPECT_EQ(std::get<expr::Other>(decoded->front()).name, "quota");
  // A length that runs past the end is refused.
  std::vector<uint8_t> bytes = w.Take();
  bytes[0] = 0xff;
  EXPECT_FALSE(DecodeExpressions(bytes));
}

// What the model does not hold decodes as the kind's name, so a reader that checks kinds
// refuses it: a payload write, an xt match without its info.
TEST(NftExpr, UnmodelledShapesAreOther) {
  AttrWriter w;
  ExprWriter out(w);
  out.Payload(NFT_REG_1, NFT_PAYLOAD_NETWORK_HEADER, 12, 4);
  {
    const size_t elem = w.BeginNested(NFTA_LIST_ELEM);
    w.PutString(NFTA_EXPR_NAME, "payload");
    const size_t data = w.BeginNested(NFTA_EXPR_DATA);
    w.PutBe32(NFTA_PAYLOAD_SREG, NFT_REG_1);
    w.PutBe32(NFTA_PAYLOAD_BASE, NFT_PAYLOAD_NETWORK_HEADER);
    w.EndNested(data);
    w.EndNested(elem);
  }
  {
    const size_t elem = w.BeginNested(NFTA_LIST_ELEM);
    w.PutString(NFTA_EXPR_NAME, "match");
    const size_t data = w.BeginNested(NFTA_EXPR_DATA);
    w.PutString(NFTA_MATCH_NAME, "comment");
    w.PutBe32(NFTA_MATCH_REV, 0);
    w.EndNested(data);
    w.EndNested(elem);
  }
  const auto decoded = DecodeExpressions(w.bytes());
  ASSERT_TRUE(decoded);
  ASSERT_EQ(decoded->size(), 3u);
  EXPECT_EQ((*decoded)[0], Expr(expr::Payload{NFT_PAYLOAD_NETWORK_HEADER, 12, 4, NFT_REG_1}));
  EXPECT_EQ((*decoded)[1], Expr(expr::Other{"payload"}));
  EXPECT_EQ((*decoded)[2], Expr(expr::Other{"match"}));
}

// xt expressions and counters in `nft --debug=netlink` form (libnftnl's words).
TEST(NftExpr, XtAndCounterText) {
  const std::vector<Expr> rule = {
      expr::Match{"multiport", 1, Bytes(48, 0)},
      expr::Counter{},
      expr::Target{"MASQUERADE", 0, Bytes(24, 0)},
  };
  EXPECT_EQ(ExpressionsText(rule),
            "  [ match name multiport rev 1 ]\n"
            "  [ counter pkts 0 bytes 0 ]\n"
            "  [ target name MASQUERADE rev 0 ]\n");
}

// The writer's bitwise as iptables-nft writes it (no NFTA_BITWISE_OP) reads back as the same
// bitwise; the in-place readers see what the decoder sees.
TEST(NftExpr, InPlaceWriterAndReaders) {
  const std::vector<uint8_t> mask = {0xff, 0xff, 0, 0}, zeros(4, 0), info = {1, 2, 3, 4};
  AttrWriter with_op, without_op;
  ExprWriter(with_op).Bitwise(NFT_REG_1, NFT_REG_1, mask, zeros);
  ExprWriter(without_op).Bitwise(NFT_REG_1, NFT_REG_1, mask, zeros, /*with_op=*/false);
  EXPECT_EQ(without_op.bytes().size() + 8, with_op.bytes().size());
  EXPECT_EQ(DecodeExpressions(without_op.bytes()), DecodeExpressions(with_op.bytes()));

  AttrWriter w;
  ExprWriter out(w);
  out.Xt(ExprWriter::kMatch, "addrtype", 1, info);
  out.Counter();
  out.Verdict(NFT_JUMP, "CNI-HOSTPORT-DNAT");
  std::vector<std::string> names;
  std::optional<XtView> xt;
  std::optional<expr::Verdict> verdict;
  EXPECT_TRUE(ForEachExpression(w.bytes(), [&](std::string_view name, ByteView data) {
    names.emplace_back(name);
    if (name == "match") xt = ReadXt(data);
    if (name == "immediate") verdict = ReadVerdict(data);
    return true;
  }));
  EXPECT_EQ(names, (std::vector<std::string>{"match", "counter", "immediate"}));
  ASSERT_TRUE(xt && xt->name && xt->revision && xt->info);
  EXPECT_EQ(*xt->name, "addrtype");
  EXPECT_EQ(*xt->revision, 1u);
  EXPECT_EQ(std::vector<uint8_t>(xt->info->begin(), xt->info->end()), info);
  EXPECT_EQ(verdict, (expr::Verdict{NFT_JUMP, "CNI-HOSTPORT-DNAT"}));
  EXPECT_EQ(DecodeExpressions(w.bytes()),
            (std::vector<Expr>{expr::Match{"addrtype", 1, info}, expr::Counter{},
                               expr::Verdict{NFT_JUMP, "CNI-HOSTPORT-DNAT"}}));
}

}  // namespace
}  // namespace nodegate::netfilter
