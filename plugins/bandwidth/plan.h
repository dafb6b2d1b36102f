#pragma once
// File: plugins/bandwidth/plan.h
//
// The kernel objects one attachment needs, as data (built without touching the kernel):
//
//   traffic TO the container (ingressRate), on the host veth's root:
//     all shaped      tbf 1: root                              (the reference's object)
//     with subnets    prio 1: root bands 2, every priority -> the default band
//                       pfifo 2: parent 1:1 limit 1000   band 0: unshaped traffic
//                       tbf   3: parent 1:2              band 1: shaped traffic
//                     u32 filters on 1: by SOURCE address (the container's peer) ->
//                       1:1 (unshapedSubnets) or 1:2 (shapedSubnets); pref 1 IPv4, 2 IPv6
//
//   traffic FROM the container (egressRate):
//     ifb bwp<hash> (alias = attachment, txqueuelen 0), root tbf 1:
//     host veth ingress qdisc ffff:, u32 filters by DESTINATION address:
//       all shaped      pref 1 protocol all, match-all -> ONE mirred egress redirect (stolen)
//       unshapedSubnets pref 1 ip / 2 ipv6 per subnet -> gact pass (stays on the host path),
//                       pref 3 protocol all, match-all -> redirect
//       shapedSubnets   pref 1 ip / 2 ipv6 per subnet -> redirect; the rest is not touched
//
// No HTB anywhere: the reverted v1.5 design's quantum warnings and txqueuelen-0 drops came
// from HTB classes; here the shaper is always the reference's TBF and the unshaped path never
// queues behind it.

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

// "nodegate/bandwidth <network> <containerID> <ifname>", stored as the ifb's ifalias so GC
// can tell which attachment an ifb belongs to (the name's hash is one-way).
std::string IfbAlias(const Attachment& attachment);
std::optional<Attachment> ParseIfbAlias(const std::string& alias);

struct IfbPlan {
  std::string name;
  std::string alias;
  tc::Qdisc root;  // tbf 1: root
};

struct ShapingPlan {
  // Host veth root (traffic to the container): empty when ingress is not shaped. Parents come
  // before children.
  std::vector<tc::Qdisc> host_root;
  std::vector<tc::Filter> host_root_filters;  // on 1: (subnet modes only)
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
inline constexpr uint32_t kUnshapedFifoLimit = 1000;  // packets; never 0, whatever txqueuelen is

ShapingPlan BuildPlan(const BandwidthConfig& config, const Attachment& attachment,
                      const tc::PschedClock& clock);

// The plan's ingress filters with mirred actions pointed at `ifb_index`.
std::vector<tc::Filter> ResolveRedirects(const std::vector<tc::Filter>& filters, int ifb_index);

}  // namespace nodegate::bandwidth
