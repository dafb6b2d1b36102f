// `nodegate cni add|check|del|gc|status NETWORK [NETNS]`: runs a network configuration list
// as a container runtime does (runtime/chain), what cnitool should have been: chained lists,
// capability arguments, the runtimes' result cache, GC and STATUS.
#include "cmd/nodegate/cni/cli.h"

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "cmd/nodegate/cni/capability_args.h"
#include "lib/base/hash.h"
#include "lib/cli/output.h"
#include "lib/cli/parse_flags.h"
#include "lib/cni/skel.h"
#include "lib/cni/types.h"
#include "runtime/chain/chain.h"
#include "runtime/conflist/conflist.h"
#include "runtime/invoke/invoke.h"

namespace nodegate::runtime {
namespace {

struct CniFlags {
  std::string verb;
  std::string network;
  std::string netns;
  std::string conf_dir;
  std::string cni_path;
  std::string cache_dir = kDefaultCacheDir;
  std::string container_id;
  std::string ifname = "eth0";
  std::string cni_args;
  std::vector<std::string> publish;
  std::string bandwidth;
  std::vector<std::string> ips;
  std::vector<std::string> valid;
  cli::Format output = cli::Format::kText;
  bool json = false;  // --json, the older spelling of -o json

  bool Text() const { return output == cli::Format::kText; }
};

// Emit: -o json prints as libcni does (Go's MarshalIndent), -o yaml the same value as YAML.
void Emit(const CniFlags& flags, const std::string& go_json) {
  std::cout << (flags.output == cli::Format::kYaml
                    ? cli::ToYaml(nlohmann::ordered_json::parse(go_json))
                    : go_json + "\n");
}

// Print: a verb's outcome as one object (-o json|yaml); text is printed by each verb itself.
void Print(const CniFlags& flags, const std::string& network, const std::string& container_id,
           cni::OrderedJson extra = cni::OrderedJson::object()) {
  cni::OrderedJson j = {{"verb", flags.verb}, {"network", network}};
  if (!container_id.empty()) {
    j["containerID"] = container_id;
    j["ifname"] = flags.ifname;
  }
  for (auto it = extra.begin(); it != extra.end(); ++it) {
    j[it.key()] = it.value();
  }
  Emit(flags, cni::FormatJson(j));
}

std::string EnvOr(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::string(v) : fallback;
}

// A bare name means a named namespace (/run/netns/NAME), as `ip netns` shows them.
std::string NetnsPath(const std::string& netns) {
  if (netns.empty() || netns.find('/') != std::string::npos) {
    return netns;
  }
  return "/run/netns/" + netns;
}

Result<std::vector<std::pair<std::string, std::string>>> ParseCniArgs(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(';', start);
    if (end == std::string::npos) {
      end = text.size();
    }
    const std::string piece = text.substr(start, end - start);
    const auto eq = piece.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Error(kErrInvalidConfig, "--args: invalid pair \"" + piece + "\" (K=V;K2=V2)");
    }
    out.emplace_back(piece.substr(0, eq), piece.substr(eq + 1));
    start = end + 1;
  }
  return out;
}

Result<cni::Json> CapabilityArgs(const CniFlags& flags) {
  cni::Json caps = cni::Json::object();
  if (!flags.publish.empty()) {
    cni::Json mappings = cni::Json::array();
    for (const auto& p : flags.publish) {
      NG_ASSIGN_OR_RETURN(cni::Json m, ParsePortMapping(p));
      mappings.push_back(std::move(m));
    }
    caps["portMappings"] = std::move(mappings);
  }
  if (!flags.bandwidth.empty()) {
    NG_ASSIGN_OR_RETURN(caps["bandwidth"], ParseBandwidth(flags.bandwidth));
  }
  if (!flags.ips.empty()) {
    cni::Json ips = cni::Json::array();
    for (const auto& ip : flags.ips) {
      if (!net::IpPrefix::Parse(ip, /*allow_bare_address=*/true)) {
        return Error(kErrInvalidConfig, "--ip: invalid address \"" + ip + "\"");
      }
      ips.push_back(ip);
    }
    caps["ips"] = std::move(ips);
  }
  return caps;
}

Result<std::vector<cni::Attachment>> ParseValid(const std::vector<std::string>& items,
                                                const std::string& default_ifname) {
  std::vector<cni::Attachment> out;
  for (const auto& item : items) {
    const auto slash = item.find('/');
    cni::Attachment a{item.substr(0, slash),
                      slash == std::string::npos ? default_ifname : item.substr(slash + 1)};
    NG_RETURN_IF_ERROR(cni::ValidateContainerId(a.container_id));
    out.push_back(std::move(a));
  }
  return out;
}

void PrintResultText(const cni::CniResult& r, std::ostream& out) {
  for (const auto& i : r.interfaces) {
    out << "interface " << i.name;
    if (!i.mac.empty()) out << " mac " << i.mac;
    if (!i.sandbox.empty()) out << " in " << i.sandbox;
    out << "\n";
  }
  for (const auto& ip : r.ips) {
    out << "address " << ip.address.ToString();
    if (ip.gateway) out << " gateway " << ip.gateway->ToString();
    if (ip.interface && *ip.interface >= 0 &&
        static_cast<size_t>(*ip.interface) < r.interfaces.size()) {
      out << " on " << r.interfaces[*ip.interface].name;
    }
    out << "\n";
  }
  for (const auto& route : r.routes) {
    out << "route " << route.dst.ToString();
    if (route.gw) out << " via " << route.gw->ToString();
    out << "\n";
  }
  for (const auto& ns : r.dns.nameservers) {
    out << "nameserver " << ns << "\n";
  }
}

// Fail: the error on stderr, and as the CNI error object on stdout with -o json|yaml. `status`:
// 1 when a plugin or the chain failed, 2 when the input is unusable.
int Fail(const CniFlags& flags, const Error& error, int status = cli::kExitNo) {
  if (!flags.Text()) {
    Emit(flags, cni::FormatError(error));
  }
  std::cerr << "nodegate cni " << flags.verb << ": " << error.msg;
  if (!error.details.empty()) {
    std::cerr << " (" << error.details << ")";
  }
  std::cerr << " [code " << error.code << "]\n";
  return status;
}

// The runtime's view of the attachment: the flags' capability and CNI arguments, and a
// container ID derived from the namespace when none is given.
Result<RuntimeConf> MakeRuntimeConf(const CniFlags& flags, const std::string& netns) {
  NG_ASSIGN_OR_RETURN(cni::Json caps, CapabilityArgs(flags));
  NG_ASSIGN_OR_RETURN(auto args, ParseCniArgs(flags.cni_args));
  RuntimeConf rt{.container_id = flags.container_id,
                 .netns = netns,
                 .ifname = flags.ifname,
                 .args = args,
                 .capability_args = caps};
  if (rt.container_id.empty() && !netns.empty()) {
    // Stable per namespace, so add/check/del of the same netns find the same cache entry.
    rt.container_id = HashedName("nodegate-", netns, "", 29);
  }
  return rt;
}

// What the verbs below print the network as.
std::string NetworkLabel(const NetworkConfigList& list) { return "network \"" + list.name + "\""; }

int RunAdd(const CniFlags& flags, Chain& chain, const NetworkConfigList& list,
           const RuntimeConf& rt) {
  if (rt.netns.empty()) {
    return Fail(flags, Error(kErrInvalidEnvironment, "add needs NETNS"), cli::kExitUsage);
  }
  auto result = chain.Add(list, rt);
  if (!result.ok()) {
    return Fail(flags, result.error());
  }
  if (!flags.Text()) {
    auto encoded = cni::EncodeResult(*result, result->cni_version);
    if (!encoded.ok()) {
      return Fail(flags, encoded.error());
    }
    // The CNI result itself, as the plugins print it (field names the spec's).
    Emit(flags, cni::FormatJson(*encoded));
  } else {
    std::cout << NetworkLabel(list) << " added to " << rt.netns << " (container " << rt.container_id
              << ", " << rt.ifname << ")\n";
    PrintResultText(*result, std::cout);
  }
  return cli::kExitOk;
}

int RunCheckOrDel(const CniFlags& flags, Chain& chain, const NetworkConfigList& list,
                  RuntimeConf rt) {
  if (rt.container_id.empty()) {
    return Fail(flags, Error(kErrInvalidEnvironment, flags.verb + " needs NETNS or --container-id"),
                cli::kExitUsage);
  }
  rt = chain.WithCachedArgs(list, rt);
  if (flags.verb == "check" && rt.netns.empty()) {
    return Fail(flags, Error(kErrInvalidEnvironment, "check needs NETNS"), cli::kExitUsage);
  }
  const Status status = flags.verb == "check" ? chain.Check(list, rt) : chain.Del(list, rt);
  if (!status.ok()) {
    return Fail(flags, status.error());
  }
  if (!flags.Text()) {
    Print(flags, list.name, rt.container_id);
  } else {
    std::cout << NetworkLabel(list)
              << (flags.verb == "check" ? " CHECK passed for " : " deleted for ") << "container "
              << rt.container_id << " (" << rt.ifname << ")\n";
  }
  return cli::kExitOk;
}

int RunGc(const CniFlags& flags, Chain& chain, const NetworkConfigList& list) {
  std::vector<cni::Attachment> valid;
  if (flags.valid.empty()) {
    valid = chain.LiveAttachments(list.name);
  } else {
    auto parsed = ParseValid(flags.valid, flags.ifname);
    if (!parsed.ok()) {
      return Fail(flags, parsed.error(), cli::kExitUsage);
    }
    valid = *parsed;
  }
  const Status status = chain.Gc(list, valid);
  if (!status.ok()) {
    return Fail(flags, status.error());
  }
  if (!flags.Text()) {
    Print(flags, list.name, "", {{"kept", valid.size()}, {"disableGC", list.disable_gc}});
  } else {
    std::cout << NetworkLabel(list) << " garbage-collected; kept " << valid.size()
              << " attachment(s)" << (list.disable_gc ? " (disableGC is set: nothing done)" : "")
              << "\n";
  }
  return cli::kExitOk;
}

int RunStatus(const CniFlags& flags, Chain& chain, const NetworkConfigList& list) {
  auto outcome = chain.GetStatus(list);
  if (!outcome.ok()) {
    return Fail(flags, outcome.error());
  }
  if (!flags.Text()) {
    Print(flags, list.name, "",
          {{"available", *outcome == StatusOutcome::kAvailable}, {"cniVersion", list.cni_version}});
  } else {
    if (*outcome == StatusOutcome::kAvailable) {
      std::cout << NetworkLabel(list) << " is available (every plugin answered STATUS)\n";
    } else {
      std::cout << NetworkLabel(list) << " has cniVersion " << list.cni_version
                << ": STATUS needs 1.1.0, nothing asked\n";
    }
  }
  return cli::kExitOk;
}

int Run(const CniFlags& flags) {
  auto list = LoadNetwork(flags.conf_dir, flags.network);
  if (!list.ok()) {
    return Fail(flags, list.error(), cli::kExitUsage);
  }
  RealExecutor exec;
  Chain chain(ChainOptions{.cni_path = SplitPath(flags.cni_path), .cache_dir = flags.cache_dir},
              exec);
  auto rt = MakeRuntimeConf(flags, NetnsPath(flags.netns));
  if (!rt.ok()) {
    return Fail(flags, rt.error(), cli::kExitUsage);
  }
  if (flags.verb == "add") {
    return RunAdd(flags, chain, *list, *rt);
  }
  if (flags.verb == "check" || flags.verb == "del") {
    return RunCheckOrDel(flags, chain, *list, *rt);
  }
  if (flags.verb == "gc") {
    return RunGc(flags, chain, *list);
  }
  return RunStatus(flags, chain, *list);
}

}  // namespace

int RunCniCli(int argc, char** argv) {
  CniFlags flags;
  flags.conf_dir = EnvOr("NETCONFPATH", "/etc/cni/net.d");
  flags.cni_path = EnvOr("CNI_PATH", "/opt/cni/bin");
  CLI::App app{
      "Runs a CNI network (.conflist) as a container runtime does: ADD, CHECK, DEL, GC, STATUS "
      "over the list, with capability arguments and the runtimes' result cache.\n"
      "Exit status: 0 done, 1 a plugin or the chain failed, 2 unusable input (flags, no such "
      "network, a bad capability argument).",
      "nodegate cni"};
  app.add_option("verb", flags.verb, "add | check | del | gc | status")
      ->required()
      ->check(CLI::IsMember({"add", "check", "del", "gc", "status"}));
  app.add_option("network", flags.network, "network name (the list's \"name\")")->required();
  app.add_option("netns", flags.netns,
                 "network namespace: a path, or a name under /run/netns (add, check, del)");
  app.add_option("--conf-dir", flags.conf_dir,
                 "folder of network configs (default "
                 "$NETCONFPATH or /etc/cni/net.d)");
  app.add_option("--cni-path", flags.cni_path,
                 "plugin folders, ':'-separated (default $CNI_PATH or /opt/cni/bin)");
  app.add_option("--cache-dir", flags.cache_dir, "result cache root (libcni's, /var/lib/cni)");
  app.add_option("--container-id", flags.container_id,
                 "container ID (default: derived from NETNS)");
  app.add_option("--ifname", flags.ifname, "interface name in the container (default eth0)");
  app.add_option("--args", flags.cni_args, "CNI_ARGS, K=V;K2=V2");
  app.add_option("-p,--publish", flags.publish,
                 "port mapping HOST:CONTAINER[/PROTO][@HOSTIP] (capability portMappings)")
      ->allow_extra_args(false);
  app.add_option("--bandwidth", flags.bandwidth,
                 "ingress=RATE[,burst=B][,egress=RATE[,burst=B]] (capability bandwidth)");
  app.add_option("--ip", flags.ips, "requested address ADDR[/PREFIX] (capability ips)")
      ->allow_extra_args(false);
  app.add_option("--valid", flags.valid,
                 "gc: an attachment to keep, ID[/IFNAME]; default: cached attachments whose "
                 "netns still exists")
      ->allow_extra_args(false);
  cli::AddOutputFlag(app, flags.output);
  app.add_flag("--json", flags.json, "the same as -o json");
  if (auto code = cli::ParseFlags(app, argc, argv)) {
    return *code;
  }
  if (flags.json) {
    flags.output = cli::Format::kJson;
  }
  return Run(flags);
}

}  // namespace nodegate::runtime
