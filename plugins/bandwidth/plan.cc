#include "plugins/bandwidth/plan.h"

#include <sstream>

#include "lib/base/hash.h"

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

}  // namespace

std::string IfbName(const std::string& network, const std::string& container_id) {
  return HashedName(kIfbPrefix, network, container_id, 15);
}

std::string IfbAlias(const Attachment& a) {
  return std::string(kAliasTag) + " " + a.network + " " + a.container_id + " " + a.ifname;
}

std::optional<Attachment> ParseIfbAlias(const std::string& alias) {
  std::istringstream in(alias);
  std::string tag;
  Attachment a;
  if (!(in >> tag >> a.network >> a.container_id >> a.ifname) || tag != kAliasTag) {
    return std::nullopt;
  }
  std::string extra;
  if (in >> extra) {
    return std::nullopt;
  }
  return a;
}

ShapingPlan BuildPlan(const BandwidthConfig& config, const Attachment& attachment,
                      const tc::PschedClock& clock) {
  ShapingPlan plan;
  const bool subnets = config.subnet_mode != SubnetMode::kAll;
  const bool unshaped_mode = config.subnet_mode == SubnetMode::kUnshaped;

  if (config.ingress.enabled()) {
    if (!subnets) {
      plan.host_root.push_back(Tbf(tc::MakeHandle(1, 0), tc::kRootParent, config.ingress, clock));
    } else {
      // Band 0 (class 1:1) is the unshaped path, band 1 (class 1:2) the TBF. Unclassified
      // traffic goes to the shaped band with unshapedSubnets and to the unshaped band with
      // shapedSubnets.
      tc::Qdisc prio;
      prio.kind = "prio";
      prio.handle = tc::MakeHandle(1, 0);
      prio.parent = tc::kRootParent;
      prio.prio_bands = 2;
      prio.prio_map.fill(unshaped_mode ? 1 : 0);
      plan.host_root.push_back(prio);
      tc::Qdisc fifo;
      fifo.kind = "pfifo";
      fifo.handle = tc::MakeHandle(2, 0);
      fifo.parent = tc::MakeHandle(1, 1);
      fifo.fifo_limit = kUnshapedFifoLimit;
      plan.host_root.push_back(fifo);
      plan.host_root.push_back(
          Tbf(tc::MakeHandle(3, 0), tc::MakeHandle(1, 2), config.ingress, clock));
      const uint32_t target = unshaped_mode ? tc::MakeHandle(1, 1) : tc::MakeHandle(1, 2);
      for (const net::IpPrefix& subnet : config.subnets) {
        // Traffic to the container: the remote end is the packet's source.
        tc::Filter f = SubnetFilter(tc::MakeHandle(1, 0), subnet, /*match_source=*/true);
        f.classid = target;
        plan.host_root_filters.push_back(f);
      }
    }
  }

  if (config.egress.enabled()) {
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
    } else {
      for (const net::IpPrefix& subnet : config.subnets) {
        // Traffic from the container: the remote end is the packet's destination.
        tc::Filter f = SubnetFilter(tc::kIngressHandle, subnet, /*match_source=*/false);
        if (unshaped_mode) {
          f.actions = {tc::Action{.kind = tc::ActionKind::kGact, .verdict = tc::kActOk}};
        } else {
          f.classid = tc::MakeHandle(1, 1);
          f.actions = {Redirect()};
        }
        plan.host_ingress_filters.push_back(f);
      }
      if (unshaped_mode) {
        catch_all.pref = kPrefCatchAll;
        plan.host_ingress_filters.push_back(catch_all);
      }
    }
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
