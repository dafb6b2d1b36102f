#pragma once
// ipMasq: masquerading of the container's traffic to anything outside its subnets, exactly as the
// reference bridge writes it, in either of its two backends (ipMasqBackend):
//
//   iptables  (Debian's v1.1.1 and the upstream default) in table nat of the node's iptables
//             mode (plugins/portmap/iptables/mode.h: nf_tables in iptables-nft's encoding, or
//             the legacy x_tables through libiptc), per family:
//               -A POSTROUTING -s <ip>/32 -m comment --comment "name: \"N\" id: \"ID\"" -j
//               CNI-<hash> -A CNI-<hash> -d <subnet> -m comment --comment ... -j ACCEPT -A
//               CNI-<hash> ! -d 224.0.0.0/4 (ff00::/8) -m comment --comment ... -j MASQUERADE
//             one transaction per family; the chain name is sha512(network + container ID), so
//             DEL and GC need no address;
//   nftables  (upstream since v1.6) table inet cni_plugins_masquerade: chain postrouting (nat,
//             srcnat) returning for multicast and going to masq_checks, which holds one rule
//             per address, `ip saddr == <ip> ip daddr != <subnet> masquerade`, commented
//             "<hash(network)>-<hash(ifname:ID)>, net: N, if: I, id: ID"; one batch.
//
// The default, as upstream's: iptables, unless the PATH has no iptables and has nft. DEL and GC
// look in both backends and, for iptables, in both modes (a node that switched keeps its rules).

#include <set>
#include <string>
#include <vector>

#include "lib/base/result.h"
#include "lib/cni/conf.h"
#include "lib/net/ip.h"
#include "plugins/bridge/config.h"
#include "plugins/bridge/plan.h"
#include "plugins/portmap/iptables/nat_tables.h"

namespace nodegate::netfilter {
class Ruleset;  // lib/netfilter/ruleset.h
}

namespace nodegate::bridge {

inline constexpr char kMasqTable[] = "cni_plugins_masquerade";
inline constexpr char kMasqChecksChain[] = "masq_checks";
inline constexpr char kMasqPostroutingChain[] = "postrouting";

// The backend of an ADD: the configured one, else upstream's choice on this node.
MasqBackend ChooseMasqBackend(std::optional<MasqBackend> configured);

struct MasqAttachment {
  std::string network;
  std::string ifname;
  std::string container_id;
};

// The nftables rule comment of an attachment (hashForInstance and the names, cut to 128 bytes),
// and the prefix every rule of a network's comment starts with.
std::string NftMasqComment(const MasqAttachment& a);
std::string NftMasqNetworkPrefix(const std::string& network);

// Installs the rules of `plan` (missing ones only, as the reference's AppendUnique; nftables:
// the attachment's stale rules replaced).
Status SetupMasq(MasqBackend backend, const MasqAttachment& a, const MasqPlan& plan);
// Removes the attachment's rules wherever they are. Nothing there is success.
Status TeardownMasq(const MasqAttachment& a);
// CHECK: every rule of `plan` is in place (code 103 naming the first missing one).
Status CheckMasq(MasqBackend backend, const MasqAttachment& a, const MasqPlan& plan);
// GC: removes the rules of `network` whose attachment is not in `valid` (container IDs for
// iptables, whose comment has no ifname; (ID, ifname) for nftables). Keeps going, reports all.
Status GcMasq(const std::string& network, const std::vector<cni::Attachment>& valid);

// The iptables backend's part of each verb above, on `tables` (the verbs pass
// portmap::ipt::RealNatTables(); unit tests an in-memory fake). Teardown and GC go on past a
// failing table and return every table's error message.
Status SetupIptablesMasq(portmap::ipt::NatTables& tables, const MasqPlan& plan);
std::vector<std::string> TeardownIptablesMasq(portmap::ipt::NatTables& tables,
                                              const MasqAttachment& a);
Status CheckIptablesMasq(portmap::ipt::NatTables& tables, const MasqPlan& plan);
std::vector<std::string> GcIptablesMasq(portmap::ipt::NatTables& tables, const std::string& network,
                                        const std::set<std::string>& valid_ids);

// The nftables backend's part of each verb above, on `ruleset` (the verbs pass
// netfilter::RealRuleset(); unit tests an in-memory fake). Each reads the table and commits on
// the generation it read, again when another writer committed in between.
Status SetupNftMasq(netfilter::Ruleset& ruleset, const MasqAttachment& a, const MasqPlan& plan);
Status TeardownNftMasq(netfilter::Ruleset& ruleset, const MasqAttachment& a);
Status CheckNftMasq(netfilter::Ruleset& ruleset, const MasqAttachment& a, const MasqPlan& plan);
Status GcNftMasq(netfilter::Ruleset& ruleset, const std::string& network,
                 const std::vector<cni::Attachment>& valid);

}  // namespace nodegate::bridge
