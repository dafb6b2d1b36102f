#pragma once
// Qdiscs and u32 filters as plain values: what a plugin wants on a device is a list of these
// (a plan), and what the kernel has is read back into the same types, so "is the device as
// planned?" is an equality check and a mismatch can be described in words.
//
// Handles use the kernel's 32-bit major:minor form (MakeHandle(1, 0) is "1:").

#include <linux/if_ether.h>

#include <cstdint>
#include <string>
#include <vector>

#include "lib/net/ip.h"
#include "lib/tc/tbf.h"

namespace nodegate::tc {

constexpr uint32_t MakeHandle(uint32_t major, uint32_t minor) {
  return (major << 16) | (minor & 0xffff);
}
inline constexpr uint32_t kRootParent = 0xffffffff;     // TC_H_ROOT
inline constexpr uint32_t kIngressParent = 0xfffffff1;  // TC_H_INGRESS
inline constexpr uint32_t kIngressHandle = MakeHandle(0xffff, 0);

// "root", "ingress", "1:", "1:2", "ffff:".
std::string HandleString(uint32_t handle);

struct Qdisc {
  std::string kind;  // "tbf", "ingress", "htb", "bfifo", "pfifo"; others are kept as read
  uint32_t handle = 0;
  uint32_t parent = kRootParent;
  TbfParams tbf;                 // kind "tbf" (burst_bytes is not read back)
  uint32_t htb_default = 0;      // kind "htb": minor of the default class (no such class: direct)
  uint32_t htb_direct_qlen = 0;  // kind "htb": packets queued on the unshaped direct path
  uint32_t fifo_limit = 0;       // kind "bfifo": bytes, "pfifo": packets
  bool operator==(const Qdisc&) const = default;
};

// An HTB class (the only classful qdisc the plugin uses).
struct HtbClass {
  uint32_t classid = 0;
  uint32_t parent = 0;
  uint64_t rate_bytes = 0;
  uint64_t ceil_bytes = 0;
  uint32_t buffer_ticks = 0;
  uint32_t cbuffer_ticks = 0;
  uint32_t quantum = 0;  // bytes; set explicitly so HTB never derives one from rate/r2q
  uint32_t prio = 0;
  bool operator==(const HtbClass&) const = default;
};

// "htb class 1:1 parent 1: rate 125000B/s ceil 125000B/s buffer 15625000 cbuffer 15625000
// quantum 60000 prio 0".
std::string Describe(const HtbClass& cls);

// Compares what the kernel reports (burst_bytes of a TBF is not part of the netlink dump).
bool SameKernelState(const Qdisc& want, const Qdisc& have);

// "tbf 1: parent root rate 125000B/s buffer 15625000 ticks limit 128125B".
std::string Describe(const Qdisc& qdisc);

enum class ActionKind { kMirredEgressRedirect, kGact };

// TC_ACT_* verdicts used here.
inline constexpr int kActOk = 0;      // "pass"
inline constexpr int kActStolen = 4;  // "stolen"

struct Action {
  ActionKind kind = ActionKind::kMirredEgressRedirect;
  int verdict = kActStolen;
  int ifindex = 0;  // mirred target
  bool operator==(const Action&) const = default;
};

// One 32-bit u32 match: (packet word at `offset` from the network header) & mask == value.
// Values and masks are in host byte order here and big-endian on the wire.
struct U32Key {
  uint32_t mask = 0;
  uint32_t value = 0;
  int32_t offset = 0;
  bool operator==(const U32Key&) const = default;
};

// A u32 filter node.
struct Filter {
  uint32_t parent = kIngressHandle;
  uint16_t pref = 1;
  uint16_t protocol = ETH_P_ALL;  // host byte order
  uint32_t classid = 0;
  std::vector<U32Key> keys;
  bool terminal = true;
  std::vector<Action> actions;
  uint32_t handle = 0;  // as read (800::800); ignored by comparisons
  bool SameRule(const Filter& other) const;
};

// "u32 pref 1 protocol all match 00000000/00000000 at 0 flowid 1:1 action mirred ...".
std::string Describe(const Filter& filter);

// The reference's match-all selector: one key, mask 0, value 0, offset 0.
std::vector<U32Key> MatchAllKeys();

// Keys matching `prefix` against the IPv4/IPv6 source or destination address (network-header
// offsets 12/16 for IPv4, 8/24 for IPv6). Words whose mask is zero are left out; a zero-length
// prefix gives MatchAllKeys().
std::vector<U32Key> AddressKeys(const net::IpPrefix& prefix, bool source);

// ETH_P_IP or ETH_P_IPV6.
uint16_t ProtocolOf(net::Family family);

}  // namespace nodegate::tc
