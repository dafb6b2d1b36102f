#include "plugins/bandwidth/plugin.h"

#include <set>

#include "lib/cni/logging.h"
#include "lib/cni/version.h"
#include "lib/netlink/link.h"
#include "lib/tc/kernel.h"
#include "plugins/bandwidth/config.h"
#include "plugins/bandwidth/host_veth.h"
#include "plugins/bandwidth/plan.h"
#include "plugins/bandwidth/shaper.h"

namespace nodegate::bandwidth {
namespace {

Attachment AttachmentOf(const cni::CmdArgs& args) {
  return Attachment{
      .network = args.conf.name, .container_id = args.container_id, .ifname = args.ifname};
}

// DEL's best-effort search for the host veth: prevResult's discovery when it can run, else the
// container interface's peer when that is a veth in this namespace. Anything missing (netns
// gone, veth gone) means the kernel already removed the veth and its qdiscs.
std::optional<netlink::LinkInfo> FindHostVethForDel(netlink::Socket& sock,
                                                    const cni::CmdArgs& args) {
  if (args.netns.empty()) {
    return std::nullopt;
  }
  if (args.conf.prev_result && !args.conf.prev_result->interfaces.empty()) {
    auto veth = FindHostVeth(sock, args.netns, args.ifname, args.conf.prev_result->interfaces);
    if (veth.ok()) {
      return *veth;
    }
    // ADD may have found it through the container's end; so does DEL.
    cni::LogDebug("DEL: host veth not in prevResult: {}", veth.error().msg);
  }
  auto peer = ContainerVethPeerIndex(args.netns, args.ifname);
  if (!peer.ok()) {
    cni::LogDebug("DEL: {}", peer.error().msg);
    return std::nullopt;
  }
  auto link = netlink::GetLinkByIndex(sock, *peer);
  if (!link.ok() || !*link || (*link)->kind != "veth") {
    return std::nullopt;
  }
  return **link;
}

bool AttachmentIsValid(const std::vector<cni::Attachment>& valid, const Attachment& a) {
  for (const cni::Attachment& v : valid) {
    if (AliasFieldIs(a.container_id, v.container_id) &&
        (v.ifname.empty() || v.ifname == a.ifname)) {
      return true;
    }
  }
  return false;
}

// Every ifindex some mirred action on an ingress qdisc redirects to: ifbs still in use.
Result<std::set<int>> RedirectTargets(netlink::Socket& sock) {
  std::set<int> targets;
  NG_ASSIGN_OR_RETURN(auto qdiscs, tc::ListAllQdiscs(sock));
  for (const auto& [ifindex, q] : qdiscs) {
    if (q.kind != "ingress" && q.kind != "clsact") {
      continue;
    }
    for (uint32_t parent : {tc::kIngressHandle, 0xfffffff2u}) {
      auto filters = tc::ListFilters(sock, ifindex, parent);
      if (!filters.ok()) {
        continue;
      }
      for (const tc::Filter& f : *filters) {
        for (const tc::Action& a : f.actions) {
          if (a.kind == tc::ActionKind::kMirredEgressRedirect) {
            targets.insert(a.ifindex);
          }
        }
      }
    }
  }
  return targets;
}

}  // namespace

const std::vector<std::string>& SupportedVersions() {
  static const std::vector<std::string> kVersions = {"0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"};
  return kVersions;
}

Result<cni::CniResult> CmdAdd(const cni::CmdArgs& args) {
  NG_ASSIGN_OR_RETURN(BandwidthConfig config, ParseBandwidthConfig(args.conf));
  cni::CniResult result;
  if (args.conf.prev_result) {
    result = *args.conf.prev_result;
  }
  result.cni_version = args.conf.cni_version;
  if (!config.shapes_anything()) {
    return result;
  }
  if (!args.conf.prev_result) {
    return Error(kErrInvalidConfig, "must be called as chained plugin");
  }
  NG_ASSIGN_OR_RETURN(tc::PschedClock clock, tc::PschedClock::ReadFromProc());
  const Attachment attachment = AttachmentOf(args);
  const ShapingPlan plan = BuildPlan(config, attachment, clock);
  for (const Direction* d : {&config.ingress, &config.egress}) {
    if (d->enabled() && tc::TbfBufferWrapped(d->rate_bits, d->burst_bits, clock)) {
      cni::LogWarn(
          "burst {} bits at {} bit/s takes longer than the TBF buffer can hold; installing "
          "the reference's (wrapped) buffer",
          d->burst_bits, d->rate_bits);
    }
  }

  NG_ASSIGN_OR_RETURN(netlink::Socket sock, netlink::Socket::Open());
  NG_ASSIGN_OR_RETURN(netlink::LinkInfo veth,
                      FindHostVeth(sock, args.netns, args.ifname, result.interfaces));
  tc::NetlinkKernel kernel(sock);
  NG_ASSIGN_OR_RETURN(std::optional<netlink::LinkInfo> ifb, ApplyPlan(kernel, plan, veth));
  if (ifb) {
    result.interfaces.push_back(cni::Interface{.name = ifb->name, .mac = ifb->mac});
  } else {
    // Egress shaping is off (perhaps turned off by this repeated ADD): no ifb may remain.
    NG_RETURN_IF_ERROR(RemoveIfb(kernel, IfbName(attachment.network, attachment.container_id)));
  }
  return result;
}

Status CmdDel(const cni::CmdArgs& args) {
  // What DEL removes is named by the network and container alone (the ifb) or found on the
  // node (the host veth's qdiscs), so a config the reference would reject (its DEL fails
  // and the runtime stops tearing down the chain) is logged and the removal goes on.
  if (Status valid = ValidateConfig(args.conf); !valid.ok()) {
    cni::LogWarn("bandwidth DEL: config unreadable ({}); removing what container {} owns",
                 valid.error().msg, args.container_id);
  }
  NG_ASSIGN_OR_RETURN(netlink::Socket sock, netlink::Socket::Open());
  tc::NetlinkKernel kernel(sock);
  if (std::optional<netlink::LinkInfo> veth = FindHostVethForDel(sock, args)) {
    NG_RETURN_IF_ERROR(RemoveHostObjects(kernel, veth->index));
  }
  return RetireIfb(kernel, IfbName(args.conf.name, args.container_id));
}

Status CmdCheck(const cni::CmdArgs& args) {
  NG_ASSIGN_OR_RETURN(BandwidthConfig config, ParseBandwidthConfig(args.conf));
  if (!args.conf.prev_result) {
    return Error(kErrInvalidConfig, "must be called as a chained plugin");
  }
  if (!config.shapes_anything()) {
    return OkStatus();
  }
  NG_ASSIGN_OR_RETURN(tc::PschedClock clock, tc::PschedClock::ReadFromProc());
  const ShapingPlan plan = BuildPlan(config, AttachmentOf(args), clock);
  NG_ASSIGN_OR_RETURN(netlink::Socket sock, netlink::Socket::Open());
  NG_ASSIGN_OR_RETURN(netlink::LinkInfo veth, FindHostVeth(sock, args.netns, args.ifname,
                                                           args.conf.prev_result->interfaces));
  tc::NetlinkKernel kernel(sock);
  return CheckPlan(kernel, plan, veth);
}

Status CmdGc(const cni::CmdArgs& args) {
  NG_RETURN_IF_ERROR(ValidateConfig(args.conf));
  NG_ASSIGN_OR_RETURN(std::vector<cni::Attachment> valid,
                      cni::ParseValidAttachments(args.conf.raw));
  NG_ASSIGN_OR_RETURN(netlink::Socket sock, netlink::Socket::Open());
  NG_ASSIGN_OR_RETURN(std::vector<netlink::LinkInfo> links, netlink::ListLinks(sock));
  tc::NetlinkKernel kernel(sock);

  std::set<std::string> valid_names;
  for (const cni::Attachment& a : valid) {
    valid_names.insert(IfbName(args.conf.name, a.container_id));
  }
  std::optional<std::set<int>> in_use;  // computed only if an unlabelled ifb needs it
  std::vector<std::string> errors;
  for (const netlink::LinkInfo& link : links) {
    if (link.kind != "ifb" || link.name.rfind(kIfbPrefix, 0) != 0) {
      continue;
    }
    bool stale = false;
    if (link.name.rfind(kRetiredIfbPrefix, 0) == 0) {
      stale = true;  // a DEL took it out of service; its helper did not get to delete it
    } else if (std::optional<Attachment> owner = ParseIfbAlias(link.alias)) {
      // Ours: the alias says which attachment it serves. Other networks' ifbs are theirs.
      stale = AliasFieldIs(owner->network, args.conf.name) && !AttachmentIsValid(valid, *owner);
    } else {
      // No alias (made by the reference plugin): the name is a one-way hash, so keep it when it
      // is the name of a valid attachment of this network or when some veth still redirects to
      // it (it may belong to another network); an ifb nothing redirects to is a leak.
      if (valid_names.count(link.name) != 0) {
        continue;
      }
      if (!in_use) {
        auto targets = RedirectTargets(sock);
        if (!targets.ok()) {
          errors.push_back(targets.error().msg);
          break;
        }
        in_use = std::move(targets).value();
      }
      stale = in_use->count(link.index) == 0;
    }
    if (!stale) {
      continue;
    }
    cni::LogInfo("GC: deleting stale ifb {} (alias \"{}\")", link.name, link.alias);
    if (Status s = RemoveIfb(kernel, link.name); !s.ok()) {
      errors.push_back(s.error().msg);  // keep going: GC is best effort per object
    }
  }
  if (!errors.empty()) {
    std::string details;
    for (size_t i = 1; i < errors.size(); ++i) {
      details += (i > 1 ? "; " : "") + errors[i];
    }
    return Error(kErrKernel, "GC: " + errors.front(), details);
  }
  return OkStatus();
}

Status CmdStatus(const cni::CmdArgs& args) {
  if (Status s = ValidateConfig(args.conf); !s.ok()) {
    return s;
  }
  if (auto clock = tc::PschedClock::ReadFromProc(); !clock.ok()) {
    return Error(kErrPluginNotAvailable, "bandwidth: " + clock.error().msg);
  }
  if (auto sock = netlink::Socket::Open(); !sock.ok()) {
    return Error(kErrPluginNotAvailable, "bandwidth: " + sock.error().msg);
  }
  return OkStatus();
}

cni::Plugin MakePlugin() {
  return cni::SuitePlugin(
      "bandwidth", SupportedVersions(), ConfigShape(),
      {.add = CmdAdd, .del = CmdDel, .check = CmdCheck, .gc = CmdGc, .status = CmdStatus});
}

}  // namespace nodegate::bandwidth
