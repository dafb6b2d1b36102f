#pragma once
// The kernel objects one attachment needs, as data (built without touching the kernel):
//
//   traffic TO the container (ingressRate), on the host veth's root:
//     all shaped      tbf 1: root                              (the reference's object)
//     with subnets    htb 1: root, direct_qlen 1000, default 1 (unshapedSubnets) or 0
//                       (shapedSubnets: no class 1:0, so unclassified traffic is "direct")
//                     htb class 1:1 rate = ceil = ingressRate, buffer = cbuffer = the TBF's
//                       buffer, explicit quantum 60000, leaf bfifo 2: limit = the TBF's limit
//                     u32 filters on 1: by SOURCE address (the container's peer) ->
//                       1:0 = HTB's direct queue, unshaped (unshapedSubnets) or 1:1 (shaped)
//                       pref 1 IPv4, 2 IPv6
//
//   traffic FROM the container (egressRate):
//     ifb bwp<hash> (alias = attachment, txqueuelen 0), root tbf 1:
//     host veth ingress qdisc ffff:, u32 filters by DESTINATION address:
//       all shaped      pref 1 protocol all, match-all -> ONE mirred egress redirect (stolen)
//       unshapedSubnets pref 1 ip / 2 ipv6 per subnet, no action (classification ends with
//                       "ok": the packet stays on the host path),
//                       pref 3 protocol all, match-all -> redirect
//       shapedSubnets   pref 1 ip / 2 ipv6 per subnet -> redirect; the rest is not touched
//
// What went wrong with the reverted v1.5 HTB design, and what is different here: its 100 Gbit
// "uncapped" class made HTB derive a huge quantum (the "quantum is big" warnings); unshaped
// traffic here takes HTB's direct queue, which has no class, no rate and no quantum, and the
// one shaped class has an explicit quantum. Its leaves inherited txqueuelen 0 from the ifb
// (a zero-length queue drops everything); here the direct queue length and the leaf's byte
// limit are explicit. It also matched the destination on the to-container side (always the
// container itself), and gave the shaped class a ceiling of twice the rate; here the remote
// source is matched and ceil = rate. The egress side needs no classful qdisc at all: the
// redirect filters decide what reaches the ifb's TBF.

#include <optional>
#include <string>
#include <vector>

#include "lib/tc/objects.h"
#include "lib/tc/tbf.h"
#include "plugins/bandwidth/config.h"

namespace nodegate::bandwidth {

// Name and ownership tag of the ifb of one attachment.
struct Attachment {
  std::string network;
  std::string container_id;
  std::string ifname;
};

inline constexpr const char* kIfbPrefix = "bwp";
inline constexpr const char* kAliasTag = "nodegate/bandwidth";

// bwp + first 12 hex characters of sha512(network + containerID): the reference's name.
std::string IfbName(const std::string& network, const std::string& container_id);

// The name of an ifb DEL has taken out of service and left to a helper to delete:
// bwpdel + the first 9 hex digits of the ifb's own name: never a reference name ('l' is not
// hex), and found by name again when a DEL was killed between retiring the ifb and handing it
// to its helper (the next DEL of the container deletes it). GC deletes any left.
inline constexpr const char* kRetiredIfbPrefix = "bwpdel";
std::string RetiredIfbName(const std::string& ifb_name);

// "nodegate/bandwidth <network> <containerID> <ifname>", stored as the ifb's ifalias so GC
// can tell which attachment an ifb belongs to (the name's hash is one-way). The kernel keeps
// at most 255 bytes; when the plain form is longer (the CNI spec caps neither the network
// name nor the container ID), the network and container ID are written as
// "sha512:<first 32 hex digits of their sha512>", so the alias always fits and ifbs made with
// the plain form (every alias that fits, as earlier versions wrote) are read as before.
inline constexpr size_t kMaxIfAliasBytes = 255;
std::string IfbAlias(const Attachment& attachment);
std::optional<Attachment> ParseIfbAlias(const std::string& alias);
// Whether a field of a parsed alias names `value` (plainly or by its hash).
bool AliasFieldIs(const std::string& field, const std::string& value);

struct IfbPlan {
  std::string name;
  std::string alias;
  tc::Qdisc root;  // tbf 1: root
};

struct ShapingPlan {
  // Host veth root (traffic to the container): empty when ingress is not shaped. The root
  // qdisc comes first, then class leaves in class order.
  std::vector<tc::Qdisc> host_root;
  std::vector<tc::HtbClass> host_root_classes;  // subnet modes only
  std::vector<tc::Filter> host_root_filters;    // on 1: (subnet modes only)
  // Traffic from the container.
  std::optional<IfbPlan> ifb;
  // On the host veth's ingress qdisc. Mirred actions carry ifindex 0 here: "the plan's ifb",
  // filled in when applied.
  std::vector<tc::Filter> host_ingress_filters;
};

// Filter prefs the plugin manages on the host veth (ingress qdisc and root prio).
inline constexpr uint16_t kPrefIpv4 = 1;
inline constexpr uint16_t kPrefIpv6 = 2;
inline constexpr uint16_t kPrefCatchAll = 3;
inline constexpr uint32_t kDirectQueueLen = 1000;  // packets; never 0, whatever txqueuelen is
inline constexpr uint32_t kHtbQuantum = 60000;     // bytes; inside HTB's [1000, 200000] range

ShapingPlan BuildPlan(const BandwidthConfig& config, const Attachment& attachment,
                      const tc::PschedClock& clock);

// The plan's ingress filters with mirred actions pointed at `ifb_index`.
std::vector<tc::Filter> ResolveRedirects(const std::vector<tc::Filter>& filters, int ifb_index);

}  // namespace nodegate::bandwidth
