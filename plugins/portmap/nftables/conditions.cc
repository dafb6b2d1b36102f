#include "plugins/portmap/nftables/conditions.h"

// clang-format off
#include <netinet/in.h>  // before the kernel headers, which then skip their own copies
// clang-format on
#include <linux/netfilter/nf_tables.h>
#include <net/if.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>
#include <utility>

#include "plugins/portmap/nftables/datatypes.h"

namespace nodegate::portmap {
namespace {

using netfilter::Bytes;
using netfilter::ElementWrite;
using netfilter::Expr;
namespace expr = netfilter::expr;

using nft_types::kBigEndian;
using nft_types::kHostEndian;
using nft_types::kIfname;
using nft_types::kIpv4;
using nft_types::kIpv6;
using nft_types::kMark;
using nft_types::kProto;
using nft_types::kService;
constexpr uint32_t kReg = NFT_REG_1;

Error Invalid(const std::string& what) { return Error(kErrInvalidConfig, "nft condition " + what); }

constexpr char kSubset[] =
    "supported: ip/ip6 saddr|daddr, ip protocol, ip6 nexthdr, meta l4proto, iifname, oifname, "
    "th/tcp/udp/sctp sport|dport, meta mark";

// ---- tokens: words, "quoted strings", and the punctuation of sets.

struct Token {
  std::string text;
  bool quoted = false;
};

Result<std::vector<Token>> Lex(const std::string& input) {
  std::vector<Token> out;
  size_t i = 0;
  while (i < input.size()) {
    const char c = input[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (c == '{' || c == '}' || c == ',') {
      out.push_back({std::string(1, c)});
      ++i;
    } else if (c == '"') {
      const size_t end = input.find('"', i + 1);
      if (end == std::string::npos)
        return Invalid("\"" + input.substr(i) + "\": unterminated string");
      out.push_back({input.substr(i + 1, end - i - 1), true});
      i = end + 1;
    } else {
      size_t end = i;
      while (end < input.size() && !std::isspace(static_cast<unsigned char>(input[end])) &&
             input[end] != '{' && input[end] != '}' && input[end] != ',' && input[end] != '"') {
        ++end;
      }
      out.push_back({input.substr(i, end - i)});
      i = end;
    }
  }
  return out;
}

// ---- values

enum class Kind { kAddress, kProto, kIfname, kPort, kMark };

struct Selector {
  Kind kind = Kind::kAddress;
  std::optional<net::Family> family;  // network header of that family
  std::vector<Expr> load;             // what puts the field into register 1
  std::optional<uint8_t> needs_l4;
  bool proto_gives_l4 = false;  // ip protocol / ip6 nexthdr / meta l4proto
};

// One value of a match: a single value, or an inclusive range [lo, hi], in the register's
// byte layout (big-endian for addresses and ports).
struct Value {
  Bytes lo, hi;
  bool wildcard = false;  // an interface name prefix (eth*): compared over its bytes only
  bool range() const { return lo != hi; }
};

std::optional<uint64_t> Number(const std::string& text, uint64_t max) {
  uint64_t value = 0;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  int base = 10;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    begin += 2;
    base = 16;
  }
  const auto [ptr, ec] = std::from_chars(begin, end, value, base);
  if (ec != std::errc() || ptr != end || begin == end || value > max) return std::nullopt;
  return value;
}

Bytes Be16(uint16_t v) { return {static_cast<uint8_t>(v >> 8), static_cast<uint8_t>(v & 0xff)}; }

Bytes HostU32(uint32_t v) {
  Bytes out(4);
  std::memcpy(out.data(), &v, 4);
  return out;
}

Bytes AddressBytes(const net::IpAddress& a) {
  return Bytes(a.bytes().begin(), a.bytes().begin() + a.byte_length());
}

Result<Value> ParseAddress(const std::string& text, net::Family family) {
  const auto family_name = family == net::Family::kV4 ? "an IPv4" : "an IPv6";
  const size_t dash = text.find('-');
  if (dash != std::string::npos) {
    const auto lo = net::IpAddress::Parse(text.substr(0, dash));
    const auto hi = net::IpAddress::Parse(text.substr(dash + 1));
    if (!lo || !hi || lo->family() != family || hi->family() != family || *hi < *lo) {
      return Invalid("\"" + text + "\": not " + family_name + " address range");
    }
    return Value{AddressBytes(*lo), AddressBytes(*hi)};
  }
  if (text.find('/') != std::string::npos) {
    const auto prefix = net::IpPrefix::Parse(text);
    if (!prefix || prefix->family() != family) {
      return Invalid("\"" + text + "\": not " + family_name + " prefix");
    }
    if (prefix->length() == 0)
      return Invalid("\"" + text + "\": a /0 prefix matches every address");
    return Value{AddressBytes(prefix->Network()), AddressBytes(prefix->LastAddress())};
  }
  const auto address = net::IpAddress::Parse(text);
  if (!address || address->family() != family) {
    return Invalid("\"" + text + "\": not " + family_name + " address");
  }
  return Value{AddressBytes(*address), AddressBytes(*address)};
}

Result<Value> ParsePort(const std::string& text) {
  const size_t dash = text.find('-');
  const auto lo = Number(text.substr(0, dash), 65535);
  const auto hi = dash == std::string::npos ? lo : Number(text.substr(dash + 1), 65535);
  if (!lo || !hi || *hi < *lo) return Invalid("\"" + text + "\": not a port (0-65535) or range");
  return Value{Be16(static_cast<uint16_t>(*lo)), Be16(static_cast<uint16_t>(*hi))};
}

Result<Value> ParseProto(const std::string& text) {
  static const std::pair<const char*, uint8_t> kNames[] = {
      {"icmp", 1},  {"igmp", 2}, {"tcp", 6},     {"udp", 17},      {"gre", 47},
      {"esp", 50},  {"ah", 51},  {"icmpv6", 58}, {"sctp", 132},    {"udplite", 136},
      {"dccp", 33}, {"ipip", 4}, {"ipv6", 41},   {"ipv6-icmp", 58}};
  for (const auto& [name, number] : kNames) {
    if (text == name) return Value{{number}, {number}};
  }
  if (const auto n = Number(text, 255)) {
    const auto byte = static_cast<uint8_t>(*n);
    return Value{{byte}, {byte}};
  }
  return Invalid("\"" + text + "\": not a protocol name or number (0-255)");
}

Result<Value> ParseIfname(const Token& token) {
  std::string name = token.text;
  const bool wildcard = !name.empty() && name.back() == '*';
  if (wildcard) name.pop_back();
  if (name.empty()) {
    return Invalid("\"" + token.text +
                   "\": " + (wildcard ? "matches every interface" : "an empty interface name"));
  }
  if (name.size() >= IFNAMSIZ) return Invalid("\"" + token.text + "\": interface name too long");
  for (const char c : name) {
    // What the kernel accepts in a name (dev_valid_name), less what nft's syntax would split.
    if (!std::isgraph(static_cast<unsigned char>(c)) || c == '*' || c == '"' || c == '\\' ||
        c == '/' || c == ':' || c == '{' || c == '}' || c == ',') {
      return Invalid("\"" + token.text + "\": not an interface name");
    }
  }
  Bytes bytes(name.begin(), name.end());
  if (!wildcard) bytes.resize(IFNAMSIZ, 0);
  return Value{bytes, bytes, wildcard};
}

Result<Value> ParseMarkValue(const std::string& text) {
  const auto n = Number(text, 0xffffffffu);
  if (!n) return Invalid("\"" + text + "\": not a mark (a 32-bit number)");
  const Bytes bytes = HostU32(static_cast<uint32_t>(*n));
  return Value{bytes, bytes};
}

Result<Value> ParseValue(const Selector& s, const Token& token, net::Family family) {
  if (s.kind == Kind::kIfname) return ParseIfname(token);
  if (token.quoted) return Invalid("\"" + token.text + "\": a quoted value where none is expected");
  switch (s.kind) {
    case Kind::kAddress:
      return ParseAddress(token.text, family);
    case Kind::kProto:
      return ParseProto(token.text);
    case Kind::kPort:
      return ParsePort(token.text);
    case Kind::kMark:
      return ParseMarkValue(token.text);
    case Kind::kIfname:
      break;
  }
  return Invalid("\"" + token.text + "\"");
}

// ---- selectors

// The selector at tokens[i] (advancing i), or an error naming what is not supported.
Result<Selector> ParseSelector(const std::vector<Token>& t, size_t& i, net::Family family) {
  const auto word = [&](size_t k) { return k < t.size() && !t[k].quoted ? t[k].text : ""; };
  const std::string first = word(i), second = word(i + 1);
  const auto other = family == net::Family::kV4 ? "conditionsV6" : "conditionsV4";
  Selector s;
  if (first == "ip" || first == "ip6") {
    const net::Family header = first == "ip" ? net::Family::kV4 : net::Family::kV6;
    if (header != family) {
      return Invalid("\"" + first + " " + second + "\": " + first + " header matches belong in " +
                     other);
    }
    const bool v4 = header == net::Family::kV4;
    s.family = header;
    if (second == "saddr" || second == "daddr") {
      s.kind = Kind::kAddress;
      const uint32_t offset = v4 ? (second == "saddr" ? 12 : 16) : (second == "saddr" ? 8 : 24);
      s.load = {expr::Payload{NFT_PAYLOAD_NETWORK_HEADER, offset, v4 ? 4u : 16u, kReg}};
    } else if ((v4 && second == "protocol") || (!v4 && second == "nexthdr")) {
      s.kind = Kind::kProto;
      s.proto_gives_l4 = true;
      s.load = {expr::Payload{NFT_PAYLOAD_NETWORK_HEADER, v4 ? 9u : 6u, 1, kReg}};
    } else {
      return Invalid("\"" + first + " " + second + "\" is not supported (" + kSubset + ")");
    }
    i += 2;
    return s;
  }
  size_t used = 1;
  std::string key = first;
  if (first == "meta") {
    key = second;
    used = 2;
  }
  if (key == "l4proto" && first == "meta") {
    s.kind = Kind::kProto;
    s.proto_gives_l4 = true;
    s.load = {expr::Meta{NFT_META_L4PROTO, kReg}};
  } else if (key == "iifname" || key == "oifname") {
    s.kind = Kind::kIfname;
    s.load = {expr::Meta{key == "iifname" ? NFT_META_IIFNAME : NFT_META_OIFNAME, kReg}};
  } else if (key == "mark") {
    s.kind = Kind::kMark;
    s.load = {expr::Meta{NFT_META_MARK, kReg}};
  } else if (first == "th" || first == "tcp" || first == "udp" || first == "sctp") {
    if (second != "sport" && second != "dport") {
      return Invalid("\"" + first + " " + second + "\" is not supported (" + kSubset + ")");
    }
    s.kind = Kind::kPort;
    if (first != "th") s.needs_l4 = first == "tcp" ? 6 : first == "udp" ? 17 : 132;
    s.load = {expr::Payload{NFT_PAYLOAD_TRANSPORT_HEADER, second == "sport" ? 0u : 2u, 2, kReg}};
    used = 2;
  } else {
    const std::string shown = first == "meta" ? first + " " + second : first;
    return Invalid("\"" + shown + "\" is not supported (" + kSubset + ")");
  }
  i += used;
  return s;
}

// ---- relations

struct Relation {
  uint32_t op = NFT_CMP_EQ;
  bool ordering = false;  // < > <= >=
};

std::optional<Relation> ParseRelation(const std::string& word) {
  static const std::pair<const char*, uint32_t> kOps[] = {
      {"==", NFT_CMP_EQ},  {"eq", NFT_CMP_EQ},  {"!=", NFT_CMP_NEQ}, {"ne", NFT_CMP_NEQ},
      {"<", NFT_CMP_LT},   {"lt", NFT_CMP_LT},  {">", NFT_CMP_GT},   {"gt", NFT_CMP_GT},
      {"<=", NFT_CMP_LTE}, {"le", NFT_CMP_LTE}, {">=", NFT_CMP_GTE}, {"ge", NFT_CMP_GTE}};
  for (const auto& [text, op] : kOps) {
    if (word == text) return Relation{op, op != NFT_CMP_EQ && op != NFT_CMP_NEQ};
  }
  return std::nullopt;
}

// ---- anonymous sets

// `bytes` + 1 as a big-endian number; false when it wraps.
bool Increment(Bytes& bytes) {
  for (size_t i = bytes.size(); i-- > 0;) {
    if (++bytes[i] != 0) return true;
  }
  return false;
}

AnonymousSet BuildSet(const Selector& s, std::vector<Value> values, net::Family family) {
  AnonymousSet set;
  set.flags = NFT_SET_ANONYMOUS | NFT_SET_CONSTANT;
  switch (s.kind) {
    case Kind::kAddress:
      set.key_type = family == net::Family::kV4 ? kIpv4 : kIpv6;
      set.key_byteorder = kBigEndian;
      break;
    case Kind::kProto:
      set.key_type = kProto;
      set.key_byteorder = kBigEndian;
      break;
    case Kind::kPort:
      set.key_type = kService;
      set.key_byteorder = kBigEndian;
      break;
    case Kind::kMark:
      set.key_type = kMark;
      set.key_byteorder = kHostEndian;
      break;
    case Kind::kIfname:
      set.key_type = kIfname;
      set.key_byteorder = kHostEndian;
      break;
  }
  set.key_len = static_cast<uint32_t>(values.front().lo.size());
  const bool interval =
      std::any_of(values.begin(), values.end(), [](const Value& v) { return v.range(); });
  if (!interval) {
    for (const auto& v : values) {
      ElementWrite e{.key = v.lo};
      if (std::find(set.elements.begin(), set.elements.end(), e) == set.elements.end()) {
        set.elements.push_back(std::move(e));
      }
    }
    return set;
  }
  // An interval set: the ranges sorted and merged where they touch, each written as its start
  // and the value after its end (flagged as an end), after an end at zero as nft writes it.
  set.flags |= NFT_SET_INTERVAL;
  std::sort(values.begin(), values.end(),
            [](const Value& a, const Value& b) { return a.lo < b.lo; });
  std::vector<Value> merged;
  for (auto& v : values) {
    if (!merged.empty()) {
      Bytes after = merged.back().hi;
      const bool wraps = !Increment(after);
      if (wraps || v.lo <= after) {
        if (v.hi > merged.back().hi) merged.back().hi = v.hi;
        continue;
      }
    }
    merged.push_back(std::move(v));
  }
  const Bytes zero(set.key_len, 0);
  if (merged.front().lo != zero) set.elements.push_back({.key = zero, .interval_end = true});
  for (const auto& v : merged) {
    set.elements.push_back({.key = v.lo});
    Bytes after = v.hi;
    if (Increment(after)) set.elements.push_back({.key = after, .interval_end = true});
  }
  return set;
}

// TextOf: the tokens from `start` to `end` as they were written, for messages.
std::string TextOf(const std::vector<Token>& t, size_t start, size_t end) {
  std::string out;
  for (size_t k = start; k < std::min(end, t.size()); ++k)
    out += (out.empty() ? "" : " ") + t[k].text;
  return out;
}

// ParseSetValues: the values of a `{ ... }` from t[i] to its closing brace (i left after it);
// the match began at t[start].
Result<std::vector<Value>> ParseSetValues(const Selector& s, const std::vector<Token>& t,
                                          size_t start, size_t& i, net::Family family) {
  std::vector<Value> values;
  while (true) {
    if (i >= t.size()) {
      return Invalid("\"" + TextOf(t, start, i) + "\": a set without its closing }");
    }
    if (!t[i].quoted && t[i].text == "}") break;
    if (!t[i].quoted && t[i].text == ",") {
      ++i;
      continue;
    }
    NG_ASSIGN_OR_RETURN(Value v, ParseValue(s, t[i], family));
    if (v.wildcard) return Invalid("\"" + t[i].text + "*\": wildcards in a set are not supported");
    if (v.range() && (s.kind == Kind::kProto || s.kind == Kind::kMark)) {
      return Invalid("\"" + t[i].text + "\": ranges of this kind in a set are not supported");
    }
    values.push_back(std::move(v));
    ++i;
  }
  ++i;  // the }
  return values;
}

// AppendPrefix: an address range that is a prefix, compared as nft does: only its whole bytes
// loaded, or the whole field loaded and masked. False when the range is not a prefix.
bool AppendPrefix(const Value& v, uint32_t op, ConditionMatch& m) {
  size_t common = 0;
  while (common < v.lo.size() && v.lo[common] == v.hi[common]) ++common;
  bool prefix = true;
  int bits = static_cast<int>(common) * 8;
  if (common < v.lo.size()) {
    const uint8_t x = v.lo[common] ^ v.hi[common];
    // The differing tail must be 0...0 in lo and 1...1 in hi.
    int host = 0;
    while (host < 8 && ((x >> host) & 1)) ++host;
    prefix = (x >> host) == 0 && (v.lo[common] & x) == 0;
    for (size_t k = common + 1; k < v.lo.size() && prefix; ++k) {
      prefix = v.lo[k] == 0 && v.hi[k] == 0xff;
    }
    bits += 8 - host;
  }
  if (!prefix) return false;
  auto& load = std::get<expr::Payload>(m.exprs.front());
  if (bits % 8 == 0) {
    load.len = static_cast<uint32_t>(bits / 8);
    m.exprs.push_back(expr::Cmp{kReg, op, Bytes(v.lo.begin(), v.lo.begin() + bits / 8)});
    return true;
  }
  Bytes mask_bytes(v.lo.size(), 0);
  for (size_t k = 0; k < mask_bytes.size(); ++k) {
    const int left = std::clamp(bits - static_cast<int>(k) * 8, 0, 8);
    mask_bytes[k] = static_cast<uint8_t>((0xff00 >> left) & 0xff);
  }
  m.exprs.push_back(expr::Bitwise{kReg, kReg, mask_bytes, Bytes(v.lo.size(), 0)});
  m.exprs.push_back(expr::Cmp{kReg, op, v.lo});
  return true;
}

// ---- one match

Result<ConditionMatch> ParseMatch(const std::vector<Token>& t, size_t& i, net::Family family) {
  const size_t start = i;
  NG_ASSIGN_OR_RETURN(const Selector s, ParseSelector(t, i, family));
  ConditionMatch m;
  m.family = s.family;
  m.needs_l4 = s.needs_l4;
  m.exprs = s.load;
  const auto text_so_far = [&] { return TextOf(t, start, i); };
  // An optional mask (marks only).
  std::optional<Bytes> mask;
  if (i < t.size() && !t[i].quoted && (t[i].text == "&" || t[i].text == "and")) {
    if (s.kind != Kind::kMark)
      return Invalid("\"" + text_so_far() + " " + t[i].text +
                     "\": a mask is supported on meta mark only");
    if (i + 1 >= t.size()) return Invalid("\"" + text_so_far() + "\": a mask without a value");
    NG_ASSIGN_OR_RETURN(const Value v, ParseMarkValue(t[i + 1].text));
    mask = v.lo;
    i += 2;
  }
  Relation relation;
  if (i < t.size() && !t[i].quoted) {
    if (const auto r = ParseRelation(t[i].text)) {
      relation = *r;
      ++i;
    }
  }
  if (i >= t.size()) return Invalid("\"" + text_so_far() + "\": no value");
  if (relation.ordering && s.kind != Kind::kPort) {
    return Invalid("\"" + text_so_far() + "\": < > <= >= are supported on ports only");
  }
  if (mask) m.exprs.push_back(expr::Bitwise{kReg, kReg, *mask, Bytes(4, 0)});
  const bool negate = relation.op == NFT_CMP_NEQ;

  if (!t[i].quoted && t[i].text == "{") {
    if (relation.ordering) return Invalid("\"" + text_so_far() + " {\": < > <= >= against a set");
    ++i;
    NG_ASSIGN_OR_RETURN(std::vector<Value> values, ParseSetValues(s, t, start, i, family));
    if (values.empty()) return Invalid("\"" + text_so_far() + "\": an empty set");
    m.set = BuildSet(s, std::move(values), family);
    m.exprs.push_back(expr::Lookup{kReg, "__set%d", 0, std::nullopt,
                                   negate ? static_cast<uint32_t>(NFT_LOOKUP_F_INV) : 0u});
    m.text = text_so_far();
    return m;
  }

  NG_ASSIGN_OR_RETURN(Value v, ParseValue(s, t[i], family));
  ++i;
  m.text = text_so_far();
  if (v.range()) {
    if (relation.ordering) return Invalid("\"" + m.text + "\": < > <= >= against a range");
    if (s.kind == Kind::kProto || s.kind == Kind::kMark) {
      return Invalid("\"" + m.text + "\": ranges of this kind are not supported");
    }
    if (s.kind == Kind::kAddress && AppendPrefix(v, relation.op, m)) return m;
    if (negate) {
      m.exprs.push_back(expr::Range{kReg, NFT_RANGE_NEQ, v.lo, v.hi});
    } else {
      m.exprs.push_back(expr::Cmp{kReg, NFT_CMP_GTE, v.lo});
      m.exprs.push_back(expr::Cmp{kReg, NFT_CMP_LTE, v.hi});
    }
    return m;
  }
  m.exprs.push_back(expr::Cmp{kReg, relation.op, v.lo});
  if (s.proto_gives_l4 && relation.op == NFT_CMP_EQ) m.gives_l4 = v.lo.front();
  return m;
}

}  // namespace

Result<NftConditions> ParseNftConditions(const std::vector<std::string>& tokens,
                                         net::Family family) {
  NftConditions out;
  for (const auto& token : tokens) {
    if (token.find_first_of(";\n\r#") != std::string::npos) {
      return Invalid("token \"" + token + "\" contains a character that would end the rule");
    }
    out.text += (out.text.empty() ? "" : " ") + token;
  }
  NG_ASSIGN_OR_RETURN(const std::vector<Token> lexed, Lex(out.text));
  size_t i = 0;
  while (i < lexed.size()) {
    NG_ASSIGN_OR_RETURN(ConditionMatch m, ParseMatch(lexed, i, family));
    out.matches.push_back(std::move(m));
  }
  return out;
}

}  // namespace nodegate::portmap
