#include "lib/netfilter/nft_expr.h"

// clang-format off
#include <netinet/in.h>  // before the kernel headers, which then skip their own copies
// clang-format on
#include <linux/netfilter.h>
#include <linux/netfilter/nf_nat.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nf_tables_compat.h>

#include <cstdio>
#include <cstring>
#include <type_traits>

namespace nodegate::netfilter {
namespace {

constexpr size_t kWordsPerRegister = NFT_REG_SIZE / NFT_REG32_SIZE;

// ---- encoding: each value through ExprWriter

class Writer {
 public:
  explicit Writer(AttrWriter& w) : out_(w) {}

  void operator()(const expr::Payload& e) { out_.Payload(e.dreg, e.base, e.offset, e.len); }
  void operator()(const expr::Meta& e) { out_.Meta(e.key, e.dreg); }
  void operator()(const expr::MetaSet& e) { out_.MetaSet(e.key, e.sreg); }
  void operator()(const expr::Cmp& e) { out_.Cmp(e.sreg, e.op, e.data); }
  void operator()(const expr::Range& e) { out_.Range(e.sreg, e.op, e.from, e.to); }
  void operator()(const expr::Bitwise& e) { out_.Bitwise(e.sreg, e.dreg, e.mask, e.xor_value); }
  void operator()(const expr::Byteorder& e) { out_.Byteorder(e.sreg, e.dreg, e.op, e.len, e.size); }
  void operator()(const expr::Lookup& e) { out_.Lookup(e); }
  void operator()(const expr::Immediate& e) { out_.Immediate(e.dreg, e.data); }
  void operator()(const expr::Verdict& e) { out_.Verdict(e.code, e.chain); }
  void operator()(const expr::Fib& e) { out_.Fib(e.flags, e.result, e.dreg); }
  void operator()(const expr::Nat& e) { out_.Nat(e); }
  void operator()(const expr::Masquerade& e) { out_.Masquerade(e.flags); }
  void operator()(const expr::Counter& e) { out_.Counter(e.bytes, e.packets); }
  void operator()(const expr::Match& e) { out_.Xt(ExprWriter::kMatch, e.name, e.revision, e.info); }
  void operator()(const expr::Target& e) {
    out_.Xt(ExprWriter::kTarget, e.name, e.revision, e.info);
  }
  void operator()(const expr::Other& e) { out_.Named(e.name); }

 private:
  ExprWriter out_;
};

// ---- decoding

Bytes ValueOf(ByteView nested) {
  Bytes out;
  ForEachAttr(nested, [&](const Attr& a) {
    if (a.type == NFTA_DATA_VALUE) out.assign(a.data.begin(), a.data.end());
    return true;
  });
  return out;
}

Expr DecodeOne(std::string_view name, ByteView data) {
  const auto attrs = ParseAttrs(data);
  if (!attrs) return expr::Other{std::string(name)};
  const auto be32 = [&](uint16_t type) {
    const Attr* a = FindAttr(*attrs, type);
    return a ? a->Be32() : 0u;
  };
  const auto value = [&](uint16_t type) {
    const Attr* a = FindAttr(*attrs, type);
    return a ? ValueOf(a->data) : Bytes();
  };
  if (name == "payload") {
    // A payload write (NFTA_PAYLOAD_SREG) is not modelled.
    if (FindAttr(*attrs, NFTA_PAYLOAD_SREG) != nullptr) return expr::Other{std::string(name)};
    return expr::Payload{be32(NFTA_PAYLOAD_BASE), be32(NFTA_PAYLOAD_OFFSET), be32(NFTA_PAYLOAD_LEN),
                         be32(NFTA_PAYLOAD_DREG)};
  }
  if (name == "meta") {
    if (FindAttr(*attrs, NFTA_META_SREG) != nullptr) {
      return expr::MetaSet{be32(NFTA_META_KEY), be32(NFTA_META_SREG)};
    }
    return expr::Meta{be32(NFTA_META_KEY), be32(NFTA_META_DREG)};
  }
  if (name == "cmp") return expr::Cmp{be32(NFTA_CMP_SREG), be32(NFTA_CMP_OP), value(NFTA_CMP_DATA)};
  if (name == "range") {
    return expr::Range{be32(NFTA_RANGE_SREG), be32(NFTA_RANGE_OP), value(NFTA_RANGE_FROM_DATA),
                       value(NFTA_RANGE_TO_DATA)};
  }
  if (name == "bitwise") {
    if (be32(NFTA_BITWISE_OP) != NFT_BITWISE_BOOL) return expr::Other{std::string(name)};
    return expr::Bitwise{be32(NFTA_BITWISE_SREG), be32(NFTA_BITWISE_DREG), value(NFTA_BITWISE_MASK),
                         value(NFTA_BITWISE_XOR)};
  }
  if (name == "byteorder") {
    return expr::Byteorder{be32(NFTA_BYTEORDER_SREG), be32(NFTA_BYTEORDER_DREG),
                           be32(NFTA_BYTEORDER_OP), be32(NFTA_BYTEORDER_LEN),
                           be32(NFTA_BYTEORDER_SIZE)};
  }
  if (name == "lookup") {
    expr::Lookup e{be32(NFTA_LOOKUP_SREG), "", be32(NFTA_LOOKUP_SET_ID), std::nullopt,
                   be32(NFTA_LOOKUP_FLAGS)};
    if (const Attr* set = FindAttr(*attrs, NFTA_LOOKUP_SET)) e.set = set->String();
    if (FindAttr(*attrs, NFTA_LOOKUP_DREG) != nullptr) e.dreg = be32(NFTA_LOOKUP_DREG);
    return e;
  }
  if (name == "immediate") {
    const Attr* data_attr = FindAttr(*attrs, NFTA_IMMEDIATE_DATA);
    if (data_attr == nullptr) return expr::Other{std::string(name)};
    if (std::optional<expr::Verdict> verdict = ReadVerdict(data)) return *std::move(verdict);
    return expr::Immediate{be32(NFTA_IMMEDIATE_DREG), ValueOf(data_attr->data)};
  }
  if (name == "fib")
    return expr::Fib{be32(NFTA_FIB_FLAGS), be32(NFTA_FIB_RESULT), be32(NFTA_FIB_DREG)};
  if (name == "nat") {
    return expr::Nat{be32(NFTA_NAT_TYPE),         be32(NFTA_NAT_FAMILY),
                     be32(NFTA_NAT_REG_ADDR_MIN), be32(NFTA_NAT_REG_PROTO_MIN),
                     be32(NFTA_NAT_FLAGS),        be32(NFTA_NAT_REG_ADDR_MAX),
                     be32(NFTA_NAT_REG_PROTO_MAX)};
  }
  if (name == "masq") return expr::Masquerade{be32(NFTA_MASQ_FLAGS)};
  if (name == "counter") {
    const auto be64 = [&](uint16_t type) {
      const Attr* a = FindAttr(*attrs, type);
      return a ? a->Be64() : uint64_t{0};
    };
    return expr::Counter{be64(NFTA_COUNTER_BYTES), be64(NFTA_COUNTER_PACKETS)};
  }
  if (name == "match" || name == "target") {
    const XtView xt = ReadXt(data);
    if (!xt.name || !xt.revision || !xt.info) return expr::Other{std::string(name)};
    Bytes info(xt.info->begin(), xt.info->end());
    if (name == "match") return expr::Match{std::string(*xt.name), *xt.revision, std::move(info)};
    return expr::Target{std::string(*xt.name), *xt.revision, std::move(info)};
  }
  return expr::Other{std::string(name)};
}

// ---- text (libnftnl's snprintf of each expression)

std::string Words(const Bytes& data) {
  // libnftnl prints each 32-bit word of the (zero-padded) value in host order.
  std::string out;
  for (size_t at = 0; at < data.size(); at += 4) {
    uint32_t word = 0;
    std::memcpy(&word, data.data() + at, std::min<size_t>(4, data.size() - at));
    char buf[16];
    std::snprintf(buf, sizeof(buf), "0x%.8x ", word);
    out += buf;
  }
  return out;
}

const char* BaseName(uint32_t base) {
  switch (base) {
    case NFT_PAYLOAD_LL_HEADER:
      return "link";
    case NFT_PAYLOAD_NETWORK_HEADER:
      return "network";
    case NFT_PAYLOAD_TRANSPORT_HEADER:
      return "transport";
    default:
      return "unknown";
  }
}

const char* MetaKeyName(uint32_t key) {
  switch (key) {
    case NFT_META_LEN:
      return "len";
    case NFT_META_PROTOCOL:
      return "protocol";
    case NFT_META_PRIORITY:
      return "priority";
    case NFT_META_MARK:
      return "mark";
    case NFT_META_IIF:
      return "iif";
    case NFT_META_OIF:
      return "oif";
    case NFT_META_IIFNAME:
      return "iifname";
    case NFT_META_OIFNAME:
      return "oifname";
    case NFT_META_NFPROTO:
      return "nfproto";
    case NFT_META_L4PROTO:
      return "l4proto";
    default:
      return "unknown";
  }
}

const char* CmpOpName(uint32_t op) {
  switch (op) {
    case NFT_CMP_EQ:
      return "eq";
    case NFT_CMP_NEQ:
      return "neq";
    case NFT_CMP_LT:
      return "lt";
    case NFT_CMP_LTE:
      return "lte";
    case NFT_CMP_GT:
      return "gt";
    case NFT_CMP_GTE:
      return "gte";
    default:
      return "unknown";
  }
}

std::string VerdictName(int32_t code) {
  switch (code) {
    case NF_ACCEPT:
      return "accept";
    case NF_DROP:
      return "drop";
    case NFT_JUMP:
      return "jump";
    case NFT_GOTO:
      return "goto";
    case NFT_RETURN:
      return "return";
    case NFT_CONTINUE:
      return "continue";
    default:
      return "unknown";
  }
}

struct Printer {
  std::string operator()(const expr::Payload& e) const {
    return "payload load " + std::to_string(e.len) + "b @ " + BaseName(e.base) + " header + " +
           std::to_string(e.offset) + " => reg " + std::to_string(e.dreg) + " ";
  }
  std::string operator()(const expr::Meta& e) const {
    return std::string("meta load ") + MetaKeyName(e.key) + " => reg " + std::to_string(e.dreg) +
           " ";
  }
  std::string operator()(const expr::MetaSet& e) const {
    return std::string("meta set ") + MetaKeyName(e.key) + " with reg " + std::to_string(e.sreg) +
           " ";
  }
  std::string operator()(const expr::Cmp& e) const {
    return std::string("cmp ") + CmpOpName(e.op) + " reg " + std::to_string(e.sreg) + " " +
           Words(e.data);
  }
  std::string operator()(const expr::Range& e) const {
    return std::string("range ") + (e.op == NFT_RANGE_EQ ? "eq" : "neq") + " reg " +
           std::to_string(e.sreg) + " " + Words(e.from) + Words(e.to);
  }
  std::string operator()(const expr::Bitwise& e) const {
    return "bitwise reg " + std::to_string(e.dreg) + " = ( reg " + std::to_string(e.sreg) + " & " +
           Words(e.mask) + ") ^ " + Words(e.xor_value);
  }
  std::string operator()(const expr::Byteorder& e) const {
    const char* op = e.op == NFT_BYTEORDER_HTON ? "hton" : "ntoh";
    return "byteorder reg " + std::to_string(e.dreg) + " = " + op + "(reg " +
           std::to_string(e.sreg) + ", " + std::to_string(e.size) + ", " + std::to_string(e.len) +
           ") ";
  }
  std::string operator()(const expr::Lookup& e) const {
    std::string out = "lookup reg " + std::to_string(e.sreg) + " set " + e.set + " ";
    if (e.dreg) out += "dreg " + std::to_string(*e.dreg) + " ";
    if (e.flags != 0) {
      char buf[16];
      std::snprintf(buf, sizeof(buf), "0x%x ", e.flags);
      out += buf;
    }
    return out;
  }
  std::string operator()(const expr::Immediate& e) const {
    return "immediate reg " + std::to_string(e.dreg) + " " + Words(e.data);
  }
  std::string operator()(const expr::Verdict& e) const {
    std::string out = "immediate reg 0 " + VerdictName(e.code) + " ";
    if (!e.chain.empty()) out += "-> " + e.chain + " ";
    return out;
  }
  std::string operator()(const expr::Fib& e) const {
    std::string out = "fib ";
    if (e.flags & NFTA_FIB_F_SADDR) out += "saddr ";
    if (e.flags & NFTA_FIB_F_DADDR) out += "daddr ";
    if (e.flags & NFTA_FIB_F_MARK) out += ". mark ";
    if (e.flags & NFTA_FIB_F_IIF) out += ". iif ";
    if (e.flags & NFTA_FIB_F_OIF) out += ". oif ";
    out.pop_back();
    switch (e.result) {
      case NFT_FIB_RESULT_OIF:
        out += " oif";
        break;
      case NFT_FIB_RESULT_OIFNAME:
        out += " oifname";
        break;
      case NFT_FIB_RESULT_ADDRTYPE:
        out += " type";
        break;
      default:
        out += " unknown";
    }
    return out + " => reg " + std::to_string(e.dreg) + " ";
  }
  std::string operator()(const expr::Nat& e) const {
    std::string out = std::string("nat ") + (e.type == NFT_NAT_SNAT ? "snat" : "dnat") + " " +
                      (e.family == NFPROTO_IPV4   ? "ip"
                       : e.family == NFPROTO_IPV6 ? "ip6"
                                                  : "inet") +
                      " ";
    if (e.reg_addr_min != 0) out += "addr_min reg " + std::to_string(e.reg_addr_min) + " ";
    if (e.reg_addr_max != 0) out += "addr_max reg " + std::to_string(e.reg_addr_max) + " ";
    if (e.reg_proto_min != 0) out += "proto_min reg " + std::to_string(e.reg_proto_min) + " ";
    if (e.reg_proto_max != 0) out += "proto_max reg " + std::to_string(e.reg_proto_max) + " ";
    if (e.flags != 0) {
      char buf[24];
      std::snprintf(buf, sizeof(buf), "flags 0x%x ", e.flags);
      out += buf;
    }
    return out;
  }
  std::string operator()(const expr::Masquerade& e) const {
    if (e.flags == 0) return "masq ";
    char buf[24];
    std::snprintf(buf, sizeof(buf), "masq flags 0x%x ", e.flags);
    return buf;
  }
  std::string operator()(const expr::Counter& e) const {
    return "counter pkts " + std::to_string(e.packets) + " bytes " + std::to_string(e.bytes) + " ";
  }
  std::string operator()(const expr::Match& e) const {
    return "match name " + e.name + " rev " + std::to_string(e.revision) + " ";
  }
  std::string operator()(const expr::Target& e) const {
    return "target name " + e.name + " rev " + std::to_string(e.revision) + " ";
  }
  std::string operator()(const expr::Other& e) const { return e.name + " "; }
};

}  // namespace

// ---- ExprWriter (attribute order as libnftnl 1.2.4 writes each expression)

void ExprWriter::Begin(std::string_view name) {
  elem_ = w_.BeginNested(NFTA_LIST_ELEM);
  w_.PutString(NFTA_EXPR_NAME, name);
  data_ = w_.BeginNested(NFTA_EXPR_DATA);
}

void ExprWriter::End() {
  w_.EndNested(data_);
  w_.EndNested(elem_);
}

void ExprWriter::PutValue(uint16_t type, ByteView value) {
  const size_t nest = w_.BeginNested(type);
  w_.Put(NFTA_DATA_VALUE, value);
  w_.EndNested(nest);
}

void ExprWriter::Payload(uint32_t dreg, uint32_t base, uint32_t offset, uint32_t len) {
  Begin("payload");
  w_.PutBe32(NFTA_PAYLOAD_DREG, dreg);
  w_.PutBe32(NFTA_PAYLOAD_BASE, base);
  w_.PutBe32(NFTA_PAYLOAD_OFFSET, offset);
  w_.PutBe32(NFTA_PAYLOAD_LEN, len);
  End();
}

void ExprWriter::Meta(uint32_t key, uint32_t dreg) {
  Begin("meta");
  w_.PutBe32(NFTA_META_KEY, key);
  w_.PutBe32(NFTA_META_DREG, dreg);
  End();
}

void ExprWriter::MetaSet(uint32_t key, uint32_t sreg) {
  Begin("meta");
  w_.PutBe32(NFTA_META_KEY, key);
  w_.PutBe32(NFTA_META_SREG, sreg);
  End();
}

void ExprWriter::Cmp(uint32_t sreg, uint32_t op, ByteView data) {
  Begin("cmp");
  w_.PutBe32(NFTA_CMP_SREG, sreg);
  w_.PutBe32(NFTA_CMP_OP, op);
  PutValue(NFTA_CMP_DATA, data);
  End();
}

void ExprWriter::Range(uint32_t sreg, uint32_t op, ByteView from, ByteView to) {
  Begin("range");
  w_.PutBe32(NFTA_RANGE_SREG, sreg);
  w_.PutBe32(NFTA_RANGE_OP, op);
  PutValue(NFTA_RANGE_FROM_DATA, from);
  PutValue(NFTA_RANGE_TO_DATA, to);
  End();
}

void ExprWriter::Bitwise(uint32_t sreg, uint32_t dreg, ByteView mask, ByteView xor_value,
                         bool with_op) {
  Begin("bitwise");
  w_.PutBe32(NFTA_BITWISE_SREG, sreg);
  w_.PutBe32(NFTA_BITWISE_DREG, dreg);
  if (with_op) w_.PutBe32(NFTA_BITWISE_OP, NFT_BITWISE_BOOL);
  w_.PutBe32(NFTA_BITWISE_LEN, static_cast<uint32_t>(mask.size()));
  PutValue(NFTA_BITWISE_MASK, mask);
  PutValue(NFTA_BITWISE_XOR, xor_value);
  End();
}

void ExprWriter::Byteorder(uint32_t sreg, uint32_t dreg, uint32_t op, uint32_t len, uint32_t size) {
  Begin("byteorder");
  w_.PutBe32(NFTA_BYTEORDER_SREG, sreg);
  w_.PutBe32(NFTA_BYTEORDER_DREG, dreg);
  w_.PutBe32(NFTA_BYTEORDER_OP, op);
  w_.PutBe32(NFTA_BYTEORDER_LEN, len);
  w_.PutBe32(NFTA_BYTEORDER_SIZE, size);
  End();
}

void ExprWriter::Lookup(const expr::Lookup& e) {
  Begin("lookup");
  w_.PutBe32(NFTA_LOOKUP_SREG, e.sreg);
  if (e.dreg) w_.PutBe32(NFTA_LOOKUP_DREG, *e.dreg);
  w_.PutString(NFTA_LOOKUP_SET, e.set);
  if (e.set_id != 0) w_.PutBe32(NFTA_LOOKUP_SET_ID, e.set_id);
  if (e.flags != 0) w_.PutBe32(NFTA_LOOKUP_FLAGS, e.flags);
  End();
}

void ExprWriter::Immediate(uint32_t dreg, ByteView data) {
  Begin("immediate");
  w_.PutBe32(NFTA_IMMEDIATE_DREG, dreg);
  PutValue(NFTA_IMMEDIATE_DATA, data);
  End();
}

void ExprWriter::Verdict(int32_t code, std::string_view chain) {
  Begin("immediate");
  w_.PutBe32(NFTA_IMMEDIATE_DREG, NFT_REG_VERDICT);
  const size_t data = w_.BeginNested(NFTA_IMMEDIATE_DATA);
  const size_t verdict = w_.BeginNested(NFTA_DATA_VERDICT);
  w_.PutBe32(NFTA_VERDICT_CODE, static_cast<uint32_t>(code));
  if (!chain.empty()) w_.PutString(NFTA_VERDICT_CHAIN, chain);
  w_.EndNested(verdict);
  w_.EndNested(data);
  End();
}

void ExprWriter::Fib(uint32_t flags, uint32_t result, uint32_t dreg) {
  Begin("fib");
  w_.PutBe32(NFTA_FIB_FLAGS, flags);
  w_.PutBe32(NFTA_FIB_RESULT, result);
  w_.PutBe32(NFTA_FIB_DREG, dreg);
  End();
}

void ExprWriter::Nat(const expr::Nat& e) {
  Begin("nat");
  w_.PutBe32(NFTA_NAT_TYPE, e.type);
  w_.PutBe32(NFTA_NAT_FAMILY, e.family);
  if (e.reg_addr_min != 0) w_.PutBe32(NFTA_NAT_REG_ADDR_MIN, e.reg_addr_min);
  if (e.reg_addr_max != 0) w_.PutBe32(NFTA_NAT_REG_ADDR_MAX, e.reg_addr_max);
  if (e.reg_proto_min != 0) w_.PutBe32(NFTA_NAT_REG_PROTO_MIN, e.reg_proto_min);
  if (e.reg_proto_max != 0) w_.PutBe32(NFTA_NAT_REG_PROTO_MAX, e.reg_proto_max);
  if (e.flags != 0) w_.PutBe32(NFTA_NAT_FLAGS, e.flags);
  End();
}

void ExprWriter::Masquerade(uint32_t flags) {
  Begin("masq");
  if (flags != 0) w_.PutBe32(NFTA_MASQ_FLAGS, flags);
  End();
}

void ExprWriter::Counter(uint64_t bytes, uint64_t packets) {
  Begin("counter");
  w_.PutBe64(NFTA_COUNTER_BYTES, bytes);
  w_.PutBe64(NFTA_COUNTER_PACKETS, packets);
  End();
}

void ExprWriter::Xt(XtKind kind, std::string_view name, uint32_t revision, ByteView info) {
  // NFTA_MATCH_* and NFTA_TARGET_* are the same numbers (ReadXt checks).
  Begin(kind == kTarget ? "target" : "match");
  w_.PutString(NFTA_MATCH_NAME, name);
  w_.PutBe32(NFTA_MATCH_REV, revision);
  w_.Put(NFTA_MATCH_INFO, info);
  End();
}

void ExprWriter::Named(std::string_view name) {
  Begin(name);
  End();
}

uint32_t RegisterOfWord(size_t word) {
  if (word % kWordsPerRegister == 0) {
    return static_cast<uint32_t>(NFT_REG_1 + word / kWordsPerRegister);
  }
  return static_cast<uint32_t>(NFT_REG32_00 + word);
}

size_t WordOfRegister(uint32_t reg) {
  if (reg >= NFT_REG32_00) return reg - NFT_REG32_00;
  return (reg - NFT_REG_1) * kWordsPerRegister;
}

void AppendExpressions(AttrWriter& w, const std::vector<Expr>& exprs) {
  Writer writer(w);
  for (const auto& e : exprs) std::visit(writer, e);
}

Bytes EncodeExpressions(const std::vector<Expr>& exprs) {
  AttrWriter w;
  AppendExpressions(w, exprs);
  return w.Take();
}

std::optional<std::vector<Expr>> DecodeExpressions(ByteView payload) {
  std::vector<Expr> out;
  if (!ForEachExpression(payload, [&](std::string_view name, ByteView data) {
        out.push_back(DecodeOne(name, data));
        return true;
      })) {
    return std::nullopt;
  }
  return out;
}

XtView ReadXt(ByteView data) {
  static_assert(int{NFTA_MATCH_NAME} == int{NFTA_TARGET_NAME} &&
                int{NFTA_MATCH_REV} == int{NFTA_TARGET_REV} &&
                int{NFTA_MATCH_INFO} == int{NFTA_TARGET_INFO});
  XtView out;
  ForEachAttr(data, [&](const Attr& a) {
    if (a.type == NFTA_MATCH_NAME) out.name = a.View();
    if (a.type == NFTA_MATCH_REV && a.data.size() == 4) out.revision = a.Be32();
    if (a.type == NFTA_MATCH_INFO) out.info = a.data;
    return true;
  });
  return out;
}

std::optional<expr::Verdict> ReadVerdict(ByteView data) {
  std::optional<uint32_t> dreg;
  ByteView value;
  bool has_value = false;
  ForEachAttr(data, [&](const Attr& a) {
    if (a.type == NFTA_IMMEDIATE_DREG && a.data.size() == 4) dreg = a.Be32();
    if (a.type == NFTA_IMMEDIATE_DATA) {
      value = a.data;
      has_value = true;
    }
    return true;
  });
  if (!dreg || *dreg != NFT_REG_VERDICT || !has_value) return std::nullopt;
  std::optional<expr::Verdict> verdict;
  bool has_code = false;
  ForEachAttr(value, [&](const Attr& a) {
    if (a.type != NFTA_DATA_VERDICT) return true;
    verdict.emplace();
    ForEachAttr(a.data, [&](const Attr& v) {
      if (v.type == NFTA_VERDICT_CODE && v.data.size() == 4) {
        verdict->code = static_cast<int32_t>(v.Be32());
        has_code = true;
      }
      if (v.type == NFTA_VERDICT_CHAIN) verdict->chain = v.String();
      return true;
    });
    return false;
  });
  if (!has_code) return std::nullopt;
  return verdict;
}

std::string ExpressionsText(const std::vector<Expr>& exprs) {
  std::string out;
  for (const auto& e : exprs) out += "  [ " + std::visit(Printer{}, e) + "]\n";
  return out;
}

}  // namespace nodegate::netfilter
