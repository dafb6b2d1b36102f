#include "plugins/portmap/iptables/nft/encode.h"

// clang-format off
#include <netinet/in.h>  // before the kernel headers, which then skip their own copies
// clang-format on
#include <linux/netfilter/nf_nat.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nf_tables_compat.h>
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
#include <net/if.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <map>
#include <new>
#include <type_traits>
#include <variant>

#include "lib/netfilter/nft_expr.h"
#include "lib/netfilter/nlattr.h"

namespace nodegate::portmap::ipt {
namespace {

using netfilter::Attr;
using netfilter::AttrWriter;
using netfilter::ByteView;
using Bytes = std::vector<uint8_t>;

// iptables-nft loads everything into register 1 (nft-shared.c add_meta/add_payload).
constexpr uint32_t kReg = NFT_REG_1;

// The largest info any extension of the layout has (sctp's, 296 bytes).
constexpr size_t kMaxXtInfo = 296;

// An xt match or target as nft_compat carries it: name, revision, XT_ALIGN'd info. The info is
// held in place: a batch of thousands of rules allocates nothing for it.
struct XtBlob {
  std::string_view name;  // a literal, or into a parsed buffer
  uint32_t revision = 0;
  alignas(8) std::array<uint8_t, kMaxXtInfo> storage{};
  size_t size = 0;

  ByteView info() const { return {storage.data(), size}; }
  bool operator==(const XtBlob& other) const {
    return name == other.name && revision == other.revision &&
           std::ranges::equal(info(), other.info());
  }
};

// The info struct `T` as the iptables extension lays it out, padded to XT_ALIGN: `fill` sets
// its fields in the zeroed storage itself. Not through a copy of a T: a copy need not keep the
// padding bytes (an optimised build left garbage in xt_udp's and xt_mark_mtinfo1's), and
// iptables compares the whole aligned size, padding included.
template <typename T, typename Fill>
XtBlob MakeBlob(std::string_view name, uint32_t revision, Fill&& fill) {
  static_assert(XT_ALIGN(sizeof(T)) <= kMaxXtInfo && alignof(T) <= 8);
  static_assert(std::is_trivially_copyable_v<T>);
  XtBlob blob{name, revision, {}, XT_ALIGN(sizeof(T))};
  fill(*std::launder(reinterpret_cast<T*>(blob.storage.data())));
  return blob;
}

// Reads an info struct back; nullopt unless `info` has exactly the aligned size.
template <typename T>
std::optional<T> ReadInfo(ByteView info) {
  if (info.size() != XT_ALIGN(sizeof(T))) return std::nullopt;
  T out;
  std::memcpy(&out, info.data(), sizeof(T));
  return out;
}

// ---- xt blobs, one per extension, with the revisions iptables 1.8.4 to 1.8.9 pick on
// kernels since 4.18 (docs/iptables-nft-encoding.md: addrtype 1, comment 0, multiport 1,
// tcp 0, udp 0, sctp 0, mark 1, MARK 2, MASQUERADE 0, DNAT 2).

XtBlob CommentBlob(const std::string& text) {
  return MakeBlob<xt_comment_info>("comment", 0, [&](xt_comment_info& info) {
    // As strncpy: up to the first NUL, at most 255 bytes (the rest is zero already).
    std::memcpy(info.comment, text.c_str(), strnlen(text.c_str(), XT_MAX_COMMENT_LEN - 1));
  });
}

XtBlob MultiportBlob(const std::vector<int>& ports) {
  return MakeBlob<xt_multiport_v1>("multiport", 1, [&](xt_multiport_v1& info) {
    info.flags = XT_MULTIPORT_DESTINATION;
    info.count = static_cast<uint8_t>(std::min(ports.size(), size_t{XT_MULTI_PORTS}));
    for (size_t i = 0; i < info.count; ++i) info.ports[i] = static_cast<uint16_t>(ports[i]);
  });
}

XtBlob AddrtypeLocalBlob() {
  return MakeBlob<xt_addrtype_info_v1>(
      "addrtype", 1, [](xt_addrtype_info_v1& info) { info.dest = XT_ADDRTYPE_LOCAL; });
}

// libxt_sctp's init marks the four flag slots unused (chunktype 0xff); --dport N sets both
// ends of the range and the flag. Source ports stay 0..0.
XtBlob SctpBlob(int dport) {
  return MakeBlob<xt_sctp_info>("sctp", 0, [&](xt_sctp_info& info) {
    info.dpts[0] = info.dpts[1] = static_cast<uint16_t>(dport);
    for (auto& flag : info.flag_info) flag.chunktype = 0xff;
    info.flags = XT_SCTP_DEST_PORTS;
  });
}

// -m tcp/udp --dport N as libxt_tcp/libxt_udp lay it out: source ports 0..65535.
XtBlob TcpUdpBlob(Protocol protocol, int dport) {
  const auto ports = [&](auto& info) {
    info.spts[1] = 0xffff;
    info.dpts[0] = info.dpts[1] = static_cast<uint16_t>(dport);
  };
  if (protocol == Protocol::kTcp) return MakeBlob<xt_tcp>("tcp", 0, ports);
  return MakeBlob<xt_udp>("udp", 0, ports);
}

XtBlob MarkMatchBlob(const MarkMatch& m) {
  return MakeBlob<xt_mark_mtinfo1>("mark", 1, [&](xt_mark_mtinfo1& info) {
    info.mark = m.mark;
    info.mask = m.mask;
  });
}

XtBlob SetMarkBlob(const SetMarkTarget& t) {
  return MakeBlob<xt_mark_tginfo2>("MARK", 2, [&](xt_mark_tginfo2& info) {
    info.mark = t.value;
    info.mask = t.mask;
  });
}

XtBlob MasqueradeBlob(net::Family family) {
  if (family == net::Family::kV4) {
    return MakeBlob<nf_nat_ipv4_multi_range_compat>(
        "MASQUERADE", 0, [](nf_nat_ipv4_multi_range_compat& info) { info.rangesize = 1; });
  }
  return MakeBlob<nf_nat_range>("MASQUERADE", 0, [](nf_nat_range&) {});
}

XtBlob DnatBlob(const DnatTarget& t) {
  return MakeBlob<nf_nat_range2>("DNAT", 2, [&](nf_nat_range2& info) {
    info.flags = NF_NAT_RANGE_MAP_IPS | NF_NAT_RANGE_PROTO_SPECIFIED;
    const auto len = static_cast<size_t>(t.address.byte_length());
    std::memcpy(&info.min_addr, t.address.bytes().data(), len);
    std::memcpy(&info.max_addr, t.address.bytes().data(), len);
    info.min_proto.all = info.max_proto.all = htons(static_cast<uint16_t>(t.port));
  });
}

// The xt form of any match (what a compat `match` expression of it holds).
XtBlob MatchBlob(const Match& match) {
  struct Visitor {
    XtBlob operator()(const CommentMatch& m) const { return CommentBlob(m.text); }
    XtBlob operator()(const PortMatch& m) const {
      return m.protocol == Protocol::kSctp ? SctpBlob(m.dport) : TcpUdpBlob(m.protocol, m.dport);
    }
    XtBlob operator()(const MultiportMatch& m) const { return MultiportBlob(m.dports); }
    XtBlob operator()(const AddrtypeLocalMatch&) const { return AddrtypeLocalBlob(); }
    XtBlob operator()(const MarkMatch& m) const { return MarkMatchBlob(m); }
  };
  return std::visit(Visitor{}, match);
}

// ---- expressions: written in place by lib/netfilter's writer into the caller's buffer (a
// NEWRULE message of a batch of thousands is written once), every load into register 1.

using netfilter::ExprWriter;

// reg = (reg & mask) ^ 0, as iptables-nft masks addresses and marks: with no NFTA_BITWISE_OP
// (iptables-nft leaves it unset).
void MaskRegister(ExprWriter& out, ByteView mask) {
  static constexpr uint8_t kZeros[16] = {};
  out.Bitwise(kReg, kReg, mask, ByteView(kZeros, mask.size()), /*with_op=*/false);
}

// -j CHAIN, or -j ACCEPT: a verdict of its own, with no chain (as iptables-nft writes it).
void Jump(ExprWriter& out, const std::string& chain) {
  if (chain == kAcceptTarget) {
    out.Verdict(NF_ACCEPT, "");
  } else {
    out.Verdict(NFT_JUMP, chain);
  }
}

void Xt(ExprWriter& out, ExprWriter::XtKind kind, const XtBlob& blob) {
  out.Xt(kind, blob.name, blob.revision, blob.info());
}

// ---- header fields

int AddressLength(net::Family family) { return family == net::Family::kV4 ? 4 : 16; }
uint32_t SourceOffset(net::Family family) { return family == net::Family::kV4 ? 12 : 8; }
uint32_t DestOffset(net::Family family) { return family == net::Family::kV4 ? 16 : 24; }

// The first `bytes` of the result are the mask of a /length prefix.
std::array<uint8_t, 16> PrefixMask(int length, int bytes) {
  std::array<uint8_t, 16> mask{};
  for (int i = 0; i < bytes; ++i) {
    const int bits = std::clamp(length - i * 8, 0, 8);
    mask[static_cast<size_t>(i)] = static_cast<uint8_t>((0xff00 >> bits) & 0xff);
  }
  return mask;
}

Error Invalid(const std::string& what) {
  return Error(kErrInvalidConfig, "iptables-nft encoding: " + what);
}

// -s/-d: the whole address is loaded and, unless the prefix is the whole address, masked
// by a bitwise (what iptables-nft 1.8.4 writes). 1.8.7 and later load only the mask's whole
// bytes for an octet-aligned prefix, which 1.8.4 reads back as a /32 (its parser keeps no
// load length): the full load reads the same in every version. /0 loads nothing.
Status AddAddress(ExprWriter& out, uint32_t offset, const net::IpPrefix& prefix, bool invert,
                  net::Family family) {
  if (prefix.family() != family)
    return Invalid("address " + prefix.ToString() + " of the other family");
  if (prefix.length() == 0) {
    if (invert) return Invalid("\"! " + prefix.ToString() + "\" matches nothing");
    return OkStatus();
  }
  const int bytes = AddressLength(family);
  const auto length = static_cast<size_t>(bytes);
  const net::IpAddress network_address = prefix.Network();
  out.Payload(kReg, NFT_PAYLOAD_NETWORK_HEADER, offset, static_cast<uint32_t>(bytes));
  if (prefix.length() < bytes * 8) {
    const auto mask = PrefixMask(prefix.length(), bytes);
    MaskRegister(out, ByteView(mask.data(), length));
  }
  out.Cmp(kReg, invert ? NFT_CMP_NEQ : NFT_CMP_EQ,
          ByteView(network_address.bytes().data(), length));
  return OkStatus();
}

// -i/-o (add_iniface): the name with its NUL; "eth+" compares the prefix "eth" only; "+"
// alone loads the name and compares nothing, and "! -i +" compares with "INVAL/D".
Status AddIface(ExprWriter& out, uint32_t key, const std::string& name, bool invert) {
  if (name.size() >= IFNAMSIZ) return Invalid("interface name \"" + name + "\" is too long");
  out.Meta(key, kReg);
  const uint32_t op = invert ? NFT_CMP_NEQ : NFT_CMP_EQ;
  if (name.back() != '+') {
    out.Cmp(kReg, op, ByteView(reinterpret_cast<const uint8_t*>(name.c_str()), name.size() + 1));
  } else if (name.size() > 1) {
    out.Cmp(kReg, op, ByteView(reinterpret_cast<const uint8_t*>(name.data()), name.size() - 1));
  } else if (invert) {
    static constexpr char kInvalid[] = "INVAL/D";
    out.Cmp(kReg, NFT_CMP_EQ,
            ByteView(reinterpret_cast<const uint8_t*>(kInvalid), sizeof(kInvalid)));
  }
  return OkStatus();
}

Status AddHeader(ExprWriter& out, const Header& h, net::Family family) {
  if (!h.in_iface.empty())
    NG_RETURN_IF_ERROR(AddIface(out, NFT_META_IIFNAME, h.in_iface, h.in_invert));
  if (!h.out_iface.empty()) {
    NG_RETURN_IF_ERROR(AddIface(out, NFT_META_OIFNAME, h.out_iface, h.out_invert));
  }
  if (h.protocol) {
    out.Meta(NFT_META_L4PROTO, kReg);
    const uint8_t protocol = static_cast<uint8_t>(ProtocolNumber(*h.protocol));
    out.Cmp(kReg, NFT_CMP_EQ, ByteView(&protocol, 1));
  }
  if (h.src)
    NG_RETURN_IF_ERROR(AddAddress(out, SourceOffset(family), *h.src, h.src_invert, family));
  if (h.dst) NG_RETURN_IF_ERROR(AddAddress(out, DestOffset(family), *h.dst, h.dst_invert, family));
  return OkStatus();
}

bool ValidPort(int port) { return port >= 0 && port <= 0xffff; }

// What iptables (or the kernel's compat checks) would refuse in a match.
Status CheckMatch(const Match& match, const Header& header) {
  if (const auto* port = std::get_if<PortMatch>(&match)) {
    if (!ValidPort(port->dport)) return Invalid("port " + std::to_string(port->dport));
    if (header.protocol != port->protocol) {
      const std::string name(ProtocolName(port->protocol));
      return Invalid(name + " match requires -p " + name);
    }
  } else if (const auto* multiport = std::get_if<MultiportMatch>(&match)) {
    if (multiport->dports.empty() || multiport->dports.size() > XT_MULTI_PORTS) {
      return Invalid("multiport needs 1.." + std::to_string(XT_MULTI_PORTS) + " ports");
    }
    for (int p : multiport->dports) {
      if (!ValidPort(p)) return Invalid("port " + std::to_string(p));
    }
  } else if (const auto* comment = std::get_if<CommentMatch>(&match)) {
    if (comment->text.size() >= XT_MAX_COMMENT_LEN) return Invalid("comment over 255 bytes");
  }
  return OkStatus();
}

// One match, always as an xt `match` expression. iptables-nft 1.8.8 and later write
// `-m tcp/udp --dport` and `-m mark` as native payload/meta expressions, which 1.8.7 and
// older decode as nothing (a DNAT rule without its port, MASQUERADE without its mark); every
// version decodes the xt form into the match its own command line makes.
Status AddMatch(ExprWriter& out, const Match& match, const Header& header) {
  NG_RETURN_IF_ERROR(CheckMatch(match, header));
  Xt(out, ExprWriter::kMatch, MatchBlob(match));
  return OkStatus();
}

Status AddTarget(ExprWriter& out, const Target& target, net::Family family) {
  if (const auto* jump = std::get_if<JumpTarget>(&target)) {
    Jump(out, jump->chain);
  } else if (const auto* mark = std::get_if<SetMarkTarget>(&target)) {
    Xt(out, ExprWriter::kTarget, SetMarkBlob(*mark));
  } else if (std::holds_alternative<MasqueradeTarget>(target)) {
    Xt(out, ExprWriter::kTarget, MasqueradeBlob(family));
  } else {
    const auto& dnat = std::get<DnatTarget>(target);
    if (dnat.address.family() != family) return Invalid("DNAT address of the other family");
    if (!ValidPort(dnat.port)) return Invalid("port " + std::to_string(dnat.port));
    Xt(out, ExprWriter::kTarget, DnatBlob(dnat));
  }
  return OkStatus();
}

// ---- decoding

std::optional<Protocol> ProtocolOf(int number) {
  for (Protocol p : {Protocol::kTcp, Protocol::kUdp, Protocol::kSctp}) {
    if (ProtocolNumber(p) == number) return p;
  }
  return std::nullopt;
}

// The prefix length of a contiguous mask, or nullopt.
std::optional<int> MaskLength(const Bytes& mask) {
  int length = 0;
  bool ended = false;
  for (uint8_t byte : mask) {
    for (int bit = 7; bit >= 0; --bit) {
      const bool set = (byte >> bit) & 1;
      if (set && ended) return std::nullopt;
      if (set) ++length;
      ended = ended || !set;
    }
  }
  return length;
}

// What a register holds between its load and the cmp that reads it.
struct Load {
  bool meta = false;
  uint32_t key = 0;                        // meta
  uint32_t base = 0, offset = 0, len = 0;  // payload
  std::optional<Bytes> mask;               // from a bitwise
};

// Reads one rule's expressions the way iptables-nft's nft_rule_to_iptables_command_state
// does, limited to the shapes the layout uses. Any other shape makes the rule foreign.
class Decoder {
 public:
  explicit Decoder(net::Family family) : family_(family) {}

  bool Feed(const netfilter::Expr& e) {
    if (std::holds_alternative<netfilter::expr::Counter>(e)) return true;
    if (done_) return false;  // nothing but counters follows the verdict
    return std::visit([this](const auto& x) { return On(x); }, e);
  }
  std::optional<Rule> Finish() {
    if (!done_) return std::nullopt;
    return rule_;
  }

 private:
  // Any kind the layout does not use makes the rule foreign.
  template <typename T>
  bool On(const T&) {
    return false;
  }
  bool On(const netfilter::expr::Meta& m) {
    regs_[m.dreg] = Load{.meta = true, .key = m.key};
    return true;
  }
  bool On(const netfilter::expr::Payload& p) {
    regs_[p.dreg] = Load{.base = p.base, .offset = p.offset, .len = p.len};
    return true;
  }
  bool On(const netfilter::expr::Bitwise& b) {
    const auto& x = b.xor_value;
    if (std::any_of(x.begin(), x.end(), [](uint8_t byte) { return byte != 0; })) return false;
    auto it = regs_.find(b.sreg);
    if (it == regs_.end() || it->second.mask) return false;
    Load load = it->second;
    load.mask = b.mask;
    regs_[b.dreg] = load;
    return true;
  }
  bool On(const netfilter::expr::Cmp& c) {
    if (c.op != NFT_CMP_EQ && c.op != NFT_CMP_NEQ) return false;
    auto it = regs_.find(c.sreg);
    if (it == regs_.end()) return false;
    const Load& load = it->second;
    const bool invert = c.op == NFT_CMP_NEQ;
    if (load.meta) return OnMetaCmp(load, c.data, invert);
    if (load.base == NFT_PAYLOAD_NETWORK_HEADER) return OnNetworkCmp(load, c.data, invert);
    if (load.base == NFT_PAYLOAD_TRANSPORT_HEADER) return OnTransportCmp(load, c.data, invert);
    return false;
  }
  bool On(const netfilter::expr::Verdict& v) { return OnVerdict(v); }
  bool On(const netfilter::expr::Match& m) { return OnXt(m.name, m.revision, m.info, false); }
  bool On(const netfilter::expr::Target& t) { return OnXt(t.name, t.revision, t.info, true); }

  bool OnMetaCmp(const Load& load, const Bytes& data, bool invert) {
    Header& h = rule_.header;
    switch (load.key) {
      case NFT_META_L4PROTO:
        return !load.mask && data.size() == 1 && SetProtocol(data[0], invert);
      case NFT_META_IIFNAME:
        return !load.mask && SetIface(data, invert, h.in_iface, h.in_invert);
      case NFT_META_OIFNAME:
        return !load.mask && SetIface(data, invert, h.out_iface, h.out_invert);
      case NFT_META_MARK: {
        if (invert || data.size() != 4 || (load.mask && load.mask->size() != 4)) return false;
        MarkMatch m{0, 0xffffffffu};
        std::memcpy(&m.mark, data.data(), 4);
        if (load.mask) std::memcpy(&m.mask, load.mask->data(), 4);
        rule_.matches.emplace_back(std::in_place_type<MarkMatch>, m);
        return true;
      }
      default:
        return false;
    }
  }

  bool SetProtocol(int number, bool invert) {
    const auto protocol = ProtocolOf(number);
    if (invert || !protocol || rule_.header.protocol) return false;
    rule_.header.protocol = protocol;
    return true;
  }

  // parse_ifname: a trailing NUL means the exact name, none a "+" wildcard; "INVAL/D" is
  // "! -i +" (nft-shared.c parse_invalid_iface).
  static bool SetIface(const Bytes& data, bool invert, std::string& name, bool& inverted) {
    if (!name.empty() || data.empty() || data.size() > IFNAMSIZ) return false;
    const auto nul = std::find(data.begin(), data.end(), 0);
    if (nul != data.end()) {
      name.assign(data.begin(), nul);
      if (name.empty()) return false;
    } else {
      if (data.size() >= IFNAMSIZ) return false;
      name.assign(data.begin(), data.end());
      name += '+';
    }
    inverted = invert;
    if (!invert && name == "INVAL/D") {
      name = "+";
      inverted = true;
    }
    return true;
  }

  bool OnNetworkCmp(const Load& load, const Bytes& data, bool invert) {
    const bool v4 = family_ == net::Family::kV4;
    const uint32_t protocol_offset = v4 ? 9 : 6;  // ip protocol / ip6 nexthdr
    if (load.offset == protocol_offset && load.len == 1 && !load.mask && data.size() == 1) {
      return SetProtocol(data[0], invert);
    }
    Header& h = rule_.header;
    if (load.offset == SourceOffset(family_))
      return SetAddress(load, data, invert, h.src, h.src_invert);
    if (load.offset == DestOffset(family_))
      return SetAddress(load, data, invert, h.dst, h.dst_invert);
    return false;
  }

  // An address compared over `len` bytes, masked by the bitwise before it or else by the
  // load's length. Only prefix masks with no host bits set in the value are layout rules.
  bool SetAddress(const Load& load, const Bytes& data, bool invert,
                  std::optional<net::IpPrefix>& field, bool& inverted) const {
    const auto bytes = static_cast<size_t>(AddressLength(family_));
    if (field || load.len == 0 || load.len > bytes || data.size() != load.len) return false;
    Bytes mask(bytes, 0);
    if (load.mask) {
      if (load.mask->size() != load.len) return false;
      std::copy(load.mask->begin(), load.mask->end(), mask.begin());
    } else {
      std::fill_n(mask.begin(), load.len, 0xff);
    }
    const auto length = MaskLength(mask);
    if (!length || *length == 0) return false;
    uint8_t address[16] = {};
    std::copy(data.begin(), data.end(), address);
    for (size_t i = 0; i < bytes; ++i) {
      if ((address[i] & ~mask[i]) != 0) return false;
    }
    field = net::IpPrefix(net::IpAddress::FromBytes(family_, address), *length);
    inverted = invert;
    return true;
  }

  // A native --dport (nft_parse_transport): only for -p tcp/udp, only the destination port.
  bool OnTransportCmp(const Load& load, const Bytes& data, bool invert) {
    const auto& protocol = rule_.header.protocol;
    if (invert || load.mask || load.offset != 2 || load.len != 2 || data.size() != 2 || !protocol ||
        *protocol == Protocol::kSctp) {
      return false;
    }
    // Braces, not in_place_type with arguments: clang 14 (make fuzz) lacks C++20's
    // parenthesized aggregate initialization.
    rule_.matches.emplace_back(PortMatch{*protocol, (data[0] << 8) | data[1]});
    return true;
  }

  // -j CHAIN or -j ACCEPT: goto (-g) is another rule to iptables -C, and the layouts use no
  // other verdict.
  bool OnVerdict(const netfilter::expr::Verdict& verdict) {
    if (verdict.code == NF_ACCEPT && verdict.chain.empty()) {
      rule_.target = JumpTarget{kAcceptTarget};
      done_ = true;
      return true;
    }
    if (verdict.code != NFT_JUMP || verdict.chain.empty()) return false;
    rule_.target = JumpTarget{verdict.chain};
    done_ = true;
    return true;
  }

  bool OnXt(std::string_view name, uint32_t revision, const Bytes& info, bool target) {
    if (info.size() > kMaxXtInfo) return false;  // no extension of the layout
    XtBlob blob{name, revision, {}, info.size()};
    std::copy(info.begin(), info.end(), blob.storage.begin());
    if (target) {
      done_ = true;
      return DecodeTarget(blob, rule_.target);
    }
    Match match;
    if (!DecodeMatch(blob, match)) return false;
    rule_.matches.push_back(std::move(match));
    return true;
  }

  // Decodes `blob` into `out` when re-encoding the result gives back exactly `blob`.
  bool DecodeMatch(const XtBlob& blob, Match& out) const {
    if (blob.name == "comment") {
      const auto i = ReadInfo<xt_comment_info>(blob.info());
      if (!i) return false;
      out = CommentMatch{std::string(i->comment, strnlen(i->comment, XT_MAX_COMMENT_LEN))};
    } else if (blob.name == "multiport") {
      const auto i = ReadInfo<xt_multiport_v1>(blob.info());
      if (!i || i->count > XT_MULTI_PORTS) return false;
      out = MultiportMatch{std::vector<int>(i->ports, i->ports + i->count)};
    } else if (blob.name == "addrtype") {
      out = AddrtypeLocalMatch{};
    } else if (blob.name == "sctp") {
      const auto i = ReadInfo<xt_sctp_info>(blob.info());
      if (!i) return false;
      out = PortMatch{Protocol::kSctp, i->dpts[0]};
    } else if (blob.name == "tcp") {
      const auto i = ReadInfo<xt_tcp>(blob.info());
      if (!i) return false;
      out = PortMatch{Protocol::kTcp, i->dpts[0]};
    } else if (blob.name == "udp") {
      const auto i = ReadInfo<xt_udp>(blob.info());
      if (!i) return false;
      out = PortMatch{Protocol::kUdp, i->dpts[0]};
    } else if (blob.name == "mark") {
      const auto i = ReadInfo<xt_mark_mtinfo1>(blob.info());
      if (!i) return false;
      out = MarkMatch{i->mark, i->mask};
    } else {
      return false;
    }
    if (MatchBlob(out) != blob) return false;
    // A port match of another protocol than -p: the kernel's compat check refuses it.
    const auto* port = std::get_if<PortMatch>(&out);
    return port == nullptr || rule_.header.protocol == port->protocol;
  }

  bool DecodeTarget(const XtBlob& blob, Target& out) const {
    XtBlob again;
    if (blob.name == "MARK") {
      const auto i = ReadInfo<xt_mark_tginfo2>(blob.info());
      if (!i) return false;
      const SetMarkTarget mark{i->mark, i->mask};
      out = mark;
      again = SetMarkBlob(mark);
    } else if (blob.name == "MASQUERADE") {
      out = MasqueradeTarget{};
      again = MasqueradeBlob(family_);
    } else if (blob.name == "DNAT") {
      const auto i = ReadInfo<nf_nat_range2>(blob.info());
      if (!i) return false;
      const auto* address = reinterpret_cast<const uint8_t*>(&i->min_addr);
      const DnatTarget dnat{net::IpAddress::FromBytes(family_, address), ntohs(i->min_proto.all)};
      out = dnat;
      again = DnatBlob(dnat);
    } else {
      return false;
    }
    return again == blob;
  }

  net::Family family_;
  Rule rule_{{}, {}, JumpTarget{}};
  std::map<uint32_t, Load> regs_;
  bool done_ = false;
};

// The comment a userdata TLV list holds (nftnl udata: u8 type, u8 len, value; type 0 is a
// NUL-terminated comment).
std::optional<std::string> UserdataComment(ByteView userdata) {
  size_t at = 0;
  while (at + 2 <= userdata.size()) {
    const uint8_t type = userdata[at], len = userdata[at + 1];
    if (at + 2 + len > userdata.size()) return std::nullopt;
    if (type == 0) {
      if (len == 0 || userdata[at + 2 + len - 1] != 0) return std::nullopt;
      return std::string(reinterpret_cast<const char*>(userdata.data() + at + 2));
    }
    at += 2 + len;
  }
  return std::nullopt;
}

std::string Hex(ByteView data) {
  std::string out;
  char buf[3];
  for (uint8_t b : data) {
    std::snprintf(buf, sizeof(buf), "%02x", b);
    out += buf;
  }
  return out;
}

}  // namespace

namespace {

// The rule's expressions (the list elements NFTA_RULE_EXPRESSIONS holds) at the end of `out`.
Status WriteExpressions(const Rule& rule, net::Family family, AttrWriter& out) {
  ExprWriter writer(out);
  NG_RETURN_IF_ERROR(AddHeader(writer, rule.header, family));
  for (const auto& match : rule.matches) NG_RETURN_IF_ERROR(AddMatch(writer, match, rule.header));
  // Counters go before the verdict, or nf_tables would count each rule's packets after it.
  writer.Counter();
  return AddTarget(writer, rule.target, family);
}

// The fields of the rule's NFTA_RULE_COMPAT at the end of `out`.
void WriteCompat(const Rule& rule, AttrWriter& out) {
  out.PutBe32(
      NFTA_RULE_COMPAT_PROTO,
      rule.header.protocol ? static_cast<uint32_t>(ProtocolNumber(*rule.header.protocol)) : 0);
  out.PutBe32(NFTA_RULE_COMPAT_FLAGS, 0);
}

}  // namespace

Result<NftRuleEncoding> EncodeNftRule(const Rule& rule, net::Family family) {
  AttrWriter expressions, compat;
  NG_RETURN_IF_ERROR(WriteExpressions(rule, family, expressions));
  WriteCompat(rule, compat);
  return NftRuleEncoding{expressions.Take(), compat.Take()};
}

Status AppendNftRuleAttrs(const Rule& rule, net::Family family, AttrWriter& out) {
  const size_t expressions = out.BeginNested(NFTA_RULE_EXPRESSIONS);
  NG_RETURN_IF_ERROR(WriteExpressions(rule, family, out));
  out.EndNested(expressions);
  const size_t compat = out.BeginNested(NFTA_RULE_COMPAT);
  WriteCompat(rule, out);
  out.EndNested(compat);
  return OkStatus();
}

std::optional<Rule> DecodeNftRule(std::span<const uint8_t> expressions, net::Family family,
                                  std::span<const uint8_t> userdata) {
  const auto exprs = netfilter::DecodeExpressions(expressions);
  if (!exprs) return std::nullopt;
  Decoder decoder(family);
  for (const auto& e : *exprs) {
    if (!decoder.Feed(e)) return std::nullopt;
  }
  auto rule = decoder.Finish();
  if (rule) {
    if (auto comment = UserdataComment(userdata))
      rule->matches.emplace_back(CommentMatch{*comment});  // braces: clang 14, as above
  }
  return rule;
}

Rule CanonicalRule(const Rule& rule) {
  Rule out = rule;
  Header& h = out.header;
  for (auto [field, invert] :
       {std::pair{&h.src, &h.src_invert}, std::pair{&h.dst, &h.dst_invert}}) {
    if (*field && (*field)->length() == 0 && !*invert) field->reset();
    if (*field) {
      **field = (*field)->Masked();
    } else {
      *invert = false;
    }
  }
  for (auto [name, invert] :
       {std::pair{&h.in_iface, &h.in_invert}, std::pair{&h.out_iface, &h.out_invert}}) {
    if (*name == "+" && !*invert) name->clear();
    if (name->empty()) *invert = false;
  }
  return out;
}

namespace {

// Calls `fn(name, info)` for each xt match element of a rule in order, seen in place: the
// match's name and its NFTA_MATCH_INFO (nullopt when absent). Stops when `fn` returns false.
template <typename F>
void ForEachXtMatch(std::span<const uint8_t> expressions, F&& fn) {
  netfilter::ForEachExpression(expressions, [&](std::string_view name, ByteView data) {
    if (name != "match") return true;
    const netfilter::XtView xt = netfilter::ReadXt(data);
    return static_cast<bool>(fn(xt.name.value_or(""), xt.info));
  });
}

}  // namespace

NftVerdict NftRuleVerdict(std::span<const uint8_t> expressions) {
  NftVerdict out;
  // Only element names are read, and only verdict-like elements are read further: this runs
  // over every rule of a chain.
  netfilter::ForEachExpression(expressions, [&](std::string_view name, ByteView data) {
    if (name == "immediate") {
      const auto verdict = netfilter::ReadVerdict(data);
      if (verdict && (verdict->code == NFT_JUMP || verdict->code == NFT_GOTO)) {
        out = {verdict->chain, ""};
      } else if (verdict && verdict->code == NF_ACCEPT) {
        out = {"", kAcceptTarget};
      }
    } else if (name == "target") {
      const netfilter::XtView xt = netfilter::ReadXt(data);
      if (xt.name) out = {"", std::string(*xt.name)};
    }
    return true;
  });
  return out;
}

std::optional<std::string> NftJumpTarget(std::span<const uint8_t> expressions) {
  NftVerdict verdict = NftRuleVerdict(expressions);
  if (verdict.chain.empty()) return std::nullopt;
  return verdict.chain;
}

std::optional<std::string> NftRuleComment(std::span<const uint8_t> expressions,
                                          std::span<const uint8_t> userdata) {
  // Match by match without a parse of the whole rule: this runs over every entry rule.
  std::optional<std::string> comment;
  ForEachXtMatch(expressions, [&](std::string_view match, std::optional<ByteView> info) {
    if (match != "comment" || !info) return true;
    const auto* text = reinterpret_cast<const char*>(info->data());
    comment = std::string(text, strnlen(text, info->size()));
    return false;
  });
  if (comment) return comment;
  return UserdataComment(userdata);
}

std::optional<MultiportPorts> NftRuleMultiportPorts(std::span<const uint8_t> expressions) {
  std::optional<MultiportPorts> out;
  ForEachXtMatch(expressions, [&](std::string_view match, std::optional<ByteView> info) {
    if (match != "multiport") return true;
    const auto i = ReadInfo<xt_multiport_v1>(info.value_or(ByteView()));
    if (i && i->count <= XT_MULTI_PORTS) {
      out.emplace();
      std::copy(i->ports, i->ports + i->count, out->ports.begin());
      out->count = i->count;
    }
    return false;
  });
  return out;
}

std::string NftExpressionsToString(std::span<const uint8_t> expressions) {
  std::string out;
  const bool well_formed =
      netfilter::ForEachExpression(expressions, [&](std::string_view name, ByteView data) {
        std::string line(name);
        const bool ok = netfilter::ForEachAttr(data, [&](const Attr& a) {
          line += " " + std::to_string(a.type) + "=" + Hex(a.data);
          return true;
        });
        out += line + "\n";
        return ok;
      });
  if (!well_formed) return "(malformed expressions " + Hex(expressions) + ")\n";
  return out;
}

}  // namespace nodegate::portmap::ipt
