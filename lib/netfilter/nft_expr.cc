#include "lib/netfilter/nft_expr.h"

// clang-format off
#include <netinet/in.h>  // before the kernel headers, which then skip their own copies
// clang-format on
#include <linux/netfilter.h>
#include <linux/netfilter/nf_nat.h>
#include <linux/netfilter/nf_tables.h>

#include <cstdio>
#include <cstring>
#include <type_traits>

namespace nodegate::netfilter {
namespace {

constexpr size_t kWordsPerRegister = NFT_REG_SIZE / NFT_REG32_SIZE;

// ---- encoding (attribute order as libnftnl 1.2.4 writes each expression)

class Writer {
 public:
  explicit Writer(AttrWriter& w) : w_(w) {}

  void operator()(const expr::Payload& e) {
    Begin("payload");
    w_.PutBe32(NFTA_PAYLOAD_DREG, e.dreg);
    w_.PutBe32(NFTA_PAYLOAD_BASE, e.base);
    w_.PutBe32(NFTA_PAYLOAD_OFFSET, e.offset);
    w_.PutBe32(NFTA_PAYLOAD_LEN, e.len);
    End();
  }
  void operator()(const expr::Meta& e) {
    Begin("meta");
    w_.PutBe32(NFTA_META_KEY, e.key);
    w_.PutBe32(NFTA_META_DREG, e.dreg);
    End();
  }
  void operator()(const expr::MetaSet& e) {
    Begin("meta");
    w_.PutBe32(NFTA_META_KEY, e.key);
    w_.PutBe32(NFTA_META_SREG, e.sreg);
    End();
  }
  void operator()(const expr::Cmp& e) {
    Begin("cmp");
    w_.PutBe32(NFTA_CMP_SREG, e.sreg);
    w_.PutBe32(NFTA_CMP_OP, e.op);
    PutValue(NFTA_CMP_DATA, e.data);
    End();
  }
  void operator()(const expr::Range& e) {
    Begin("range");
    w_.PutBe32(NFTA_RANGE_SREG, e.sreg);
    w_.PutBe32(NFTA_RANGE_OP, e.op);
    PutValue(NFTA_RANGE_FROM_DATA, e.from);
    PutValue(NFTA_RANGE_TO_DATA, e.to);
    End();
  }
  void operator()(const expr::Bitwise& e) {
    Begin("bitwise");
    w_.PutBe32(NFTA_BITWISE_SREG, e.sreg);
    w_.PutBe32(NFTA_BITWISE_DREG, e.dreg);
    w_.PutBe32(NFTA_BITWISE_OP, NFT_BITWISE_BOOL);
    w_.PutBe32(NFTA_BITWISE_LEN, static_cast<uint32_t>(e.mask.size()));
    PutValue(NFTA_BITWISE_MASK, e.mask);
    PutValue(NFTA_BITWISE_XOR, e.xor_value);
    End();
  }
  void operator()(const expr::Byteorder& e) {
    Begin("byteorder");
    w_.PutBe32(NFTA_BYTEORDER_SREG, e.sreg);
    w_.PutBe32(NFTA_BYTEORDER_DREG, e.dreg);
    w_.PutBe32(NFTA_BYTEORDER_OP, e.op);
    w_.PutBe32(NFTA_BYTEORDER_LEN, e.len);
    w_.PutBe32(NFTA_BYTEORDER_SIZE, e.size);
    End();
  }
  void operator()(const expr::Lookup& e) {
    Begin("lookup");
    w_.PutBe32(NFTA_LOOKUP_SREG, e.sreg);
    if (e.dreg) w_.PutBe32(NFTA_LOOKUP_DREG, *e.dreg);
    w_.PutString(NFTA_LOOKUP_SET, e.set);
    if (e.set_id != 0) w_.PutBe32(NFTA_LOOKUP_SET_ID, e.set_id);
    if (e.flags != 0) w_.PutBe32(NFTA_LOOKUP_FLAGS, e.flags);
    End();
  }
  void operator()(const expr::Immediate& e) {
    Begin("immediate");
    w_.PutBe32(NFTA_IMMEDIATE_DREG, e.dreg);
    PutValue(NFTA_IMMEDIATE_DATA, e.data);
    End();
  }
  void operator()(const expr::Verdict& e) {
    Begin("immediate");
    w_.PutBe32(NFTA_IMMEDIATE_DREG, NFT_REG_VERDICT);
    const size_t data = w_.BeginNested(NFTA_IMMEDIATE_DATA);
    const size_t verdict = w_.BeginNested(NFTA_DATA_VERDICT);
    w_.PutBe32(NFTA_VERDICT_CODE, static_cast<uint32_t>(e.code));
    if (!e.chain.empty()) w_.PutString(NFTA_VERDICT_CHAIN, e.chain);
    w_.EndNested(verdict);
    w_.EndNested(data);
    End();
  }
  void operator()(const expr::Fib& e) {
    Begin("fib");
    w_.PutBe32(NFTA_FIB_FLAGS, e.flags);
    w_.PutBe32(NFTA_FIB_RESULT, e.result);
    w_.PutBe32(NFTA_FIB_DREG, e.dreg);
    End();
  }
  void operator()(const expr::Nat& e) {
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
  void operator()(const expr::Masquerade& e) {
    Begin("masq");
    if (e.flags != 0) w_.PutBe32(NFTA_MASQ_FLAGS, e.flags);
    End();
  }
  void operator()(const expr::Other& e) {
    Begin(e.name.c_str());
    End();
  }

 private:
  void Begin(const char* name) {
    elem_ = w_.BeginNested(NFTA_LIST_ELEM);
    w_.PutString(NFTA_EXPR_NAME, name);
    data_ = w_.BeginNested(NFTA_EXPR_DATA);
  }
  void End() {
    w_.EndNested(data_);
    w_.EndNested(elem_);
  }
  void PutValue(uint16_t type, const Bytes& value) {
    const size_t nest = w_.BeginNested(type);
    w_.Put(NFTA_DATA_VALUE, value);
    w_.EndNested(nest);
  }

  AttrWriter& w_;
  size_t elem_ = 0;
  size_t data_ = 0;
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
    std::optional<expr::Verdict> verdict;
    Bytes bytes;
    ForEachAttr(data_attr->data, [&](const Attr& a) {
      if (a.type == NFTA_DATA_VALUE) bytes.assign(a.data.begin(), a.data.end());
      if (a.type == NFTA_DATA_VERDICT) {
        verdict.emplace();
        ForEachAttr(a.data, [&](const Attr& v) {
          if (v.type == NFTA_VERDICT_CODE) verdict->code = static_cast<int32_t>(v.Be32());
          if (v.type == NFTA_VERDICT_CHAIN) verdict->chain = v.String();
          return true;
        });
      }
      return true;
    });
    if (verdict) return *verdict;
    return expr::Immediate{be32(NFTA_IMMEDIATE_DREG), std::move(bytes)};
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
  std::string operator()(const expr::Other& e) const { return e.name + " "; }
};

}  // namespace

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
    out.push_back(DecodeOne(name, data));
    return true;
  });
  if (!ok || malformed) return std::nullopt;
  return out;
}

std::string ExpressionsText(const std::vector<Expr>& exprs) {
  std::string out;
  for (const auto& e : exprs) out += "  [ " + std::visit(Printer{}, e) + "]\n";
  return out;
}

}  // namespace nodegate::netfilter
