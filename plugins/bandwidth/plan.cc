#include "plugins/bandwidth/plan.h"

#include <algorithm>
#include <cstdio>
#include <string_view>
#include <vector>

#include "lib/base/hash.h"
#include "lib/base/split.h"

namespace nodegate::bandwidth {
namespace {

tc::Qdisc Tbf(uint32_t handle, uint32_t parent, const Direction& d, const tc::PschedClock& clock) {
  tc::Qdisc q;
  q.kind = "tbf";
  q.handle = handle;
  q.parent = parent;
  q.tbf = tc::ComputeTbf(d.rate_bits, d.burst_bits, clock);
  return q;
}

tc::Action Redirect() {
  return tc::Action{
      .kind = tc::ActionKind::kMirredEgressRedirect, .verdict = tc::kActStolen, .ifindex = 0};
}

tc::Filter SubnetFilter(uint32_t parent, const net::IpPrefix& subnet, bool match_source) {
  tc::Filter f;
  f.parent = parent;
  f.pref = subnet.family() == net::Family::kV4 ? kPrefIpv4 : kPrefIpv6;
  f.protocol = tc::ProtocolOf(subnet.family());
  f.keys = tc::AddressKeys(subnet, match_source);
  return f;
}

// Ingress shaping of some subnets only: an HTB root whose one shaped class 1:1 holds the
// rate, with a filter a subnet sending matching traffic to it (or, unshapedSubnets, past it).
void PlanSubnetIngress(const BandwidthConfig& config, const tc::PschedClock& clock,
                       ShapingPlan& plan) {
  const bool unshaped_mode = config.subnet_mode == SubnetMode::kUnshaped;
  const tc::TbfParams tbf =
      tc::ComputeTbf(config.ingress.rate_bits, config.ingress.burst_bits, clock);
  tc::Qdisc htb;
  htb.kind = "htb";
  htb.handle = tc::MakeHandle(1, 0);
  htb.parent = tc::kRootParent;
  // shapedSubnets: default class 0 does not exist, so unclassified traffic goes direct.
  htb.htb_default = unshaped_mode ? 1 : 0;
  htb.htb_direct_qlen = kDirectQueueLen;
  plan.host_root.push_back(htb);
  plan.host_root_classes.push_back(tc::HtbClass{.classid = tc::MakeHandle(1, 1),
                                                .parent = tc::MakeHandle(1, 0),
                                                .rate_bytes = tbf.rate_bytes,
                                                .ceil_bytes = tbf.rate_bytes,
                                                .buffer_ticks = tbf.buffer_ticks,
                                                .cbuffer_ticks = tbf.buffer_ticks,
                                                .quantum = kHtbQuantum,
                                                .prio = 0});
  tc::Qdisc leaf;
  leaf.kind = "bfifo";
  leaf.handle = tc::MakeHandle(2, 0);
  leaf.parent = tc::MakeHandle(1, 1);
  leaf.fifo_limit = tbf.limit_bytes;
  plan.host_root.push_back(leaf);
  // 1:0 is the qdisc itself: HTB sends such packets through its direct queue, unshaped.
  const uint32_t target = unshaped_mode ? tc::MakeHandle(1, 0) : tc::MakeHandle(1, 1);
  for (const net::IpPrefix& subnet : config.subnets) {
    // Traffic to the container: the remote end is the packet's source.
    tc::Filter f = SubnetFilter(tc::MakeHandle(1, 0), subnet, /*match_source=*/true);
    f.classid = target;
    plan.host_root_filters.push_back(f);
  }
}

// Egress: the host side's ingress redirects the container's traffic (all of it, or that of
// the shaped subnets) to an IFB whose root TBF holds the rate.
void PlanEgress(const BandwidthConfig& config, const Attachment& attachment,
                const tc::PschedClock& clock, ShapingPlan& plan) {
  const bool subnets = config.subnet_mode != SubnetMode::kAll;
  const bool unshaped_mode = config.subnet_mode == SubnetMode::kUnshaped;
  IfbPlan ifb;
  ifb.name = IfbName(attachment.network, attachment.container_id);
  ifb.alias = IfbAlias(attachment);
  ifb.root = Tbf(tc::MakeHandle(1, 0), tc::kRootParent, config.egress, clock);
  plan.ifb = ifb;

  tc::Filter catch_all;
  catch_all.parent = tc::kIngressHandle;
  catch_all.protocol = ETH_P_ALL;
  catch_all.classid = tc::MakeHandle(1, 1);
  catch_all.keys = tc::MatchAllKeys();
  catch_all.actions = {Redirect()};
  if (!subnets) {
    catch_all.pref = 1;
    plan.host_ingress_filters.push_back(catch_all);
    return;
  }
  for (const net::IpPrefix& subnet : config.subnets) {
    // Traffic from the container: the remote end is the packet's destination.
    tc::Filter f = SubnetFilter(tc::kIngressHandle, subnet, /*match_source=*/false);
    f.classid = tc::MakeHandle(1, 1);
    if (!unshaped_mode) {
      f.actions = {Redirect()};
    }
    // Unshaped: a match with no action ends classification with "ok", so the packet
    // continues on the host path (no gact needed; act_gact may not even be built).
    plan.host_ingress_filters.push_back(f);
  }
  if (unshaped_mode) {
    catch_all.pref = kPrefCatchAll;
    plan.host_ingress_filters.push_back(catch_all);
  }
}

}  // namespace

std::string IfbName(const std::string& network, const std::string& container_id) {
  return HashedName(kIfbPrefix, network, container_id, 15);
}

std::string RetiredIfbName(const std::string& ifb_name) {
  const size_t prefix = std::string_view(kIfbPrefix).size();
  return kRetiredIfbPrefix + ifb_name.substr(std::min(prefix, ifb_name.size()), 9);
}

std::string HashedAliasField(const std::string& value) {
  return "sha512:" + Sha512Hex(value).substr(0, 32);
}

std::string IfbAlias(const Attachment& a) {
  std::string alias =
      std::string(kAliasTag) + " " + a.network + " " + a.container_id + " " + a.ifname;
  if (alias.size() <= kMaxIfAliasBytes) return alias;
  // Too long for the kernel: the network and container ID by their hashes (at most
  // 18 + 2 * 40 + 1 + 15 = 114 bytes with a 15-byte ifname).
  alias = std::string(kAliasTag) + " " + HashedAliasField(a.network) + " " +
          HashedAliasField(a.container_id) + " " + a.ifname;
  if (alias.size() > kMaxIfAliasBytes) alias.resize(kMaxIfAliasBytes);  // ifname over 15 bytes
  return alias;
}

bool AliasFieldIs(const std::string& field, const std::string& value) {
  return field == value ||
         (field.size() == 39 && field.rfind("sha512:", 0) == 0 && field == HashedAliasField(value));
}

std::optional<Attachment> ParseIfbAlias(const std::string& alias) {
  const std::vector<std::string_view> words = Fields(alias);
  if (words.size() != 4 || words[0] != kAliasTag) {
    return std::nullopt;
  }
  Attachment a;
  a.network = words[1];
  a.container_id = words[2];
  a.ifname = words[3];
  return a;
}

ShapingPlan BuildPlan(const BandwidthConfig& config, const Attachment& attachment,
                      const tc::PschedClock& clock) {
  ShapingPlan plan;
  if (config.ingress.enabled()) {
    if (config.subnet_mode == SubnetMode::kAll) {
      plan.host_root.push_back(Tbf(tc::MakeHandle(1, 0), tc::kRootParent, config.ingress, clock));
    } else {
      PlanSubnetIngress(config, clock, plan);
    }
  }
  if (config.egress.enabled()) {
    PlanEgress(config, attachment, clock, plan);
  }
  return plan;
}

std::vector<tc::Filter> ResolveRedirects(const std::vector<tc::Filter>& filters, int ifb_index) {
  std::vector<tc::Filter> out = filters;
  for (tc::Filter& f : out) {
    for (tc::Action& a : f.actions) {
      if (a.kind == tc::ActionKind::kMirredEgressRedirect) {
        a.ifindex = ifb_index;
      }
    }
  }
  return out;
}

}  // namespace nodegate::bandwidth
