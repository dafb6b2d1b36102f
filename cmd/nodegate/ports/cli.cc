// `nodegate ports`: flags, inputs, exit codes. The claims and their join are in ports/.

#include "cmd/nodegate/ports/cli.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <future>
#include <iostream>
#include <optional>

#include "admit/api/host_node.h"
#include "lib/cli/output.h"
#include "lib/cli/parse_flags.h"
#include "lib/cni/cache_pods.h"
#include "ports/declared.h"
#include "ports/portmap_source.h"
#include "ports/report.h"

namespace nodegate::ports {
namespace {

constexpr int kExitOk = cli::kExitOk;
constexpr int kExitBadInput = cli::kExitUsage;
constexpr int kExitUnreadable = cli::kExitUnavailable;

struct PortsFlags {
  std::string manifests_dir;
  std::vector<std::string> pods_files;
  std::string cni_cache_dir = cni::kDefaultCniCacheDir;
  int port = 0;  // 0: every port
  cli::Format output = cli::Format::kText;
};

void AddFlags(CLI::App& app, PortsFlags& f) {
  app.add_option("--manifests", f.manifests_dir,
                 "a static-pod folder: every manifest declares its host ports");
  app.add_option("--pods", f.pods_files,
                 "pods on the node: Pod, PodList, List, JSON array or multi-document YAML; "
                 "'-' is stdin (repeatable)")
      ->allow_extra_args(false);
  app.add_option("--cni-cache", f.cni_cache_dir,
                 "the runtime's libcni result cache (its results folder or its root), to name "
                 "the pods of mappings")
      ->capture_default_str();
  app.add_option("--port", f.port, "only this host port")->check(CLI::Range(1, 65535));
  cli::AddOutputFlag(app, f.output);
}

// CollectClaims: the claims; on an error, `kernel_unreadable` tells the kernel's (exit 3) from
// the input's (exit 2).
Result<NodeClaims> CollectClaims(const PortsFlags& f, bool& kernel_unreadable) {
  if (std::count(f.pods_files.begin(), f.pods_files.end(), "-") > 1) {
    return Error(kErrInvalidConfig, "'-' (stdin) may be given once");
  }
  const PortFilter only_port = f.port != 0 ? PortFilter(std::set<int>{f.port}) : std::nullopt;
  // The kernel's claims are read while the pods are parsed (their errors still come first).
  auto reading = std::async(std::launch::async, [&] {
    return ReadLiveClaims(PortmapMappedSource(), f.cni_cache_dir, only_port);
  });
  auto pods = LoadNodePods(f.manifests_dir, f.pods_files, admit::HostNode().name);
  auto read = reading.get();
  if (!pods.ok()) return pods.error();
  kernel_unreadable = !read.ok();
  NG_ASSIGN_OR_RETURN(LiveClaims live, std::move(read));
  NodeClaims claims;
  claims.declared = DeclaredClaimsOf(*pods);
  if (only_port) {
    std::erase_if(claims.declared,
                  [&](const DeclaredClaim& c) { return !only_port->contains(c.key.port); });
  }
  claims.mapped = std::move(live.mapped);
  claims.listening = std::move(live.listening);
  return claims;
}

}  // namespace

int RunPortsCli(int argc, char** argv) {
  CLI::App app{
      "Shows every host port of this node with who claims it: pods that declare it (static "
      "manifests, --pods), portmap mappings (every layout) and listening sockets (with their "
      "process), and a verdict per (host IP, protocol, port).\n"
      "Exit status: 0 shown, 2 unusable input, 3 the kernel's sockets or mappings could not "
      "be read.",
      "nodegate ports"};
  PortsFlags flags;
  AddFlags(app, flags);
  if (auto code = cli::ParseFlags(app, argc, argv)) {
    return *code;
  }
  bool kernel_unreadable = false;
  auto claims = CollectClaims(flags, kernel_unreadable);
  if (!claims.ok()) {
    std::cerr << "nodegate ports: " << claims.error().msg << "\n";
    return kernel_unreadable ? kExitUnreadable : kExitBadInput;
  }
  // With --port every claim is already of that port, so every row is.
  const std::vector<PortRow> rows = JoinClaims(std::move(*claims));
  if (flags.output == cli::Format::kText) {
    WriteRowsText(rows, std::cout);
  } else if (flags.output == cli::Format::kJson) {
    WriteRowsJson(rows, std::cout);  // streamed: a busy node's report is megabytes
  } else {
    std::cout << cli::ToYaml(nlohmann::ordered_json::parse(RowsToJson(rows)));
  }
  return kExitOk;
}

}  // namespace nodegate::ports
