#include "plugins/portmap/iptables/legacy/encode.h"

#include <arpa/inet.h>
extern "C" {  // libip6tc.h lacks its own C linkage block
#include <libiptc/libip6tc.h>
}
#include <libiptc/libiptc.h>
#include <linux/netfilter/nf_nat.h>
#include <linux/netfilter/x_tables.h>
#include <linux/netfilter/xt_addrtype.h>
#include <linux/netfilter/xt_comment.h>
#include <linux/netfilter/xt_mark.h>
#include <linux/netfilter/xt_multiport.h>
// xt_sctp.h has C-only inline helpers.
#define _Bool bool
#include <linux/netfilter/xt_sctp.h>
#undef _Bool
#undef bytes
#include <linux/netfilter/xt_tcpudp.h>

#include <cstring>

namespace nodegate::portmap::ipt {
namespace {

// Appends an aligned extension block (match or target): a 32-byte header with size, name and
// revision, then `data` padded to XT_ALIGN.
void AppendExtension(std::vector<uint8_t>& blob, const char* name, uint8_t revision,
                     const void* data, size_t data_size) {
  const size_t header = XT_ALIGN(sizeof(xt_entry_match));
  const size_t total = header + XT_ALIGN(data_size);
  const size_t start = blob.size();
  blob.resize(start + total, 0);
  auto* m = reinterpret_cast<xt_entry_match*>(blob.data() + start);
  m->u.user.match_size = static_cast<uint16_t>(total);
  std::strncpy(m->u.user.name, name, sizeof(m->u.user.name) - 1);
  m->u.user.revision = revision;
  if (data_size > 0) {
    std::memcpy(blob.data() + start + header, data, data_size);
  }
}

uint16_t Port(int port) { return static_cast<uint16_t>(port); }

struct MatchEncoder {
  std::vector<uint8_t>& blob;
  void operator()(const CommentMatch& m) {
    xt_comment_info info{};
    std::strncpy(info.comment, m.text.c_str(), XT_MAX_COMMENT_LEN - 1);
    AppendExtension(blob, "comment", 0, &info, sizeof(info));
  }
  void operator()(const PortMatch& m) {
    switch (m.protocol) {
      case Protocol::kTcp: {
        xt_tcp info{};
        info.spts[0] = 0;
        info.spts[1] = 0xffff;
        info.dpts[0] = info.dpts[1] = Port(m.dport);
        AppendExtension(blob, "tcp", 0, &info, sizeof(info));
        break;
      }
      case Protocol::kUdp: {
        xt_udp info{};
        info.spts[1] = 0xffff;
        info.dpts[0] = info.dpts[1] = Port(m.dport);
        AppendExtension(blob, "udp", 0, &info, sizeof(info));
        break;
      }
      case Protocol::kSctp: {
        // As iptables writes it: source ports left at 0..0 (only XT_SCTP_DEST_PORTS is set)
        // and every chunk-flag slot marked unused (0xff), so -C and -D find the rule.
        xt_sctp_info info{};
        info.dpts[0] = info.dpts[1] = Port(m.dport);
        for (auto& flag : info.flag_info) flag.chunktype = 0xff;
        info.flags = XT_SCTP_DEST_PORTS;
        AppendExtension(blob, "sctp", 0, &info, sizeof(info));
        break;
      }
    }
  }
  void operator()(const MultiportMatch& m) {
    xt_multiport_v1 info{};
    info.flags = XT_MULTIPORT_DESTINATION;
    info.count = static_cast<uint8_t>(m.dports.size());
    for (size_t i = 0; i < m.dports.size() && i < XT_MULTI_PORTS; ++i) {
      info.ports[i] = Port(m.dports[i]);
    }
    AppendExtension(blob, "multiport", 1, &info, sizeof(info));
  }
  void operator()(const AddrtypeLocalMatch&) {
    xt_addrtype_info_v1 info{};
    info.dest = XT_ADDRTYPE_LOCAL;
    AppendExtension(blob, "addrtype", 1, &info, sizeof(info));
  }
  void operator()(const MarkMatch& m) {
    xt_mark_mtinfo1 info{};
    info.mark = m.mark;
    info.mask = m.mask;
    AppendExtension(blob, "mark", 1, &info, sizeof(info));
  }
};

struct TargetEncoder {
  std::vector<uint8_t>& blob;
  net::Family family;
  void operator()(const JumpTarget& t) {
    // libiptc resolves the chain name into a jump offset on commit.
    int verdict = 0;
    AppendExtension(blob, t.chain.c_str(), 0, &verdict, sizeof(verdict));
  }
  void operator()(const SetMarkTarget& t) {
    xt_mark_tginfo2 info{};
    info.mark = t.value;
    info.mask = t.mask;
    AppendExtension(blob, "MARK", 2, &info, sizeof(info));
  }
  void operator()(const MasqueradeTarget&) {
    if (family == net::Family::kV4) {
      nf_nat_ipv4_multi_range_compat info{};
      info.rangesize = 1;
      AppendExtension(blob, "MASQUERADE", 0, &info, sizeof(info));
    } else {
      nf_nat_range info{};
      AppendExtension(blob, "MASQUERADE", 0, &info, sizeof(info));
    }
  }
  void operator()(const DnatTarget& t) {
    nf_nat_range2 info{};
    info.flags = NF_NAT_RANGE_MAP_IPS | NF_NAT_RANGE_PROTO_SPECIFIED;
    const auto& bytes = t.address.bytes();
    std::memcpy(&info.min_addr, bytes.data(), static_cast<size_t>(t.address.byte_length()));
    std::memcpy(&info.max_addr, bytes.data(), static_cast<size_t>(t.address.byte_length()));
    info.min_proto.all = info.max_proto.all = htons(Port(t.port));
    AppendExtension(blob, "DNAT", 2, &info, sizeof(info));
  }
};

void FillIface(const std::string& name, char* out, unsigned char* mask) {
  if (name.empty()) {
    return;
  }
  std::strncpy(out, name.c_str(), IFNAMSIZ - 1);
  // iptables' rule: "eth+" matches every name starting with "eth".
  if (name.back() == '+') {
    std::memset(mask, 0xff, name.size() - 1);
  } else {
    std::memset(mask, 0xff, name.size() + 1);
  }
}

void PrefixMask(const net::IpPrefix& prefix, uint8_t* addr, uint8_t* mask) {
  const auto network = prefix.Network();
  const int bytes = network.byte_length();
  std::memcpy(addr, network.bytes().data(), static_cast<size_t>(bytes));
  for (int i = 0; i < bytes; ++i) {
    int bits = prefix.length() - i * 8;
    bits = bits < 0 ? 0 : (bits > 8 ? 8 : bits);
    mask[i] = static_cast<uint8_t>(bits == 0 ? 0 : (0xff << (8 - bits)) & 0xff);
  }
}

template <typename Entry>
void FillHeader(const Header& h, Entry* e, net::Family family) {
  auto& ip = [&]() -> auto& {
    if constexpr (std::is_same_v<Entry, ipt_entry>) {
      return e->ip;
    } else {
      return e->ipv6;
    }
  }
  ();
  uint8_t inv = 0;
  if (h.src) {
    PrefixMask(*h.src, reinterpret_cast<uint8_t*>(&ip.src), reinterpret_cast<uint8_t*>(&ip.smsk));
    if (h.src_invert) inv |= IPT_INV_SRCIP;
  }
  if (h.dst) {
    PrefixMask(*h.dst, reinterpret_cast<uint8_t*>(&ip.dst), reinterpret_cast<uint8_t*>(&ip.dmsk));
    if (h.dst_invert) inv |= IPT_INV_DSTIP;
  }
  FillIface(h.in_iface, ip.iniface, ip.iniface_mask);
  if (!h.in_iface.empty() && h.in_invert) inv |= IPT_INV_VIA_IN;
  FillIface(h.out_iface, ip.outiface, ip.outiface_mask);
  if (!h.out_iface.empty() && h.out_invert) inv |= IPT_INV_VIA_OUT;
  if (h.protocol) {
    ip.proto = static_cast<uint16_t>(ProtocolNumber(*h.protocol));
    if (family == net::Family::kV6) {
      // ip6tables only looks at the protocol field with this flag.
      if constexpr (!std::is_same_v<Entry, ipt_entry>) {
        ip.flags |= IP6T_F_PROTO;
      }
    }
  }
  ip.invflags = inv;
}

template <typename Entry>
std::vector<uint8_t> Encode(const Rule& rule, net::Family family) {
  std::vector<uint8_t> blob(sizeof(Entry), 0);
  for (const auto& m : rule.matches) {
    std::visit(MatchEncoder{blob}, m);
  }
  const size_t target_offset = blob.size();
  std::visit(TargetEncoder{blob, family}, rule.target);
  auto* e = reinterpret_cast<Entry*>(blob.data());
  FillHeader(rule.header, e, family);
  e->target_offset = static_cast<uint16_t>(target_offset);
  e->next_offset = static_cast<uint16_t>(blob.size());
  return blob;
}

template <typename Entry>
struct Offsets {
  static uint16_t Target(const uint8_t* p) {
    return reinterpret_cast<const Entry*>(p)->target_offset;
  }
  static uint16_t Next(const uint8_t* p) { return reinterpret_cast<const Entry*>(p)->next_offset; }
};

size_t IpHeaderSize(net::Family family) {
  return family == net::Family::kV4 ? sizeof(ipt_ip) : sizeof(ip6t_ip6);
}

}  // namespace

size_t EntryHeaderSize(net::Family family) {
  return family == net::Family::kV4 ? sizeof(ipt_entry) : sizeof(ip6t_entry);
}

std::vector<uint8_t> EncodeRule(const Rule& rule, net::Family family) {
  return family == net::Family::kV4 ? Encode<ipt_entry>(rule, family)
                                    : Encode<ip6t_entry>(rule, family);
}

std::string TargetName(const Rule& rule) {
  struct Namer {
    std::string operator()(const JumpTarget& t) const { return t.chain; }
    std::string operator()(const SetMarkTarget&) const { return "MARK"; }
    std::string operator()(const MasqueradeTarget&) const { return "MASQUERADE"; }
    std::string operator()(const DnatTarget&) const { return "DNAT"; }
  };
  return std::visit(Namer{}, rule.target);
}

bool SameRule(const uint8_t* existing, const std::string& existing_target,
              const std::vector<uint8_t>& wanted, const std::string& wanted_target,
              net::Family family) {
  if (existing_target != wanted_target) {
    return false;
  }
  const bool v4 = family == net::Family::kV4;
  const uint16_t e_target =
      v4 ? Offsets<ipt_entry>::Target(existing) : Offsets<ip6t_entry>::Target(existing);
  const uint16_t e_next =
      v4 ? Offsets<ipt_entry>::Next(existing) : Offsets<ip6t_entry>::Next(existing);
  const uint16_t w_target =
      v4 ? Offsets<ipt_entry>::Target(wanted.data()) : Offsets<ip6t_entry>::Target(wanted.data());
  const uint16_t w_next =
      v4 ? Offsets<ipt_entry>::Next(wanted.data()) : Offsets<ip6t_entry>::Next(wanted.data());
  if (e_target != w_target || e_next != w_next) {
    return false;
  }
  if (std::memcmp(existing, wanted.data(), IpHeaderSize(family)) != 0) {
    return false;
  }
  // Matches one by one: the kernel returns names without clearing the bytes after the NUL,
  // so names compare as strings and only sizes, revisions and data compare as bytes.
  size_t offset = EntryHeaderSize(family);
  while (offset < e_target) {
    const auto* a = reinterpret_cast<const xt_entry_match*>(existing + offset);
    const auto* b = reinterpret_cast<const xt_entry_match*>(wanted.data() + offset);
    const uint16_t size = a->u.match_size;
    if (size < sizeof(xt_entry_match) || size != b->u.match_size || offset + size > e_target ||
        std::strncmp(a->u.user.name, b->u.user.name, sizeof(a->u.user.name)) != 0 ||
        a->u.user.revision != b->u.user.revision ||
        std::memcmp(a->data, b->data, size - sizeof(xt_entry_match)) != 0) {
      return false;
    }
    offset += size;
  }
  // Jumps are represented by libiptc internally; the name comparison above covers them.
  const auto* target = reinterpret_cast<const xt_entry_target*>(wanted.data() + w_target);
  const std::string_view name(target->u.user.name);
  const bool is_jump = name != "MARK" && name != "MASQUERADE" && name != "DNAT";
  if (is_jump) {
    return true;
  }
  const auto* e_t = reinterpret_cast<const xt_entry_target*>(existing + e_target);
  if (e_t->u.user.revision != target->u.user.revision) {
    return false;
  }
  const size_t data = XT_ALIGN(sizeof(xt_entry_target));
  return std::memcmp(existing + e_target + data, wanted.data() + w_target + data,
                     w_next - w_target - data) == 0;
}

std::string EntryCommentText(const uint8_t* entry, net::Family family) {
  const bool v4 = family == net::Family::kV4;
  const uint16_t target =
      v4 ? Offsets<ipt_entry>::Target(entry) : Offsets<ip6t_entry>::Target(entry);
  size_t offset = EntryHeaderSize(family);
  while (offset + sizeof(xt_entry_match) <= target) {
    const auto* m = reinterpret_cast<const xt_entry_match*>(entry + offset);
    if (m->u.match_size == 0) {
      break;
    }
    if (std::strncmp(m->u.user.name, "comment", sizeof(m->u.user.name)) == 0) {
      const auto* info = reinterpret_cast<const xt_comment_info*>(m->data);
      return std::string(info->comment, strnlen(info->comment, XT_MAX_COMMENT_LEN));
    }
    offset += m->u.match_size;
  }
  return "";
}

}  // namespace nodegate::portmap::ipt

namespace nodegate::portmap::ipt {
namespace {

std::optional<Protocol> ProtocolOfNumber(int number) {
  if (number == 6) return Protocol::kTcp;
  if (number == 17) return Protocol::kUdp;
  if (number == 132) return Protocol::kSctp;
  return std::nullopt;
}

int MaskLength(const uint8_t* mask, int bytes) {
  int length = 0;
  for (int i = 0; i < bytes; ++i) length += __builtin_popcount(mask[i]);
  return length;
}

// -d and -p of an entry's header.
template <typename Entry>
Header ListedHeader(const uint8_t* entry, net::Family family) {
  const auto* e = reinterpret_cast<const Entry*>(entry);
  Header h;
  const auto& ip = [&]() -> const auto& {
    if constexpr (std::is_same_v<Entry, ipt_entry>) {
      return e->ip;
    } else {
      return e->ipv6;
    }
  }
  ();
  const int bytes = family == net::Family::kV4 ? 4 : 16;
  const auto* mask = reinterpret_cast<const uint8_t*>(&ip.dmsk);
  if (const int length = MaskLength(mask, bytes); length > 0) {
    const auto address =
        net::IpAddress::FromBytes(family, reinterpret_cast<const uint8_t*>(&ip.dst));
    h.dst = net::IpPrefix(address, length);
    h.dst_invert = (ip.invflags & IPT_INV_DSTIP) != 0;
  }
  h.protocol = ProtocolOfNumber(ip.proto);
  return h;
}

std::optional<Match> ListedMatch(const xt_entry_match* m) {
  const std::string_view name(m->u.user.name, strnlen(m->u.user.name, sizeof(m->u.user.name)));
  const size_t data = m->u.match_size - sizeof(xt_entry_match);
  const auto fits = [&](size_t size) { return data >= size; };
  if (name == "comment" && fits(sizeof(xt_comment_info))) {
    const auto* info = reinterpret_cast<const xt_comment_info*>(m->data);
    return CommentMatch{std::string(info->comment, strnlen(info->comment, XT_MAX_COMMENT_LEN))};
  }
  if (name == "tcp" && fits(sizeof(xt_tcp))) {
    return PortMatch{Protocol::kTcp, reinterpret_cast<const xt_tcp*>(m->data)->dpts[0]};
  }
  if (name == "udp" && fits(sizeof(xt_udp))) {
    return PortMatch{Protocol::kUdp, reinterpret_cast<const xt_udp*>(m->data)->dpts[0]};
  }
  if (name == "sctp" && fits(sizeof(xt_sctp_info))) {
    return PortMatch{Protocol::kSctp, reinterpret_cast<const xt_sctp_info*>(m->data)->dpts[0]};
  }
  if (name == "multiport" && m->u.user.revision == 1 && fits(sizeof(xt_multiport_v1))) {
    const auto* info = reinterpret_cast<const xt_multiport_v1*>(m->data);
    MultiportMatch out;
    for (unsigned i = 0; i < info->count && i < XT_MULTI_PORTS; ++i) {
      out.dports.push_back(info->ports[i]);
    }
    return out;
  }
  return std::nullopt;
}

// DNAT revisions 0 (IPv4 only), 1 and 2: the first address and port of the range.
std::optional<DnatTarget> ListedDnat(const xt_entry_target* t, net::Family family) {
  const size_t data = t->u.target_size - sizeof(xt_entry_target);
  if (t->u.user.revision == 0 && family == net::Family::kV4) {
    if (data < sizeof(nf_nat_ipv4_multi_range_compat)) return std::nullopt;
    const auto* info = reinterpret_cast<const nf_nat_ipv4_multi_range_compat*>(t->data);
    const auto* addr = reinterpret_cast<const uint8_t*>(&info->range[0].min_ip);
    return DnatTarget{net::IpAddress::FromBytes(family, addr), ntohs(info->range[0].min.all)};
  }
  if (data < sizeof(nf_nat_range)) return std::nullopt;
  const auto* info = reinterpret_cast<const nf_nat_range*>(t->data);  // a prefix of range2
  const auto* addr = reinterpret_cast<const uint8_t*>(&info->min_addr);
  return DnatTarget{net::IpAddress::FromBytes(family, addr), ntohs(info->min_proto.all)};
}

}  // namespace

std::optional<Rule> DecodeEntryForListing(const uint8_t* entry, const std::string& target,
                                          net::Family family) {
  const bool v4 = family == net::Family::kV4;
  const uint16_t target_offset =
      v4 ? Offsets<ipt_entry>::Target(entry) : Offsets<ip6t_entry>::Target(entry);
  const uint16_t next = v4 ? Offsets<ipt_entry>::Next(entry) : Offsets<ip6t_entry>::Next(entry);
  if (target_offset < EntryHeaderSize(family) || next < target_offset + sizeof(xt_entry_target)) {
    return std::nullopt;
  }
  Rule rule;
  rule.header =
      v4 ? ListedHeader<ipt_entry>(entry, family) : ListedHeader<ip6t_entry>(entry, family);
  for (size_t offset = EntryHeaderSize(family); offset + sizeof(xt_entry_match) <= target_offset;) {
    const auto* m = reinterpret_cast<const xt_entry_match*>(entry + offset);
    if (m->u.match_size < sizeof(xt_entry_match) || offset + m->u.match_size > target_offset) {
      return std::nullopt;
    }
    if (auto match = ListedMatch(m)) rule.matches.push_back(std::move(*match));
    offset += m->u.match_size;
  }
  rule.target = JumpTarget{target};
  if (target == "DNAT") {
    const auto* t = reinterpret_cast<const xt_entry_target*>(entry + target_offset);
    auto dnat = ListedDnat(t, family);
    if (!dnat) return std::nullopt;
    rule.target = *dnat;
  }
  return rule;
}

}  // namespace nodegate::portmap::ipt
