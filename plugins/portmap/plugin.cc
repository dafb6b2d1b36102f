#include "plugins/portmap/plugin.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include "lib/cni/logging.h"
#include "lib/cni/version.h"
#include "lib/conntrack/conntrack.h"
#include "plugins/portmap/conflicts.h"
#include "plugins/portmap/localnet.h"

namespace nodegate::portmap {
namespace {

std::unique_ptr<PortMapper> Make(Backend backend, const Config& config) {
  return backend == Backend::kIptables ? MakeIptablesMapper(config.iptables_mode)
                                       : MakeNftablesMapper();
}

// Stale UDP conntrack entries would keep sending a host port's traffic to the old target.
// In a plugin process the flush runs right after it exits, in the helper that releases its
// nfnetlink sockets (lib/netfilter/release.h): the kernel's walk of the whole conntrack hash
// (2-10 ms a dump, 25 ms at 20,000 entries) is no longer in the runtime's wait. The rules are
// committed before, so the first datagram after the flush takes the new mapping; until then
// the pod's containers have not started (ADD) or are gone (DEL): docs/performance/conntrack.md,
// "After the plugin's exit". Failures are logged (when the flush runs in the call), not fatal, as
// in the reference.
void FlushUdpConntrack(const Config& config, bool only_known_families) {
  for (const auto family : {net::Family::kV4, net::Family::kV6}) {
    if (only_known_families && !config.container(family)) continue;
    std::vector<uint16_t> ports;
    for (const auto& m : config.MappingsFor(family)) {
      if (m.protocol == Protocol::kUdp) ports.push_back(static_cast<uint16_t>(m.host_port));
    }
    if (ports.empty()) continue;
    const int af = family == net::Family::kV4 ? AF_INET : AF_INET6;
    if (conntrack::DeleteByDestinationPortAfterExit(af, IPPROTO_UDP, ports)) {
      cni::LogDebug("portmap: UDP conntrack flush of {} ports runs after exit", ports.size());
      continue;
    }
    auto deleted = conntrack::DeleteByDestinationPort(af, IPPROTO_UDP, ports);
    if (!deleted.ok()) {
      cni::LogWarn("portmap: UDP conntrack flush failed: {}", deleted.error().msg);
    } else if (deleted->deleted > 0) {
      cni::LogInfo("portmap: deleted {} UDP conntrack entries", deleted->deleted);
    } else if (deleted->dumps == 0) {
      cni::LogDebug("portmap: no conntrack entry in the namespace, nothing to flush");
    }
  }
}

// When an operation fails, say so plainly if the backend itself is the problem.
Status Explain(Status status, PortMapper& mapper, const Config& config) {
  if (status.ok() || status.error().code != kErrKernel) return status;
  if (Status usable = mapper.Usable(); !usable.ok()) {
    const std::string name(config.backend ? BackendName(*config.backend) : "auto-detected");
    return Error(kErrKernel, name + " backend is not usable: " + usable.error().msg);
  }
  return status;
}

}  // namespace

Result<std::unique_ptr<PortMapper>> SelectMapper(const Config& config) {
  if (config.backend) return Make(*config.backend, config);
  auto iptables = MakeIptablesMapper();
  Status ipt = iptables->Usable();
  if (ipt.ok()) return iptables;
  auto nftables = MakeNftablesMapper();
  Status nft = nftables->Usable();
  if (nft.ok()) return nftables;
  return Error(kErrKernel, "neither iptables nor nftables is usable: " + ipt.error().msg + "; " +
                               nft.error().msg);
}

Result<cni::CniResult> CmdAdd(const cni::CmdArgs& args) {
  NG_ASSIGN_OR_RETURN(Config config, ParseConfig(args.conf, {.container_id = args.container_id,
                                                             .ifname = args.ifname,
                                                             .purpose = Purpose::kAdd}));
  if (!args.conf.prev_result) {
    return Error(kErrInvalidConfig, "must be called as chained plugin");
  }
  cni::CniResult result = *args.conf.prev_result;
  if (config.mappings.empty()) return result;

  NG_ASSIGN_OR_RETURN(auto mapper, SelectMapper(config));
  // "reject": the check and the install under one lock, so two ADDs cannot both pass.
  std::optional<sys::FileLock> conflict_lock;
  if (config.host_port_conflicts == HostPortConflicts::kReject) {
    NG_ASSIGN_OR_RETURN(conflict_lock, LockForConflictCheck());
    NG_RETURN_IF_ERROR(RefuseTakenPorts(config));
  }
  NG_RETURN_IF_ERROR(Explain(mapper->Forward(config), *mapper, config));
  conflict_lock.reset();
  FlushUdpConntrack(config, /*only_known_families=*/true);
  if (config.snat && config.container_v4) {
    if (Status s = EnableRouteLocalnet(config.container_v4->address()); !s.ok()) {
      cni::LogWarn("portmap: route_localnet not set: {}", s.error().msg);
    }
  }
  return result;
}

// DEL of a config that cannot be read: what the container owns is found by network name and
// container ID alone, so remove it from every backend that is usable on this node.
Status UnforwardEverywhere(const cni::CmdArgs& args, const Error& why) {
  cni::LogWarn(
      "portmap DEL: config unreadable ({}); removing every mapping of container {} in "
      "network {}",
      why.msg, args.container_id, args.conf.name);
  Config config;
  config.network_name = args.conf.name;
  config.container_id = args.container_id;
  config.ifname = args.ifname;
  for (const auto backend : {Backend::kIptables, Backend::kNftables}) {
    auto mapper = Make(backend, config);
    if (!mapper->Usable().ok()) continue;
    NG_RETURN_IF_ERROR(mapper->Unforward(config));
  }
  return OkStatus();
}

Status CmdDel(const cni::CmdArgs& args) {
  auto parsed = ParseConfig(
      args.conf,
      {.container_id = args.container_id, .ifname = args.ifname, .purpose = Purpose::kDel});
  if (!parsed.ok()) return UnforwardEverywhere(args, parsed.error());
  const Config& config = *parsed;
  NG_ASSIGN_OR_RETURN(auto mapper, SelectMapper(config));
  NG_RETURN_IF_ERROR(Explain(mapper->Unforward(config), *mapper, config));
  // prevResult names the container's families; without it, both. (Each family is one pass
  // over the whole conntrack table in the kernel.)
  FlushUdpConntrack(config,
                    /*only_known_families=*/config.container_v4 || config.container_v6);
  return OkStatus();
}

Status CmdCheck(const cni::CmdArgs& args) {
  NG_ASSIGN_OR_RETURN(Config config, ParseConfig(args.conf, {.container_id = args.container_id,
                                                             .ifname = args.ifname,
                                                             .purpose = Purpose::kCheck}));
  if (!args.conf.prev_result) {
    return Error(kErrInvalidConfig, "Required prevResult missing");
  }
  if (config.mappings.empty()) return OkStatus();
  NG_ASSIGN_OR_RETURN(auto mapper, SelectMapper(config));
  return mapper->Check(config);
}

Status CmdGc(const cni::CmdArgs& args) {
  NG_ASSIGN_OR_RETURN(
      Config config,
      ParseConfig(args.conf, {.container_id = "", .ifname = "", .purpose = Purpose::kGc}));
  NG_ASSIGN_OR_RETURN(auto attachments, cni::ParseValidAttachments(args.conf.raw));
  std::set<std::string> valid;
  for (const auto& a : attachments) valid.insert(a.container_id);
  // Mappings may have been made by either backend (the config can have changed since).
  std::string errors;
  for (const auto backend : {Backend::kIptables, Backend::kNftables}) {
    if (config.backend && *config.backend != backend) continue;
    auto mapper = Make(backend, config);
    if (!mapper->Usable().ok()) continue;
    if (Status s = mapper->Gc(config.network_name, valid); !s.ok()) {
      errors += (errors.empty() ? "" : "; ") + s.error().msg;
    }
  }
  if (!errors.empty()) return Error(kErrKernel, errors);
  return OkStatus();
}

Status CmdStatus(const cni::CmdArgs& args) {
  NG_ASSIGN_OR_RETURN(
      Config config,
      ParseConfig(args.conf, {.container_id = "", .ifname = "", .purpose = Purpose::kGc}));
  if (config.backend) {
    return Make(*config.backend, config)->Usable();
  }
  auto mapper = SelectMapper(config);
  if (!mapper.ok()) return Error(kErrPluginNotAvailable, mapper.error().msg);
  return OkStatus();
}

cni::Plugin MakePlugin() {
  return cni::SuitePlugin(
      "portmap", cni::AllVersions(), ConfigShape(),
      {.add = CmdAdd, .del = CmdDel, .check = CmdCheck, .gc = CmdGc, .status = CmdStatus});
}

}  // namespace nodegate::portmap
