#pragma once
// nf_tables rule expressions as values: built by callers as data, encoded into a NEWRULE's
// NFTA_RULE_EXPRESSIONS (attribute order as libnftnl 1.2 writes them, so a rule reads back from
// the kernel the way nft's own does), decoded from a GETRULE dump, and printed the way
// `nft --debug=netlink` prints them (tests compare that text with what nft writes for the same
// rule text).
//
//   std::vector<Expr> rule = {expr::Meta{NFT_META_NFPROTO, 1}, expr::Cmp{1, NFT_CMP_EQ, {2}},
//                             expr::Verdict{NFT_JUMP, "hostports"}};
//   std::vector<uint8_t> payload = EncodeExpressions(rule);
//   std::optional<std::vector<Expr>> back = DecodeExpressions(payload);  // == rule
//
// Registers are the kernel's numbers: NFT_REG_VERDICT, NFT_REG_1..4 (16 bytes each) and
// NFT_REG32_00..15 (4 bytes each, the same storage); RegisterOfWord names a 32-bit word the way
// nft does.

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "lib/netfilter/nlattr.h"

namespace nodegate::netfilter {

using Bytes = std::vector<uint8_t>;

namespace expr {

// payload load: `len` bytes at `offset` of header `base` (NFT_PAYLOAD_*) into `dreg`.
struct Payload {
  uint32_t base = 0, offset = 0, len = 0, dreg = 0;
  bool operator==(const Payload&) const = default;
};
// meta load (NFT_META_* `key` into `dreg`).
struct Meta {
  uint32_t key = 0, dreg = 0;
  bool operator==(const Meta&) const = default;
};
// meta set (`key` from `sreg`).
struct MetaSet {
  uint32_t key = 0, sreg = 0;
  bool operator==(const MetaSet&) const = default;
};
// cmp: `sreg` `op` (NFT_CMP_*) `data`, compared over data.size() bytes.
struct Cmp {
  uint32_t sreg = 0, op = 0;
  Bytes data;
  bool operator==(const Cmp&) const = default;
};
// range: `sreg` within [from, to] (NFT_RANGE_EQ) or not (NFT_RANGE_NEQ).
struct Range {
  uint32_t sreg = 0, op = 0;
  Bytes from, to;
  bool operator==(const Range&) const = default;
};
// bitwise: dreg = (sreg & mask) ^ xor over mask.size() bytes.
struct Bitwise {
  uint32_t sreg = 0, dreg = 0;
  Bytes mask, xor_value;
  bool operator==(const Bitwise&) const = default;
};
// byteorder: `op` (NFT_BYTEORDER_*) of `len` bytes in units of `size`.
struct Byteorder {
  uint32_t sreg = 0, dreg = 0, op = 0, len = 0, size = 0;
  bool operator==(const Byteorder&) const = default;
};
// lookup of `sreg` in set `set` (its batch ID `set_id` for sets created in the same batch, 0
// otherwise); with `dreg`, a map's data goes there. flags: NFT_LOOKUP_F_INV.
struct Lookup {
  uint32_t sreg = 0;
  std::string set;
  uint32_t set_id = 0;
  std::optional<uint32_t> dreg;
  uint32_t flags = 0;
  bool operator==(const Lookup&) const = default;
};
// immediate data into `dreg`.
struct Immediate {
  uint32_t dreg = 0;
  Bytes data;
  bool operator==(const Immediate&) const = default;
};
// immediate verdict (NFT_JUMP, NFT_GOTO with `chain`; NF_ACCEPT...).
struct Verdict {
  int32_t code = 0;
  std::string chain;
  bool operator==(const Verdict&) const = default;
};
// fib: NFTA_FIB_FLAGS (NFTA_FIB_F_*), NFTA_FIB_RESULT (NFT_FIB_RESULT_*) into `dreg`.
struct Fib {
  uint32_t flags = 0, result = 0, dreg = 0;
  bool operator==(const Fib&) const = default;
};
// nat: NFT_NAT_SNAT/DNAT for NFPROTO_IPV4/IPV6 from registers (0: not given). The kernel
// dumps the max registers equal to the min ones when only those were given.
struct Nat {
  uint32_t type = 0, family = 0, reg_addr_min = 0, reg_proto_min = 0, flags = 0;
  uint32_t reg_addr_max = 0, reg_proto_max = 0;
  bool operator==(const Nat&) const = default;
};
struct Masquerade {
  uint32_t flags = 0;
  bool operator==(const Masquerade&) const = default;
};
// Anything else a dump holds (another writer's rule): its name only (encoded with no data).
struct Other {
  std::string name;
  bool operator==(const Other&) const = default;
};

}  // namespace expr

using Expr = std::variant<expr::Payload, expr::Meta, expr::MetaSet, expr::Cmp, expr::Range,
                          expr::Bitwise, expr::Byteorder, expr::Lookup, expr::Immediate,
                          expr::Verdict, expr::Fib, expr::Nat, expr::Masquerade, expr::Other>;

// The register nft names for the 32-bit word `word` of the data registers: a 16-byte register
// (NFT_REG_1..4) where one starts, else NFT_REG32_xx.
uint32_t RegisterOfWord(size_t word);
// The 32-bit word where register `reg` starts (NFT_REG_1 and NFT_REG32_00 are both word 0).
size_t WordOfRegister(uint32_t reg);

// The NFTA_RULE_EXPRESSIONS payload (a list of NFTA_LIST_ELEM).
Bytes EncodeExpressions(const std::vector<Expr>& exprs);
void AppendExpressions(AttrWriter& w, const std::vector<Expr>& exprs);

// A dumped rule's expressions; nullopt when the payload is malformed. Expressions of kinds
// not listed above, or carrying attributes these do not model, become expr::Other.
std::optional<std::vector<Expr>> DecodeExpressions(ByteView payload);

// One line per expression in `nft --debug=netlink` form ("  [ cmp eq reg 1 0x00000002 ]").
std::string ExpressionsText(const std::vector<Expr>& exprs);

}  // namespace nodegate::netfilter
