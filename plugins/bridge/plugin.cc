#include "plugins/bridge/plugin.h"

#include <fcntl.h>
#include <strings.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "lib/base/scope_guard.h"
#include "lib/cni/delegate.h"
#include "lib/cni/logging.h"
#include "lib/cni/version.h"
#include "lib/json/field.h"
#include "lib/netlink/link.h"
#include "lib/sys/fd.h"
#include "lib/sys/netns.h"
#include "plugins/bridge/check.h"
#include "plugins/bridge/config.h"
#include "plugins/bridge/container.h"
#include "plugins/bridge/links.h"
#include "plugins/bridge/masq.h"
#include "plugins/bridge/plan.h"
#include "plugins/bridge/spoofcheck.h"

namespace nodegate::bridge {
namespace {

using cni::Command;
using cni::DelegateCall;

// A route socket in the namespace at `path` (the thread enters it only to open the socket).
Result<netlink::Socket> SocketIn(const std::string& path) {
  NG_ASSIGN_OR_RETURN(auto scope, sys::NetnsScope::Enter(path));
  return netlink::Socket::Open();
}

Result<sys::UniqueFd> OpenNetns(const std::string& path) {
  sys::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    return Error(kErrInvalidNetns,
                 "failed to open netns \"" + path + "\": " + std::strerror(errno));
  }
  return fd;
}

// The library check of CNI's reference skel (>= 1.2): a container namespace that is the
// plugin's own would put the container's end of the pair on the node.
Status NotOwnNetns(const cni::CmdArgs& args) {
  for (const char* name : {"CNI_NETNS_OVERRIDE"}) {
    const char* v = std::getenv(name);
    if (v != nullptr && (strcasecmp(v, "1") == 0 || strcasecmp(v, "true") == 0)) return OkStatus();
  }
  if (sys::IsCurrentNetns(args.netns)) {
    return Error(kErrInvalidNetns,
                 "netns \"" + args.netns + "\" is the plugin's own network namespace");
  }
  return OkStatus();
}

MasqAttachment AttachmentOf(const cni::CmdArgs& args) {
  return {.network = args.conf.name, .ifname = args.ifname, .container_id = args.container_id};
}

std::vector<net::IpPrefix> AddressesOf(const cni::CniResult& result) {
  std::vector<net::IpPrefix> out;
  for (const cni::IpConfig& ip : result.ips) out.push_back(ip.address);
  return out;
}

// What an ADD made so far, undone in reverse when it fails.
class Rollback {
 public:
  explicit Rollback(const cni::CmdArgs& args) : args_(args) {}
  ~Rollback() {
    if (done_) return;
    if (spoofcheck_) Log(TeardownSpoofCheck(args_.container_id, args_.ifname), "macspoofchk");
    if (masq_) Log(TeardownMasq(AttachmentOf(args_)), "ipMasq");
    if (node_ != nullptr && host_veth_ > 0) {
      Log(netlink::DeleteLinkByIndex(*node_, host_veth_), "veth pair");
    }
    if (ipam_) {
      // Still running: its reservation, if it made one, is released below all the same.
      if (ipam_->Wait().ok()) ipam_added_ = true;
      ipam_.reset();
    }
    if (ipam_added_) {
      Log(cni::DelegateWithoutResult(ipam_type_, Command::kDel, args_), "IPAM reservation");
    }
  }
  void Ipam(std::string type, DelegateCall call) {
    ipam_type_ = std::move(type);
    ipam_.emplace(std::move(call));
  }
  // The IPAM call's result, once: after it the reservation is this object's to release.
  Result<cni::CniResult> IpamResult(const std::string& version) {
    auto result = ipam_->WaitForResult(version);
    ipam_.reset();
    ipam_added_ = result.ok();
    return result;
  }
  void Veth(netlink::Socket& node, int host_index) {
    node_ = &node;
    host_veth_ = host_index;
  }
  void Masq() { masq_ = true; }
  void SpoofCheck() { spoofcheck_ = true; }
  void Dismiss() { done_ = true; }

 private:
  static void Log(const Status& s, const char* what) {
    if (!s.ok()) cni::LogWarn("rollback of the failed ADD: {}: {}", what, s.error().msg);
  }
  const cni::CmdArgs& args_;
  bool done_ = false;
  std::string ipam_type_;
  std::optional<DelegateCall> ipam_;
  bool ipam_added_ = false;
  netlink::Socket* node_ = nullptr;
  int host_veth_ = 0;
  bool masq_ = false;
  bool spoofcheck_ = false;
};

// A result without an address has no 0.1.0/0.2.0 form: refused before anything is made (the
// reference finds out after making it all).
Status RefuseResultWithoutAddress(const BridgeConfig& config, const std::string& version) {
  NG_ASSIGN_OR_RETURN(const cni::ResultFamily family, cni::FamilyOf(version));
  if (!config.layer3() && family == cni::ResultFamily::k020) {
    return Error(kErrIncompatibleVersion,
                 "cannot convert: no valid IP addresses (a bridge without IPAM has none, and "
                 "version " +
                     version + " results need one)");
  }
  return OkStatus();
}

// The links of one attachment, as ADD made or found them.
struct Links {
  netlink::LinkInfo bridge;
  VethPair pair;
};

// The bridge, the pair (its container end made in the container directly), the port's
// settings and the MAC spoof check: everything of layer 2.
Result<Links> MakeLinks(netlink::Socket& node, netlink::Socket& container, int container_ns,
                        const cni::CmdArgs& args, const BridgeConfig& config, Rollback& rollback) {
  Links links;
  NG_ASSIGN_OR_RETURN(links.bridge, EnsureBridge(node, config));
  NG_ASSIGN_OR_RETURN(links.pair,
                      CreateVethPair(node, container, container_ns, args.ifname, config));
  rollback.Veth(node, links.pair.host.index);
  NG_RETURN_IF_ERROR(AttachPort(node, links.pair.host, links.bridge.index, PortSettingsOf(config)));
  if (config.mac_spoof_check) {
    rollback.SpoofCheck();
    NG_RETURN_IF_ERROR(SetupSpoofCheck({.host_veth = links.pair.host.name,
                                        .container_mac = links.pair.container.mac,
                                        .container_id = args.container_id,
                                        .ifname = args.ifname}));
  }
  return links;
}

// isGateway: the plan's gateway addresses on the bridge, or on its VLAN interface (made here,
// and added to the result's interfaces), and forwarding on for each family that has one.
Status SetGateways(netlink::Socket& node, const netlink::LinkInfo& bridge,
                   const BridgeConfig& config, const L3Plan& plan, cni::CniResult& result) {
  std::optional<netlink::LinkInfo> vlan_gateway;
  for (const auto* gateways : {&plan.gateways_v4, &plan.gateways_v6}) {
    for (const net::IpPrefix& gateway : *gateways) {
      if (config.vlan != 0) {
        if (!vlan_gateway) {
          NG_ASSIGN_OR_RETURN(vlan_gateway, EnsureVlanGateway(node, bridge, config));
          result.interfaces.push_back({.name = vlan_gateway->name, .mac = vlan_gateway->mac});
        }
        NG_RETURN_IF_ERROR(EnsureGatewayAddress(node, *vlan_gateway, gateway, config.force_address,
                                                vlan_gateway->mac));
      } else if (Status s =
                     EnsureGatewayAddress(node, bridge, gateway, config.force_address, bridge.mac);
                 !s.ok()) {
        return s.error().WithContext("failed to set bridge addr");  // the reference's words
      }
    }
    if (!gateways->empty()) NG_RETURN_IF_ERROR(EnableForwarding(gateways->front().family()));
  }
  return OkStatus();
}

// Layer 3, once the IPAM's result is in: the container's addresses and routes, the gateways,
// the masquerade rules; the result's ips, routes and dns.
Status ConfigureLayer3(netlink::Socket& node, netlink::Socket& container, const Links& links,
                       const cni::CmdArgs& args, const BridgeConfig& config, Rollback& rollback,
                       cni::CniResult& result) {
  // Chosen while the IPAM plugin still runs (a PATH lookup).
  const MasqBackend masq_backend =
      config.ip_masq ? ChooseMasqBackend(config.masq_backend) : MasqBackend::kIptables;
  NG_ASSIGN_OR_RETURN(const cni::CniResult ipam, rollback.IpamResult(args.conf.cni_version));
  NG_ASSIGN_OR_RETURN(L3Plan plan, BuildL3Plan(config, ipam, args.ifname));
  {
    NG_ASSIGN_OR_RETURN(auto in_container, sys::NetnsScope::Enter(args.netns));
    NG_RETURN_IF_ERROR(ConfigureContainer(container, links.pair.container, plan));
  }
  NG_RETURN_IF_ERROR(SetGateways(node, links.bridge, config, plan, result));
  if (config.ip_masq) {
    rollback.Masq();
    NG_RETURN_IF_ERROR(
        SetupMasq(masq_backend, AttachmentOf(args),
                  BuildMasqPlan(args.conf.name, args.container_id, AddressesOf(plan.result))));
  }
  result.ips = std::move(plan.result.ips);
  result.routes = std::move(plan.result.routes);
  result.dns = std::move(plan.result.dns);
  return OkStatus();
}

// The MACs as they are now: the bridge's moves when its first port joins (unless pinned), and
// the reference reports both as it finds them at the end.
Status ReportMacsAsTheyAreNow(netlink::Socket& node, const Links& links, cni::CniResult& result) {
  NG_ASSIGN_OR_RETURN(auto host_now, netlink::GetLinkByIndex(node, links.pair.host.index));
  if (host_now) result.interfaces[1].mac = host_now->mac;
  NG_ASSIGN_OR_RETURN(auto bridge_now, netlink::GetLinkByIndex(node, links.bridge.index));
  if (bridge_now) result.interfaces[0].mac = bridge_now->mac;
  return OkStatus();
}

// DEL's part in the container's namespace, when it is still there: its interface goes
// (links.h). A namespace that cannot be entered any more is gone, with its interfaces.
Status RemoveFromContainer(const cni::CmdArgs& args) {
  struct stat st {};
  if (args.netns.empty() || ::stat(args.netns.c_str(), &st) != 0) return OkStatus();
  auto container = SocketIn(args.netns);
  if (!container.ok()) {
    return container.error().code == kErrInvalidNetns ? OkStatus() : container.error();
  }
  return RemoveContainerInterface(*container, args.ifname);
}

Status JoinErrors(const std::string& what, const std::vector<Error>& errors) {
  if (errors.empty()) return OkStatus();
  std::string details;
  for (size_t i = 1; i < errors.size(); ++i) details += (i > 1 ? "; " : "") + errors[i].msg;
  Error first = errors.front();
  if (!details.empty()) first.details = details;
  if (!what.empty()) first.msg = what + ": " + first.msg;
  return first;
}

}  // namespace

const std::vector<std::string>& SupportedVersions() {
  static const std::vector<std::string> kVersions = {"0.1.0", "0.2.0", "0.3.0", "0.3.1",
                                                     "0.4.0", "1.0.0", "1.1.0"};
  return kVersions;
}

Result<cni::CniResult> CmdAdd(const cni::CmdArgs& args) {
  NG_ASSIGN_OR_RETURN(const BridgeConfig config, ParseBridgeConfig(args.conf, args.args));
  NG_RETURN_IF_ERROR(RefuseResultWithoutAddress(config, args.conf.cni_version));
  NG_RETURN_IF_ERROR(NotOwnNetns(args));
  NG_ASSIGN_OR_RETURN(sys::UniqueFd container_ns, OpenNetns(args.netns));

  // The sockets are opened after the IPAM plugin is started, but destroyed after `rollback`,
  // which uses them.
  std::optional<netlink::Socket> node;
  std::optional<netlink::Socket> container;
  Rollback rollback(args);
  // The IPAM plugin is a process of its own: it runs while the sockets are opened and the
  // links made (its exec is the longest part of an ADD: started first).
  if (config.layer3()) {
    NG_ASSIGN_OR_RETURN(DelegateCall ipam,
                        DelegateCall::Start(config.ipam_type, Command::kAdd, args));
    rollback.Ipam(config.ipam_type, std::move(ipam));
  }
  NG_ASSIGN_OR_RETURN(node, netlink::Socket::Open());
  NG_ASSIGN_OR_RETURN(container, SocketIn(args.netns));
  NG_ASSIGN_OR_RETURN(const Links links,
                      MakeLinks(*node, *container, container_ns.get(), args, config, rollback));
  cni::CniResult result;
  result.interfaces = {
      cni::Interface{.name = links.bridge.name, .mac = links.bridge.mac},
      cni::Interface{.name = links.pair.host.name, .mac = links.pair.host.mac},
      cni::Interface{.name = links.pair.container.name,
                     .mac = links.pair.container.mac,
                     .sandbox = args.netns},
  };
  if (config.layer3()) {
    NG_RETURN_IF_ERROR(ConfigureLayer3(*node, *container, links, args, config, rollback, result));
  } else {
    if (!config.disable_container_interface) {
      NG_RETURN_IF_ERROR(netlink::ChangeLink(*container, links.pair.container.index, {.up = true},
                                             "failed to set \"" + args.ifname + "\" up"));
    }
    if (config.dns_given) result.dns = config.dns;
  }
  NG_RETURN_IF_ERROR(ReportMacsAsTheyAreNow(*node, links, result));
  result.cni_version = args.conf.cni_version;
  rollback.Dismiss();
  return result;
}

Status CmdDel(const cni::CmdArgs& args) {
  // What DEL removes is named by the network, container and interface, so a config it cannot
  // read in full still lets it remove all of that (the reference's DEL fails, and the runtime
  // stops tearing the chain down).
  auto parsed = ParseBridgeConfig(args.conf, "");
  if (!parsed.ok()) {
    cni::LogWarn("bridge DEL: config unreadable ({}); removing what container {} owns",
                 parsed.error().msg, args.container_id);
  }
  const std::string ipam_type = json_field::StringOrEmpty(args.conf.ipam, "type");
  std::vector<Error> errors;
  std::optional<DelegateCall> ipam;
  if (!ipam_type.empty()) {
    auto started = DelegateCall::Start(ipam_type, Command::kDel, args);
    if (started.ok()) {
      ipam.emplace(std::move(started).value());
    } else {
      errors.push_back(started.error());
    }
  }
  if (Status s = RemoveFromContainer(args); !s.ok()) errors.push_back(s.error());
  if (Status s = TeardownMasq(AttachmentOf(args)); !s.ok()) errors.push_back(s.error());
  if (Status s = TeardownSpoofCheck(args.container_id, args.ifname); !s.ok()) {
    errors.push_back(s.error());
  }
  if (ipam) {
    if (auto done = ipam->Wait(); !done.ok()) errors.push_back(done.error());
  }
  return JoinErrors("", errors);
}

Status CmdCheck(const cni::CmdArgs& args) {
  NG_ASSIGN_OR_RETURN(const BridgeConfig config, ParseBridgeConfig(args.conf, args.args));
  NG_ASSIGN_OR_RETURN(sys::UniqueFd container_ns, OpenNetns(args.netns));
  if (config.layer3()) {
    NG_RETURN_IF_ERROR(cni::DelegateWithoutResult(config.ipam_type, Command::kCheck, args));
  }
  if (!args.conf.prev_result) return Error(kErrInvalidConfig, "Required prevResult missing");
  return CheckAttachment(args, config, *args.conf.prev_result);
}

Status CmdGc(const cni::CmdArgs& args) {
  NG_ASSIGN_OR_RETURN(const BridgeConfig config, ParseBridgeConfig(args.conf, args.args));
  NG_ASSIGN_OR_RETURN(const std::vector<cni::Attachment> valid,
                      cni::ParseValidAttachments(args.conf.raw));
  std::vector<Error> errors;
  // Delegated plugins get GC too (spec 1.1.0): the IPAM's reservations of gone attachments.
  if (config.layer3()) {
    if (Status s = cni::DelegateWithoutResult(config.ipam_type, Command::kGc, args); !s.ok()) {
      errors.push_back(s.error());
    }
  }
  if (Status s = GcMasq(args.conf.name, valid); !s.ok()) errors.push_back(s.error());
  if (Status s = GcSpoofCheck(); !s.ok()) errors.push_back(s.error());
  return JoinErrors("GC", errors);
}

Status CmdStatus(const cni::CmdArgs& args) {
  NG_ASSIGN_OR_RETURN(const BridgeConfig config, ParseBridgeConfig(args.conf, args.args));
  if (auto sock = netlink::Socket::Open(); !sock.ok()) {
    return Error(kErrPluginNotAvailable, "bridge: " + sock.error().msg);
  }
  if (config.layer3()) {
    NG_RETURN_IF_ERROR(cni::DelegateWithoutResult(config.ipam_type, Command::kStatus, args));
  }
  return OkStatus();
}

cni::Plugin MakePlugin() {
  return cni::SuitePlugin(
      "bridge", SupportedVersions(), ConfigShape(),
      {.add = CmdAdd, .del = CmdDel, .check = CmdCheck, .gc = CmdGc, .status = CmdStatus});
}

}  // namespace nodegate::bridge
