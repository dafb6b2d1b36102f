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
// xt matches and targets (nft_compat: iptables extensions inside nf_tables) are expression kinds
// like the others: their info is the extension's struct as the iptables extension lays it out.
// Callers that write thousands of rules write each expression in place with ExprWriter (the
// writer EncodeExpressions uses), and scan long dumps in place with ForEachExpression.
//
// Registers are the kernel's numbers: NFT_REG_VERDICT, NFT_REG_1..4 (16 bytes each) and
// NFT_REG32_00..15 (4 bytes each, the same storage); RegisterOfWord names a 32-bit word the way
// nft does.

// clang-format off
#include <linux/netfilter/nf_tables.h>
// clang-format on

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
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
// counter: bytes and packets so far (a new rule's are 0).
struct Counter {
  uint64_t bytes = 0, packets = 0;
  bool operator==(const Counter&) const = default;
};
// xt match (nft_compat): the extension `name` at `revision`, its info struct (XT_ALIGN'd; the
// kernel requires exactly that size).
struct Match {
  std::string name;
  uint32_t revision = 0;
  Bytes info;
  bool operator==(const Match&) const = default;
};
// xt target (nft_compat), as Match.
struct Target {
  std::string name;
  uint32_t revision = 0;
  Bytes info;
  bool operator==(const Target&) const = default;
};
// Anything else a dump holds (another writer's rule): its name only (encoded with no data).
struct Other {
  std::string name;
  bool operator==(const Other&) const = default;
};

}  // namespace expr

using Expr = std::variant<expr::Payload, expr::Meta, expr::MetaSet, expr::Cmp, expr::Range,
                          expr::Bitwise, expr::Byteorder, expr::Lookup, expr::Immediate,
                          expr::Verdict, expr::Fib, expr::Nat, expr::Masquerade, expr::Counter,
                          expr::Match, expr::Target, expr::Other>;

// The register nft names for the 32-bit word `word` of the data registers: a 16-byte register
// (NFT_REG_1..4) where one starts, else NFT_REG32_xx.
uint32_t RegisterOfWord(size_t word);
// The 32-bit word where register `reg` starts (NFT_REG_1 and NFT_REG32_00 are both word 0).
size_t WordOfRegister(uint32_t reg);

// Writes expressions, one NFTA_LIST_ELEM each, at the end of an AttrWriter (inside the caller's
// NFTA_RULE_EXPRESSIONS), with no value of its own: attribute order as libnftnl 1.2.4 writes
// each kind.
//
//   ExprWriter out(message);
//   out.Meta(NFT_META_L4PROTO, NFT_REG_1);
//   out.Cmp(NFT_REG_1, NFT_CMP_EQ, protocol_byte);
//   out.Counter();
//   out.Xt(ExprWriter::kTarget, "MASQUERADE", 0, info);
class ExprWriter {
 public:
  explicit ExprWriter(AttrWriter& w) : w_(w) {}

  void Payload(uint32_t dreg, uint32_t base, uint32_t offset, uint32_t len);
  void Meta(uint32_t key, uint32_t dreg);
  void MetaSet(uint32_t key, uint32_t sreg);
  void Cmp(uint32_t sreg, uint32_t op, ByteView data);
  void Range(uint32_t sreg, uint32_t op, ByteView from, ByteView to);
  // With `with_op` false, NFTA_BITWISE_OP is left out (the kernel then takes NFT_BITWISE_BOOL),
  // as iptables-nft writes it; nft writes it.
  void Bitwise(uint32_t sreg, uint32_t dreg, ByteView mask, ByteView xor_value,
               bool with_op = true);
  void Byteorder(uint32_t sreg, uint32_t dreg, uint32_t op, uint32_t len, uint32_t size);
  void Lookup(const expr::Lookup& e);
  void Immediate(uint32_t dreg, ByteView data);
  // A verdict; `chain` for NFT_JUMP/NFT_GOTO only ("" writes none).
  void Verdict(int32_t code, std::string_view chain);
  void Fib(uint32_t flags, uint32_t result, uint32_t dreg);
  void Nat(const expr::Nat& e);
  void Masquerade(uint32_t flags);
  void Counter(uint64_t bytes = 0, uint64_t packets = 0);
  enum XtKind { kMatch, kTarget };
  void Xt(XtKind kind, std::string_view name, uint32_t revision, ByteView info);
  // An expression of kind `name` with no data.
  void Named(std::string_view name);

 private:
  void Begin(std::string_view name);
  void End();
  void PutValue(uint16_t type, ByteView value);

  AttrWriter& w_;
  size_t elem_ = 0;
  size_t data_ = 0;
};

// The NFTA_RULE_EXPRESSIONS payload (a list of NFTA_LIST_ELEM).
Bytes EncodeExpressions(const std::vector<Expr>& exprs);
void AppendExpressions(AttrWriter& w, const std::vector<Expr>& exprs);

// A dumped rule's expressions; nullopt when the payload is malformed. Expressions of kinds
// not listed above, or carrying attributes these do not model, become expr::Other.
std::optional<std::vector<Expr>> DecodeExpressions(ByteView payload);

// Reading in place (for scans over every rule of a long chain: nothing is copied or decoded but
// what the caller reads). Calls `fn(name, data)` for each expression of a NFTA_RULE_EXPRESSIONS
// payload, in order, `data` being its NFTA_EXPR_DATA payload, until `fn` returns false. False
// when the payload is malformed.
template <typename F>
bool ForEachExpression(ByteView payload, F&& fn) {
  bool malformed = false;
  const bool ok = ForEachAttr(payload, [&](const Attr& elem) {
    if (elem.type != NFTA_LIST_ELEM) return true;
    std::string_view name;
    ByteView data;
    if (!ForEachAttr(elem.data, [&](const Attr& a) {
          if (a.type == NFTA_EXPR_NAME) name = a.View();
          if (a.type == NFTA_EXPR_DATA) data = a.data;
          return true;
        })) {
      malformed = true;
      return false;
    }
    return static_cast<bool>(fn(name, data));
  });
  return ok && !malformed;
}

// An xt match's or target's fields seen in its NFTA_EXPR_DATA, in place.
struct XtView {
  std::optional<std::string_view> name;
  std::optional<uint32_t> revision;
  std::optional<ByteView> info;
};
XtView ReadXt(ByteView data);

// The verdict an `immediate` expression's NFTA_EXPR_DATA sets; nullopt when it loads data into
// a register (or is malformed).
std::optional<expr::Verdict> ReadVerdict(ByteView data);

// One line per expression in `nft --debug=netlink` form ("  [ cmp eq reg 1 0x00000002 ]").
std::string ExpressionsText(const std::vector<Expr>& exprs);

}  // namespace nodegate::netfilter
