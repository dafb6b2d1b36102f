#include "lib/tc/objects.h"

#include <cstdio>

namespace nodegate::tc {
namespace {

std::string Hex8(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "%08x", v);
  return buf;
}

std::string ProtocolName(uint16_t protocol) {
  switch (protocol) {
    case ETH_P_ALL:
      return "all";
    case ETH_P_IP:
      return "ip";
    case ETH_P_IPV6:
      return "ipv6";
    default:
      return "0x" + Hex8(protocol).substr(4);
  }
}

std::string VerdictName(int verdict) {
  switch (verdict) {
    case kActOk:
      return "pass";
    case kActStolen:
      return "stolen";
    default:
      return "verdict " + std::to_string(verdict);
  }
}

}  // namespace

std::string HandleString(uint32_t handle) {
  if (handle == kRootParent) {
    return "root";
  }
  if (handle == kIngressParent) {
    return "ingress";
  }
  char buf[32];
  if ((handle & 0xffff) == 0) {
    std::snprintf(buf, sizeof(buf), "%x:", handle >> 16);
  } else {
    std::snprintf(buf, sizeof(buf), "%x:%x", handle >> 16, handle & 0xffff);
  }
  return buf;
}

bool SameKernelState(const Qdisc& want, const Qdisc& have) {
  if (want.kind != have.kind || want.handle != have.handle || want.parent != have.parent) {
    return false;
  }
  if (want.kind == "tbf") {
    return want.tbf.rate_bytes == have.tbf.rate_bytes &&
           want.tbf.buffer_ticks == have.tbf.buffer_ticks &&
           want.tbf.limit_bytes == have.tbf.limit_bytes;
  }
  if (want.kind == "htb") {
    return want.htb_default == have.htb_default && want.htb_direct_qlen == have.htb_direct_qlen;
  }
  if (want.kind == "pfifo" || want.kind == "bfifo") {
    return want.fifo_limit == have.fifo_limit;
  }
  return true;
}

std::string Describe(const HtbClass& c) {
  return "htb class " + HandleString(c.classid) + " parent " + HandleString(c.parent) + " rate " +
         std::to_string(c.rate_bytes) + "B/s ceil " + std::to_string(c.ceil_bytes) + "B/s buffer " +
         std::to_string(c.buffer_ticks) + " cbuffer " + std::to_string(c.cbuffer_ticks) +
         " quantum " + std::to_string(c.quantum) + " prio " + std::to_string(c.prio);
}

std::string Describe(const Qdisc& q) {
  std::string out = q.kind + " " + HandleString(q.handle) + " parent " + HandleString(q.parent);
  if (q.kind == "tbf") {
    out += " rate " + std::to_string(q.tbf.rate_bytes) + "B/s buffer " +
           std::to_string(q.tbf.buffer_ticks) + " ticks limit " +
           std::to_string(q.tbf.limit_bytes) + "B";
  } else if (q.kind == "htb") {
    out += " default " + std::to_string(q.htb_default) + " direct_qlen " +
           std::to_string(q.htb_direct_qlen);
  } else if (q.kind == "pfifo") {
    out += " limit " + std::to_string(q.fifo_limit) + "p";
  } else if (q.kind == "bfifo") {
    out += " limit " + std::to_string(q.fifo_limit) + "B";
  }
  return out;
}

bool Filter::SameRule(const Filter& o) const {
  return parent == o.parent && pref == o.pref && protocol == o.protocol && classid == o.classid &&
         keys == o.keys && terminal == o.terminal && actions == o.actions;
}

std::string Describe(const Filter& f) {
  std::string out = "u32 parent " + HandleString(f.parent) + " pref " + std::to_string(f.pref) +
                    " protocol " + ProtocolName(f.protocol);
  for (const U32Key& k : f.keys) {
    out += " match " + Hex8(k.value) + "/" + Hex8(k.mask) + " at " + std::to_string(k.offset);
  }
  if (f.classid != 0) {
    out += " flowid " + HandleString(f.classid);
  }
  for (const Action& a : f.actions) {
    if (a.kind == ActionKind::kMirredEgressRedirect) {
      out += " action mirred egress redirect ifindex " + std::to_string(a.ifindex) + " " +
             VerdictName(a.verdict);
    } else {
      out += " action gact " + VerdictName(a.verdict);
    }
  }
  return out;
}

std::vector<U32Key> MatchAllKeys() { return {U32Key{.mask = 0, .value = 0, .offset = 0}}; }

std::vector<U32Key> AddressKeys(const net::IpPrefix& prefix, bool source) {
  const bool v4 = prefix.family() == net::Family::kV4;
  const int base = v4 ? (source ? 12 : 16) : (source ? 8 : 24);
  const std::array<uint8_t, 16> bytes = prefix.Network().bytes();
  std::vector<U32Key> keys;
  int remaining = prefix.length();
  for (int word = 0; word < prefix.address().byte_length() / 4 && remaining > 0; ++word) {
    const int bits = remaining >= 32 ? 32 : remaining;
    remaining -= bits;
    const uint32_t mask = bits == 32 ? 0xffffffffu : ~(0xffffffffu >> bits);
    const uint32_t value = (uint32_t{bytes[word * 4]} << 24) |
                           (uint32_t{bytes[word * 4 + 1]} << 16) |
                           (uint32_t{bytes[word * 4 + 2]} << 8) | uint32_t{bytes[word * 4 + 3]};
    keys.push_back(U32Key{.mask = mask, .value = value & mask, .offset = base + word * 4});
  }
  if (keys.empty()) {
    return MatchAllKeys();
  }
  return keys;
}

uint16_t ProtocolOf(net::Family family) {
  return family == net::Family::kV4 ? ETH_P_IP : ETH_P_IPV6;
}

}  // namespace nodegate::tc
