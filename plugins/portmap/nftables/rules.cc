#include "plugins/portmap/nftables/rules.h"

// clang-format off
#include <netinet/in.h>  // before the kernel headers, which then skip their own copies
// clang-format on
#include <linux/netfilter.h>
#include <linux/netfilter/nf_nat.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/rtnetlink.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <optional>
#include <set>

#include "lib/base/hash.h"
#include "plugins/portmap/nftables/datatypes.h"

namespace nodegate::portmap::nft {
namespace {

using netfilter::Bytes;
using netfilter::ElementChange;
using netfilter::ElementVerb;
using netfilter::ElementWrite;
using netfilter::Expr;
using netfilter::RegisterOfWord;
namespace expr = netfilter::expr;

using nft_types::kByteorderInvalid;
using nft_types::kIfname;
using nft_types::kIpv4;
using nft_types::kIpv6;
using nft_types::kMark;
using nft_types::kProto;
using nft_types::kService;

// A concatenation's type is its fields' types, six bits each, first field highest.
constexpr uint32_t Concat(std::initializer_list<uint32_t> types) {
  uint32_t out = 0;
  for (const uint32_t t : types) out = (out << 6) | t;
  return out;
}
uint32_t AddrType(net::Family f) { return f == net::Family::kV4 ? kIpv4 : kIpv6; }
uint32_t AddrLen(net::Family f) { return f == net::Family::kV4 ? 4 : 16; }
uint8_t NfProto(net::Family f) { return f == net::Family::kV4 ? NFPROTO_IPV4 : NFPROTO_IPV6; }

// nft's set user data records (libnftnl udata.h) and the typeof record of a concatenation
// (an expression of type EXPR_CONCAT, 13, with no data of its own).
constexpr uint8_t kUdataKeyByteorder = 0, kUdataDataByteorder = 1, kUdataMerge = 2,
                  kUdataKeyTypeof = 3, kUdataDataTypeof = 4, kUdataDataInterval = 6;
constexpr uint32_t kExprConcat = 13;

void PutConcatTypeof(netfilter::UserData& u, uint8_t record) {
  const size_t outer = u.BeginNest(record);
  u.PutU32(0, kExprConcat);   // NFTNL_UDATA_SET_TYPEOF_EXPR
  u.EndNest(u.BeginNest(1));  // NFTNL_UDATA_SET_TYPEOF_DATA
  u.EndNest(outer);
}

// The user data nft 1.0 gives a named set or map whose key (and data) are concatenations of
// types: their byte orders and typeof records, which nft reads back to print them.
Bytes ConcatSetUserData(bool map) {
  netfilter::UserData u;
  u.PutU32(kUdataKeyByteorder, kByteorderInvalid);
  if (map) u.PutU32(kUdataDataByteorder, kByteorderInvalid);
  PutConcatTypeof(u, kUdataKeyTypeof);
  if (map) {
    PutConcatTypeof(u, kUdataDataTypeof);
    u.PutU32(kUdataDataInterval, 0);
  }
  return u.bytes();
}

Bytes HostU32(uint32_t v) {
  Bytes out(4);
  std::memcpy(out.data(), &v, 4);
  return out;
}

Bytes AddressBytes(const net::IpAddress& a) {
  return Bytes(a.bytes().begin(), a.bytes().begin() + a.byte_length());
}

// `gap` zero bytes (filled in by the caller), then the dnat key of `mapping` in register layout:
// [host IP .] protocol . host port, each field padded to 4 bytes, in one allocation.
Bytes KeyAfter(size_t gap, const PortMapping& mapping) {
  const size_t host_ip = mapping.has_specific_host_ip() ? mapping.host_ip->byte_length() : 0;
  Bytes key(gap + host_ip + 8, 0);
  if (host_ip != 0) std::copy_n(mapping.host_ip->bytes().begin(), host_ip, key.begin() + gap);
  uint8_t* proto_port = key.data() + gap + host_ip;
  proto_port[0] = static_cast<uint8_t>(ProtocolNumber(mapping.protocol));
  proto_port[4] = static_cast<uint8_t>(mapping.host_port >> 8);
  proto_port[5] = static_cast<uint8_t>(mapping.host_port & 0xff);
  return key;
}

// The netmask of a prefix length, as address bytes.
Bytes PrefixMask(net::Family f, int length) {
  Bytes mask(AddrLen(f), 0);
  for (size_t i = 0; i < mask.size(); ++i) {
    const int bits = std::clamp(length - static_cast<int>(i) * 8, 0, 8);
    mask[i] = static_cast<uint8_t>((0xff00 >> bits) & 0xff);
  }
  return mask;
}

// ---- rules, expression for expression as nft 1.0.6 writes the same rule text.

constexpr uint32_t kReg = NFT_REG_1;
// nft's `dstnat` and `srcnat` priorities (NF_IP_PRI_NAT_DST / _SRC).
constexpr int32_t kPriorityDstnat = -100, kPrioritySrcnat = 100;

// A rule being built: tracks the protocol dependencies nft inserts (`meta nfproto` before the
// first network header field, `meta l4proto` before a tcp/udp/sctp header field) and the
// anonymous sets of its conditions.
class RuleBuilder {
 public:
  void AddConditions(const portmap::Conditions& conditions) {
    const NftConditions* nft = conditions.nftables();
    if (nft == nullptr) return;
    for (const ConditionMatch& m : nft->matches) {
      if (m.family) NeedFamily(*m.family);
      if (m.needs_l4 && l4_ != m.needs_l4) {
        Add(expr::Meta{NFT_META_L4PROTO, kReg});
        Add(expr::Cmp{kReg, NFT_CMP_EQ, Bytes{*m.needs_l4}});
        l4_ = m.needs_l4;
      }
      for (const Expr& e : m.exprs) Add(e);
      if (m.set) rule_.sets.emplace_back(rule_.exprs.size() - 1, *m.set);
      if (m.gives_l4) l4_ = m.gives_l4;
    }
  }
  // `meta nfproto <family>` as written in the rule (not a dependency: always there).
  void ExplicitFamily(net::Family f) {
    Add(expr::Meta{NFT_META_NFPROTO, kReg});
    Add(expr::Cmp{kReg, NFT_CMP_EQ, Bytes{NfProto(f)}});
    family_ = f;
  }
  void NeedFamily(net::Family f) {
    if (family_) return;
    ExplicitFamily(f);
  }
  // The fields of a concatenation, loaded word after word from register 1 on; kSaddrMasked is
  // `ip saddr & <mask of source_length>`.
  enum class Field { kSaddrMasked, kDaddr, kL4proto, kDport };
  void Concat(net::Family f, std::initializer_list<Field> fields, int source_length = 0) {
    size_t word = 0;
    for (const Field field : fields) {
      const uint32_t reg = RegisterOfWord(word);
      switch (field) {
        case Field::kSaddrMasked:
        case Field::kDaddr:
          NeedFamily(f);
          Add(expr::Payload{NFT_PAYLOAD_NETWORK_HEADER,
                            field == Field::kSaddrMasked ? SourceOffset(f) : DestOffset(f),
                            AddrLen(f), reg});
          if (field == Field::kSaddrMasked) {
            Add(expr::Bitwise{reg, reg, PrefixMask(f, source_length), Bytes(AddrLen(f), 0)});
          }
          word += AddrLen(f) / 4;
          break;
        case Field::kL4proto:
          Add(expr::Meta{NFT_META_L4PROTO, reg});
          word += 1;
          break;
        case Field::kDport:
          Add(expr::Payload{NFT_PAYLOAD_TRANSPORT_HEADER, 2, 2, reg});
          word += 1;
          break;
      }
    }
  }
  void Lookup(const std::string& set, std::optional<uint32_t> dreg = std::nullopt) {
    Add(expr::Lookup{kReg, set, 0, dreg, 0});
  }
  void SetMark(uint32_t mark) {
    Add(expr::Meta{NFT_META_MARK, kReg});
    Add(expr::Bitwise{kReg, kReg, HostU32(~mark), HostU32(mark)});
    Add(expr::MetaSet{NFT_META_MARK, kReg});
  }
  void Dnat(net::Family f) {
    Add(expr::Nat{NFT_NAT_DNAT, NfProto(f), kReg, RegisterOfWord(AddrLen(f) / 4), 0, 0, 0});
  }
  void Add(Expr e) { rule_.exprs.push_back(std::move(e)); }
  HostportsRule Take() { return std::move(rule_); }

  static uint32_t SourceOffset(net::Family f) { return f == net::Family::kV4 ? 12 : 8; }
  static uint32_t DestOffset(net::Family f) { return f == net::Family::kV4 ? 16 : 24; }

 private:
  HostportsRule rule_;
  std::optional<net::Family> family_;
  std::optional<uint8_t> l4_;
};

// The ADD's elements of one family as changes: one per map (maps in order of first
// appearance), `write(i)` the element of mapping i; with `subjects`, the key of each map's
// first element.
std::vector<ElementChange> ChangesPerSet(ElementVerb verb, const std::vector<std::string>& sets,
                                         const std::function<ElementWrite(size_t)>& write,
                                         std::vector<std::string>* first_of = nullptr,
                                         const std::vector<std::string>* keys = nullptr) {
  std::vector<ElementChange> out;
  for (size_t i = 0; i < sets.size(); ++i) {
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const ElementChange& c) { return c.set == sets[i]; });
    if (it == out.end()) {
      it = out.insert(out.end(), ElementChange{verb, sets[i], {}});
      if (first_of != nullptr) first_of->push_back(keys ? (*keys)[i] : std::string());
    }
    it->elements.push_back(write(i));
  }
  return out;
}

ElementWrite OwnedWrite(const std::string& owner, const std::string& tag) {
  return ElementWrite{.key = netfilter::IfnameKey({owner, tag})};
}

// The network's netcfg record: ifname . mark, the mark in host byte order (nft's mark type).
ElementWrite NetcfgWrite(const std::string& prefix, uint32_t hash) {
  ElementWrite write{.key = netfilter::IfnameKey({prefix})};
  const Bytes bytes = HostU32(hash);
  write.key.insert(write.key.end(), bytes.begin(), bytes.end());
  return write;
}

std::string HairpinSetOf(const NetworkNames& names, const PortMapping& m, net::Family f,
                         int length) {
  return m.has_specific_host_ip() ? names.HairpinIp(f, length) : names.HairpinAny(f, length);
}

// The hairpin elements of `mappings` for each of `sources`, one change per set (in order of
// first use). Each set's name is made once per source, not per element: a pod may have
// thousands of mappings.
std::vector<ElementChange> HairpinChanges(ElementVerb verb, const NetworkNames& names,
                                          net::Family f, const std::vector<net::IpPrefix>& sources,
                                          const std::vector<PortMapping>& mappings,
                                          const std::string& comment) {
  std::vector<ElementChange> out;
  const auto change_of = [&](const std::string& set) {
    for (size_t i = 0; i < out.size(); ++i) {
      if (out[i].set == set) return i;
    }
    out.push_back(ElementChange{verb, set, {}});
    return out.size() - 1;
  };
  for (const auto& source : sources) {
    const std::string sets[2] = {names.HairpinAny(f, source.length()),
                                 names.HairpinIp(f, source.length())};
    std::optional<size_t> changes[2];
    for (const auto& m : mappings) {
      const int with_ip = m.has_specific_host_ip() ? 1 : 0;
      if (!changes[with_ip]) changes[with_ip] = change_of(sets[with_ip]);
      out[*changes[with_ip]].elements.push_back(HairpinElement(source, m, comment));
    }
  }
  return out;
}

net::IpPrefix Loopback() {
  constexpr uint8_t kNetwork[4] = {127, 0, 0, 0};
  return net::IpPrefix(net::IpAddress::FromBytes(net::Family::kV4, kNetwork), 8);
}
net::IpPrefix EveryAddress(net::Family f) {
  constexpr uint8_t kZero[16] = {};
  return net::IpPrefix(net::IpAddress::FromBytes(f, kZero), 0);
}

}  // namespace

NetworkNames NamesFor(const std::string& network_name) {
  return NetworkNames{"n" + Sha512Hex(network_name).substr(0, 10)};
}

std::string Element::Tag() const { return Sha512Hex(map + "|" + key).substr(0, 15); }

std::string OwnerTag(const std::string& network_name, const std::string& container_id) {
  // A separator keeps ("ab","c") and ("a","bc") apart.
  return Sha512Hex(network_name + "/" + container_id).substr(0, 15);
}

std::string FamilyMarker(net::Family family) {
  return family == net::Family::kV4 ? "all4" : "all6";
}

uint32_t ConfigHash(const Config& config) {
  // v2: per-mapping hairpin elements in sets per prefix length, rules written over netlink.
  // v3: the localhost and masqAll sources are hairpin elements too (no lookup in a dnat map
  // without its data, which Linux before 6.5 refuses).
  std::string text = "v3|" + config.network_name + "|" + (config.snat ? "snat" : "nosnat") + "|" +
                     (config.masq_all ? "masqall" : "") + "|" + std::to_string(config.mark());
  for (const auto& t : config.conditions_v4.tokens) text += "|4:" + t;
  for (const auto& t : config.conditions_v6.tokens) text += "|6:" + t;
  return static_cast<uint32_t>(std::stoul(Sha512Hex(text).substr(0, 8), nullptr, 16));
}

std::string ElementComment(const std::string& container_id) {
  return container_id.size() <= kMaxCommentBytes ? container_id
                                                 : container_id.substr(0, kMaxCommentBytes);
}

std::string NetworkComment(const std::string& network_name) {
  std::string comment = "network " + network_name;
  if (comment.size() <= kMaxCommentBytes) return comment;
  // "network <first bytes of the name>... sha512:<16 hex digits>", exactly 128 bytes. The
  // name's prefix is cut at a UTF-8 character boundary so the comment stays valid text.
  const std::string tail = "... sha512:" + Sha512Hex(network_name).substr(0, 16);
  size_t keep = kMaxCommentBytes - tail.size() - std::string("network ").size();
  while (keep > 0 && (static_cast<unsigned char>(network_name[keep]) & 0xC0) == 0x80) --keep;
  return "network " + network_name.substr(0, keep) + tail;
}

std::vector<Element> ContainerElements(const Config& config, net::Family family) {
  return ElementsOf(NamesFor(config.network_name), config, family);
}

std::vector<Element> ElementsOf(const NetworkNames& names, const Config& config,
                                net::Family family) {
  const auto& container = config.container(family);
  std::vector<Element> out;
  for (const auto& m : config.MappingsFor(family)) {
    Element e;
    e.family = family;
    const std::string proto_port =
        std::string(ProtocolName(m.protocol)) + " . " + std::to_string(m.host_port);
    if (m.has_specific_host_ip()) {
      e.map = names.DnatIp(family);
      e.key = m.host_ip->ToString() + " . " + proto_port;
    } else {
      e.map = names.DnatAny(family);
      e.key = proto_port;
    }
    if (container) {
      e.value = container->address().ToString() + " . " + std::to_string(m.container_port);
    }
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<uint8_t> DnatKey(const PortMapping& mapping) { return KeyAfter(0, mapping); }

std::vector<uint8_t> DnatValue(const net::IpAddress& container, int port) {
  std::vector<uint8_t> value = AddressBytes(container);
  const uint8_t service[] = {static_cast<uint8_t>(port >> 8), static_cast<uint8_t>(port & 0xff), 0,
                             0};
  value.insert(value.end(), std::begin(service), std::end(service));
  return value;
}

ElementWrite HairpinElement(const net::IpPrefix& source, const PortMapping& mapping,
                            const std::string& comment) {
  const net::IpAddress network = source.Network();
  ElementWrite e{.key = KeyAfter(network.byte_length(), mapping), .comment = comment};
  std::copy_n(network.bytes().begin(), network.byte_length(), e.key.begin());
  return e;
}

bool HasSubnetSource(const Config& config) { return config.snat && !config.masq_all; }

std::vector<net::IpPrefix> FixedSourcesOf(const Config& config, net::Family family) {
  if (!config.snat) return {};
  if (config.masq_all) return {EveryAddress(family)};
  if (family == net::Family::kV4) return {Loopback()};
  return {};
}

std::vector<net::IpPrefix> SourcesOf(const Config& config, net::Family family) {
  std::vector<net::IpPrefix> out;
  if (HasSubnetSource(config) && config.container(family)) {
    out.push_back(config.container(family)->Masked());
  }
  for (const auto& fixed : FixedSourcesOf(config, family)) {
    // A container subnet that is a fixed source too (nonsense, but valid) is one element.
    if (std::find(out.begin(), out.end(), fixed) == out.end()) out.push_back(fixed);
  }
  return out;
}

HairpinLengths HairpinLengthsOf(const Config& config) {
  HairpinLengths out;
  for (const auto f : {net::Family::kV4, net::Family::kV6}) {
    if (!config.container(f) || config.MappingsFor(f).empty()) continue;
    for (const auto& source : SourcesOf(config, f)) out.of(f).insert(source.length());
  }
  return out;
}

std::optional<HairpinSetShape> HairpinSetShapeOf(const std::string& network_prefix,
                                                 const std::string& set_name) {
  for (const auto f : {net::Family::kV4, net::Family::kV6}) {
    for (const bool with_ip : {false, true}) {
      const std::string stem = network_prefix + (with_ip ? "_hairpin_ip" : "_hairpin_any") +
                               NetworkNames::Suffix(f) + "_";
      if (set_name.rfind(stem, 0) != 0) continue;
      const std::string digits = set_name.substr(stem.size());
      if (digits.empty() || digits.size() > 3 ||
          digits.find_first_not_of("0123456789") != std::string::npos) {
        continue;
      }
      const int length = std::stoi(digits);
      if (length > (f == net::Family::kV4 ? 32 : 128)) continue;
      return HairpinSetShape{f, with_ip, length};
    }
  }
  return std::nullopt;
}

std::string HairpinText(const net::IpPrefix& source, const Element& element) {
  return source.Network().ToString() + " . " + element.key;
}

size_t Plan::Add(Change change, Role role, std::string subject) {
  steps_.push_back(Step{std::move(change), role, std::move(subject)});
  return steps_.size() - 1;
}

netfilter::NftBatch Plan::ToBatch() const {
  netfilter::NftBatch batch(netfilter::kNfprotoInet, kTable);
  struct Visitor {
    netfilter::NftBatch& b;
    void operator()(const netfilter::NftTable& c) const { b.AddTable(c); }
    void operator()(const netfilter::NftSet& c) const { b.AddSet(c); }
    void operator()(const DeleteSet& c) const { b.DeleteSet(c.name); }
    void operator()(const netfilter::NftChain& c) const { b.AddChain(c); }
    void operator()(const FlushChain& c) const { b.FlushChain(c.chain); }
    void operator()(const netfilter::NftRule& c) const { b.AddRule(c); }
    void operator()(const DeleteRule& c) const {
      b.DeleteRule(c.family, c.table, c.chain, c.handle);
    }
    void operator()(const ElementChange& c) const { b.ChangeElements(c); }
  };
  for (const Step& step : steps_) std::visit(Visitor{batch}, step.change);
  return batch;
}

std::string Describe(const Step& step) {
  struct Visitor {
    std::string operator()(const netfilter::NftTable&) const { return "table"; }
    std::string operator()(const netfilter::NftSet& s) const { return "set " + s.name; }
    std::string operator()(const DeleteSet& s) const { return "delete set " + s.name; }
    std::string operator()(const netfilter::NftChain& c) const { return "chain " + c.name; }
    std::string operator()(const FlushChain& c) const { return "flush chain " + c.chain; }
    // The expressions name what an older kernel may lack: "rule in chain X [ lookup ... ] [...]".
    std::string operator()(const netfilter::NftRule& r) const {
      std::string exprs = netfilter::ExpressionsText(r.exprs);
      std::replace(exprs.begin(), exprs.end(), '\n', ' ');
      while (!exprs.empty() && exprs.back() == ' ') exprs.pop_back();
      return "rule in chain " + r.chain + (exprs.empty() ? "" : " " + exprs);
    }
    std::string operator()(const DeleteRule& r) const {
      return "delete rule " + std::to_string(r.handle) + " of " + r.chain;
    }
    std::string operator()(const ElementChange& c) const { return "elements of " + c.set; }
  };
  return std::visit(Visitor{}, step.change);
}

Error RefusalError(const Plan& plan, const std::vector<netfilter::BatchRefusal>& refusals,
                   const std::string& what) {
  const auto text = [](const netfilter::BatchRefusal& r) {
    return std::string(std::strerror(r.error)) + (r.ext_ack.empty() ? "" : " (" + r.ext_ack + ")");
  };
  for (const auto& r : refusals) {
    const Step& step = plan.steps()[r.change];
    if (step.role == Role::kFeature && (r.error == EOPNOTSUPP || r.error == EINVAL ||
                                        r.error == ENOENT || r.error == EAFNOSUPPORT)) {
      return Error(kErrKernel, "nftables: " + what + ": the kernel lacks " + step.subject + " (" +
                                   Describe(step) + ": " + text(r) + ")");
    }
  }
  if (refusals.empty()) return Error(kErrKernel, "nftables: " + what + ": refused");
  const auto& first = refusals.front();
  return Error(kErrKernel, "nftables: " + what + ": " + Describe(plan.steps()[first.change]) +
                               ": " + text(first));
}

std::vector<HostportsRule> HostportsRules(const Config& config, const HairpinLengths& lengths) {
  const NetworkNames n = NamesFor(config.network_name);
  std::vector<HostportsRule> rules;
  using F = RuleBuilder::Field;
  for (const auto f : {net::Family::kV4, net::Family::kV6}) {
    const Conditions& cond = config.conditions(f);
    // Marked for masquerade: traffic from a source (of each prefix length there is) to a host
    // port it has an element for: a container's subnet to its own host port, localhost or
    // (masqAll) any source to every mapped port.
    for (const int length : config.snat ? lengths.of(f) : std::set<int>{}) {
      RuleBuilder ip, any;
      ip.AddConditions(cond);
      ip.Concat(f, {F::kSaddrMasked, F::kDaddr, F::kL4proto, F::kDport}, length);
      ip.Lookup(n.HairpinIp(f, length));
      ip.SetMark(config.mark());
      rules.push_back(ip.Take());
      any.AddConditions(cond);
      any.Concat(f, {F::kSaddrMasked, F::kL4proto, F::kDport}, length);
      any.Lookup(n.HairpinAny(f, length));
      any.SetMark(config.mark());
      rules.push_back(any.Take());
    }
    RuleBuilder ip, any;
    ip.AddConditions(cond);
    ip.Concat(f, {F::kDaddr, F::kL4proto, F::kDport});
    ip.Lookup(n.DnatIp(f), kReg);
    ip.Dnat(f);
    rules.push_back(ip.Take());
    any.AddConditions(cond);
    any.ExplicitFamily(f);
    any.Concat(f, {F::kL4proto, F::kDport});
    any.Lookup(n.DnatAny(f), kReg);
    any.Dnat(f);
    rules.push_back(any.Take());
  }
  return rules;
}

namespace {

// AppendSets: the table's named sets and maps: owned and netcfg records, the DNAT maps and the
// hairpin sets of each family.
void AppendSets(const NetworkNames& n, const HairpinLengths& lengths, Plan& plan) {
  const auto named = [&](std::string name, uint32_t flags, uint32_t key_type, uint32_t key_len) {
    netfilter::NftSet set;
    set.name = std::move(name);
    set.id = plan.NewSetId();
    set.flags = flags;
    set.key_type = key_type;
    set.key_len = key_len;
    set.userdata = ConcatSetUserData(flags & NFT_SET_MAP);
    return set;
  };
  plan.Add(named(kOwnedSet, 0, Concat({kIfname, kIfname}), 32));
  plan.Add(named(kNetcfgSet, 0, Concat({kIfname, kMark}), 20));
  for (const auto f : {net::Family::kV4, net::Family::kV6}) {
    const uint32_t addr = AddrType(f), len = AddrLen(f);
    for (const bool with_ip : {false, true}) {
      netfilter::NftSet map =
          with_ip ? named(n.DnatIp(f), NFT_SET_MAP, Concat({addr, kProto, kService}), len + 8)
                  : named(n.DnatAny(f), NFT_SET_MAP, Concat({kProto, kService}), 8);
      map.data_type = Concat({addr, kService});
      map.data_len = len + 4;
      plan.Add(std::move(map));
    }
    for (const int length : lengths.of(f)) {
      plan.Add(named(n.HairpinAny(f, length), 0, Concat({addr, kProto, kService}), len + 8));
      plan.Add(
          named(n.HairpinIp(f, length), 0, Concat({addr, addr, kProto, kService}), 2 * len + 8));
    }
  }
}

// AppendChains: the network's chains, emptied, and the base chains' jumps to its hostports
// chain for traffic to the node's own addresses.
void AppendChains(const NetworkNames& n, const std::string& comment, Plan& plan) {
  plan.Add(netfilter::NftChain{.name = n.Hostports(), .hook = std::nullopt, .comment = comment});
  const auto base = [&](const std::string& name, uint32_t hook, int32_t priority) {
    plan.Add(netfilter::NftChain{.name = name,
                                 .hook = netfilter::NftHook{.num = hook,
                                                            .priority = priority,
                                                            .type = "nat",
                                                            .policy = NF_ACCEPT},
                                 .comment = comment},
             Role::kFeature, kFeatureInetNat);
  };
  base(n.Prerouting(), NF_INET_PRE_ROUTING, kPriorityDstnat);
  base(n.Output(), NF_INET_LOCAL_OUT, kPriorityDstnat);
  base(n.Masquerade(), NF_INET_POST_ROUTING, kPrioritySrcnat);
  for (const auto& chain : {n.Prerouting(), n.Output(), n.Hostports(), n.Masquerade()}) {
    plan.Add(FlushChain{chain});
  }
  // Only traffic to the node's own addresses is redirected (GHSA-jv3w-x3r3-g6rm).
  for (const auto& chain : {n.Prerouting(), n.Output()}) {
    plan.Add(
        netfilter::NftRule{.chain = chain,
                           .exprs = {expr::Fib{NFTA_FIB_F_DADDR, NFT_FIB_RESULT_ADDRTYPE, kReg},
                                     expr::Cmp{kReg, NFT_CMP_EQ, HostU32(RTN_LOCAL)},
                                     expr::Verdict{NFT_JUMP, n.Hostports()}},
                           .comment = {}},
        Role::kFeature, kFeatureFib);
  }
}

// AppendHostportsRules: the hostports chain's rules, each `{ ... }` of their conditions an
// anonymous set made just before the rule.
void AppendHostportsRules(const Config& config, const HairpinLengths& lengths,
                          const NetworkNames& n, Plan& plan) {
  for (auto& rule : HostportsRules(config, lengths)) {
    for (auto& [lookup, set] : rule.sets) {
      netfilter::NftSet anonymous;
      anonymous.name = "__set%d";
      anonymous.id = plan.NewSetId();
      anonymous.flags = set.flags;
      anonymous.key_type = set.key_type;
      anonymous.key_len = set.key_len;
      anonymous.size = static_cast<uint32_t>(set.elements.size());
      netfilter::UserData u;
      u.PutU32(kUdataKeyByteorder, set.key_byteorder);
      if (set.flags & NFT_SET_INTERVAL) u.PutU32(kUdataMerge, 1);
      anonymous.userdata = u.bytes();
      const uint32_t id = anonymous.id;
      plan.Add(std::move(anonymous));
      plan.Add(ElementChange{ElementVerb::kAdd, "__set%d", set.elements, id});
      std::get<expr::Lookup>(rule.exprs[lookup]).set_id = id;
    }
    plan.Add(
        netfilter::NftRule{.chain = n.Hostports(), .exprs = std::move(rule.exprs), .comment = {}});
  }
}

}  // namespace

void AppendSetup(const Config& config, const HairpinLengths& lengths, Plan& plan) {
  const NetworkNames n = NamesFor(config.network_name);
  plan.Add(netfilter::NftTable{.comment = kTableComment});
  AppendSets(n, lengths, plan);
  AppendChains(n, NetworkComment(config.network_name), plan);
  AppendHostportsRules(config, lengths, n, plan);
  if (config.snat) {
    const Bytes mark = HostU32(config.mark());
    plan.Add(netfilter::NftRule{
        .chain = n.Masquerade(),
        .exprs = {expr::Meta{NFT_META_MARK, kReg}, expr::Bitwise{kReg, kReg, mark, Bytes(4, 0)},
                  expr::Cmp{kReg, NFT_CMP_EQ, mark}, expr::Masquerade{}},
        .comment = {}});
  }
  // AppendDropOtherConfigs deletes this network's records of other configs (from a read).
  plan.Add(
      ElementChange{ElementVerb::kAdd, kNetcfgSet, {NetcfgWrite(n.prefix, ConfigHash(config))}});
}

std::vector<uint32_t> NetcfgHashes(const std::string& prefix,
                                   const std::vector<netfilter::SetElement>& elements) {
  const Bytes name = netfilter::IfnameKey({prefix});
  std::vector<uint32_t> out;
  for (const auto& e : elements) {
    if (e.key.size() != name.size() + 4 || !std::equal(name.begin(), name.end(), e.key.begin())) {
      continue;
    }
    uint32_t hash = 0;
    std::memcpy(&hash, e.key.data() + name.size(), 4);
    out.push_back(hash);
  }
  return out;
}

void AppendDropOtherConfigs(const Config& config, const std::vector<uint32_t>& hashes, Plan& plan) {
  const std::string prefix = NamesFor(config.network_name).prefix;
  for (const uint32_t hash : hashes) {
    if (hash == ConfigHash(config)) continue;
    plan.Add(ElementChange{ElementVerb::kDelete, kNetcfgSet, {NetcfgWrite(prefix, hash)}});
  }
}

std::vector<net::IpPrefix> LegacyHairpinPrefixes(const std::vector<netfilter::SetElement>& elements,
                                                 net::Family family) {
  // An rbtree interval set: each range is its start, then an element flagged as an end holding
  // the value after it (none when the range runs to the family's last address).
  std::vector<net::IpPrefix> out;
  const size_t len = AddrLen(family);
  std::vector<std::pair<Bytes, bool>> points;
  for (const auto& e : elements) {
    if (e.key.size() != len) continue;
    points.emplace_back(e.key, (e.flags & NFT_SET_ELEM_INTERVAL_END) != 0);
  }
  std::sort(points.begin(), points.end());
  for (size_t i = 0; i < points.size(); ++i) {
    if (points[i].second) continue;
    const net::IpAddress start = net::IpAddress::FromBytes(family, points[i].first.data());
    std::optional<net::IpAddress> after;
    if (i + 1 < points.size() && points[i + 1].second) {
      after = net::IpAddress::FromBytes(family, points[i + 1].first.data());
    }
    // The largest prefix starting at `start` that ends right before `after`.
    for (int length = start.bit_length(); length >= 0; --length) {
      const net::IpPrefix p(start, length);
      if (p.Network() != start) break;
      const net::IpAddress last = p.LastAddress();
      const bool fits = after ? last < *after : true;
      const bool exact = after ? last.Next() == *after : last.Next().IsZero();
      if (!fits) break;
      if (exact) {
        out.push_back(p);
        break;
      }
    }
  }
  return out;
}

std::vector<ElementChange> MigrateLegacyHairpin(const std::string& network_name,
                                                const std::vector<ListedElement>& dnat,
                                                const std::vector<net::IpPrefix>& legacy_v4,
                                                const std::vector<net::IpPrefix>& legacy_v6,
                                                HairpinLengths& lengths) {
  const NetworkNames names = NamesFor(network_name);
  std::vector<ElementChange> out;
  for (const auto& listed : dnat) {
    const auto shape = DnatMapShapeOf(listed.set);
    if (!shape) continue;
    const auto address = DnatValueAddress(listed.element.data, shape->family);
    if (!address) continue;
    const auto& legacy = shape->family == net::Family::kV4 ? legacy_v4 : legacy_v6;
    const auto subnet = std::find_if(legacy.begin(), legacy.end(),
                                     [&](const net::IpPrefix& p) { return p.Contains(*address); });
    if (subnet == legacy.end()) continue;
    const int length = subnet->length();
    lengths.of(shape->family).insert(length);
    const std::string set = shape->with_host_ip ? names.HairpinIp(shape->family, length)
                                                : names.HairpinAny(shape->family, length);
    ElementWrite e{.key = AddressBytes(subnet->Network()), .comment = listed.element.comment};
    e.key.insert(e.key.end(), listed.element.key.begin(), listed.element.key.end());
    auto change =
        std::find_if(out.begin(), out.end(), [&](const ElementChange& c) { return c.set == set; });
    if (change == out.end())
      change = out.insert(out.end(), ElementChange{ElementVerb::kAdd, set, {}});
    change->elements.push_back(std::move(e));
  }
  return out;
}

std::vector<ElementChange> FollowFixedSources(const Config& config,
                                              const std::vector<ListedElement>& dnat,
                                              const std::vector<ListedElement>& hairpin,
                                              HairpinLengths& lengths) {
  const NetworkNames names = NamesFor(config.network_name);
  std::vector<ElementChange> out;
  const auto change_of = [&](ElementVerb verb, const std::string& set) -> ElementChange& {
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const ElementChange& c) { return c.verb == verb && c.set == set; });
    if (it == out.end()) it = out.insert(out.end(), ElementChange{verb, set, {}});
    return *it;
  };
  std::set<std::pair<std::string, Bytes>> present;
  for (const auto& listed : hairpin) {
    present.emplace(listed.set, listed.element.key);
    const auto shape = HairpinSetShapeOf(names.prefix, listed.set);
    if (!shape) continue;
    const std::vector<net::IpPrefix> wanted = FixedSourcesOf(config, shape->family);
    for (const auto& fixed : {Loopback(), EveryAddress(shape->family)}) {
      const Bytes network = AddressBytes(fixed.Network());
      const bool is_fixed = fixed.family() == shape->family && fixed.length() == shape->length &&
                            listed.element.key.size() > network.size() &&
                            std::equal(network.begin(), network.end(), listed.element.key.begin());
      if (is_fixed && std::find(wanted.begin(), wanted.end(), fixed) == wanted.end()) {
        change_of(ElementVerb::kDelete, listed.set).elements.push_back({.key = listed.element.key});
        break;
      }
    }
  }
  for (const auto& listed : dnat) {
    const auto shape = DnatMapShapeOf(listed.set);
    if (!shape) continue;
    for (const auto& source : FixedSourcesOf(config, shape->family)) {
      lengths.of(shape->family).insert(source.length());
      const std::string set = shape->with_host_ip
                                  ? names.HairpinIp(shape->family, source.length())
                                  : names.HairpinAny(shape->family, source.length());
      ElementWrite e{.key = AddressBytes(source.Network()), .comment = listed.element.comment};
      e.key.insert(e.key.end(), listed.element.key.begin(), listed.element.key.end());
      if (present.contains({set, e.key})) continue;
      change_of(ElementVerb::kAdd, set).elements.push_back(std::move(e));
    }
  }
  return out;
}

void AppendAdd(const Config& config, bool assert_netcfg, bool create_markers, Plan& plan) {
  const NetworkNames names = NamesFor(config.network_name);
  const std::string owner = OwnerTag(config.network_name, config.container_id);
  const std::string comment = ElementComment(config.container_id);
  if (assert_netcfg) {
    // Present only when the chains were written for exactly this config: the delete is
    // refused (ENOENT) otherwise, and the add puts it back.
    const ElementWrite record = NetcfgWrite(names.prefix, ConfigHash(config));
    plan.Add(ElementChange{ElementVerb::kDelete, kNetcfgSet, {record}}, Role::kNetcfg);
    plan.Add(ElementChange{ElementVerb::kAdd, kNetcfgSet, {record}});
  }
  for (const auto f : {net::Family::kV4, net::Family::kV6}) {
    const auto& container = config.container(f);
    if (!container) continue;
    plan.Add(ElementChange{create_markers ? ElementVerb::kCreate : ElementVerb::kAdd,
                           kOwnedSet,
                           {OwnedWrite(owner, FamilyMarker(f))}},
             Role::kMarker);
    const std::vector<PortMapping> mappings = config.MappingsFor(f);
    const std::vector<Element> elements = ElementsOf(names, config, f);
    if (elements.empty()) continue;
    ElementChange records{ElementVerb::kAdd, kOwnedSet, {}};
    for (const auto& e : elements) records.elements.push_back(OwnedWrite(owner, e.Tag()));
    plan.Add(std::move(records));
    std::vector<std::string> maps, keys;
    for (const auto& e : elements) {
      maps.push_back(e.map);
      keys.push_back(e.key);
    }
    std::vector<std::string> first_keys;
    // Created, not added: the kernel takes an add of a key that is there with the same data as
    // no error, and the element would stay the other container's (its comment), for its DEL
    // or GC to take away. A re-ADD deletes its own elements earlier in the same batch.
    auto changes = ChangesPerSet(
        ElementVerb::kCreate, maps,
        [&](size_t i) {
          return ElementWrite{.key = DnatKey(mappings[i]),
                              .data = DnatValue(container->address(), mappings[i].container_port),
                              .comment = comment};
        },
        &first_keys, &keys);
    for (size_t c = 0; c < changes.size(); ++c) {
      const bool one = changes[c].elements.size() == 1;
      plan.Add(std::move(changes[c]), Role::kElement, one ? first_keys[c] : std::string());
    }
    for (auto& change :
         HairpinChanges(ElementVerb::kAdd, names, f, SourcesOf(config, f), mappings, comment)) {
      plan.Add(std::move(change), Role::kHairpin);
    }
  }
}

bool AppendDelete(const Config& config, const std::vector<net::Family>& families, Plan& plan) {
  const NetworkNames names = NamesFor(config.network_name);
  const std::string owner = OwnerTag(config.network_name, config.container_id);
  Plan out;
  for (const auto f : families) {
    const std::vector<PortMapping> mappings = config.MappingsFor(f);
    if (mappings.empty()) return false;
    if (HasSubnetSource(config) && !config.container(f)) return false;
    out.Add(ElementChange{ElementVerb::kDelete, kOwnedSet, {OwnedWrite(owner, FamilyMarker(f))}},
            Role::kMarker);
    const std::vector<Element> elements = ElementsOf(names, config, f);
    ElementChange records{ElementVerb::kDelete, kOwnedSet, {}};
    for (const auto& e : elements) records.elements.push_back(OwnedWrite(owner, e.Tag()));
    out.Add(std::move(records));
    std::vector<std::string> maps;
    for (const auto& e : elements) maps.push_back(e.map);
    for (auto& change : ChangesPerSet(ElementVerb::kDelete, maps, [&](size_t i) {
           return ElementWrite{.key = DnatKey(mappings[i])};
         })) {
      out.Add(std::move(change), Role::kElement);
    }
    for (auto& change :
         HairpinChanges(ElementVerb::kDelete, names, f, SourcesOf(config, f), mappings, "")) {
      out.Add(std::move(change), Role::kHairpin);
    }
  }
  for (const Step& step : out.steps()) plan.Add(step.change, step.role, step.subject);
  return true;
}

std::optional<DnatMapShape> DnatMapShapeOf(const std::string& name) {
  for (const auto family : {net::Family::kV4, net::Family::kV6}) {
    const std::string suffix = NetworkNames::Suffix(family);
    if (!name.ends_with(suffix)) continue;
    const std::string stem = name.substr(0, name.size() - suffix.size());
    if (stem.ends_with("_dnat_any")) return DnatMapShape{family, false};
    if (stem.ends_with("_dnat_ip")) return DnatMapShape{family, true};
  }
  return std::nullopt;
}

std::optional<net::IpAddress> DnatValueAddress(const std::vector<uint8_t>& data,
                                               net::Family family) {
  if (data.size() != AddrLen(family) + 4) return std::nullopt;
  return net::IpAddress::FromBytes(family, data.data());
}

std::vector<std::string> RecordTagsOf(const std::string& owner,
                                      const std::vector<netfilter::SetElement>& owned) {
  const Bytes prefix = netfilter::IfnameKey({owner});
  std::vector<std::string> out;
  for (const auto& e : owned) {
    if (e.key.size() != 2 * prefix.size() ||
        !std::equal(prefix.begin(), prefix.end(), e.key.begin())) {
      continue;
    }
    const auto* tag = reinterpret_cast<const char*>(e.key.data() + prefix.size());
    const std::string text(tag, strnlen(tag, prefix.size()));
    if (text != FamilyMarker(net::Family::kV4) && text != FamilyMarker(net::Family::kV6)) {
      out.push_back(text);
    }
  }
  return out;
}

void AppendForget(const std::string& owner, const std::vector<ListedElement>& elements,
                  const std::vector<std::string>& record_tags,
                  const std::vector<net::Family>& markers, Plan& plan) {
  ElementChange add_records{ElementVerb::kAdd, kOwnedSet, {}};
  for (const auto f : markers) add_records.elements.push_back(OwnedWrite(owner, FamilyMarker(f)));
  for (const auto& tag : record_tags) add_records.elements.push_back(OwnedWrite(owner, tag));
  if (!add_records.elements.empty()) {
    ElementChange delete_records = add_records;
    delete_records.verb = ElementVerb::kDelete;
    plan.Add(std::move(add_records));
    plan.Add(std::move(delete_records));
  }
  std::vector<ElementChange> changes;
  for (const auto& listed : elements) {
    auto it = std::find_if(changes.begin(), changes.end(),
                           [&](const ElementChange& c) { return c.set == listed.set; });
    if (it == changes.end())
      it = changes.insert(changes.end(), ElementChange{ElementVerb::kDelete, listed.set, {}});
    it->elements.push_back(
        ElementWrite{.key = listed.element.key, .key_end = listed.element.key_end});
  }
  for (auto& change : changes) plan.Add(std::move(change));
}

std::vector<Expected> ExpectedObjects(const Config& config) {
  const NetworkNames names = NamesFor(config.network_name);
  const std::string owner = OwnerTag(config.network_name, config.container_id);
  std::vector<Expected> out;
  out.push_back({kNetcfgSet,
                 NetcfgWrite(names.prefix, ConfigHash(config)).key,
                 {},
                 "the chains of network " + config.network_name + " for this configuration"});
  for (const auto f : {net::Family::kV4, net::Family::kV6}) {
    const auto& container = config.container(f);
    if (!container) continue;
    out.push_back({kOwnedSet,
                   OwnedWrite(owner, FamilyMarker(f)).key,
                   {},
                   "the ownership marker of the container"});
    const std::vector<PortMapping> mappings = config.MappingsFor(f);
    const std::vector<Element> elements = ElementsOf(names, config, f);
    for (size_t i = 0; i < mappings.size(); ++i) {
      const Element& e = elements[i];
      out.push_back({e.map, DnatKey(mappings[i]),
                     DnatValue(container->address(), mappings[i].container_port),
                     "element " + e.key + " in map " + e.map});
      out.push_back(
          {kOwnedSet, OwnedWrite(owner, e.Tag()).key, {}, "the ownership record of " + e.key});
      for (const auto& source : SourcesOf(config, f)) {
        const std::string set = HairpinSetOf(names, mappings[i], f, source.length());
        out.push_back({set,
                       HairpinElement(source, mappings[i], "").key,
                       {},
                       "hairpin element " + HairpinText(source, e) + " in set " + set});
      }
    }
  }
  return out;
}

std::vector<ChainRuleCount> NetworkChainRuleCounts(const Config& config,
                                                   const HairpinLengths& lengths) {
  const NetworkNames n = NamesFor(config.network_name);
  return {{n.Prerouting(), 1},
          {n.Output(), 1},
          {n.Hostports(), HostportsRules(config, lengths).size()},
          {n.Masquerade(), config.snat ? 1u : 0u}};
}

size_t AppendReferenceLeftovers(uint8_t family, const std::vector<netfilter::RuleRecord>& rules,
                                const std::string& container_id, Plan& plan) {
  size_t count = 0;
  for (const auto& rule : rules) {
    const bool reference_chain =
        std::any_of(std::begin(kReferenceChains), std::end(kReferenceChains),
                    [&](const char* c) { return rule.chain == c; });
    if (!reference_chain || netfilter::UserDataComment(rule.userdata) != container_id) continue;
    plan.Add(DeleteRule{family, kTable, rule.chain, rule.handle});
    ++count;
  }
  return count;
}

}  // namespace nodegate::portmap::nft
