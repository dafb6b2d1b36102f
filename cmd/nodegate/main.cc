// nodegate: node-side tools. Each subcommand lives in its own library; this file only
// dispatches on the first argument.
#include <cstring>
#include <iostream>
#include <string_view>

#include "admit/cli/cli.h"
#include "cmd/nodegate/explain/cli.h"
#include "ipam/cluster/cli/cli.h"
#include "ports/cli/cli.h"
#include "runtime/cli/cli.h"
#include "webhook/cli/cli.h"

namespace {

constexpr std::string_view kUsage =
    "usage: nodegate <command> [args]\n"
    "\n"
    "commands:\n"
    "  admit     check pods against this node as the scheduler and kubelet would\n"
    "  guard     install a static-pod manifest only when the node admits it\n"
    "  ports     show every host port: declared by pods, mapped by portmap, listened on\n"
    "  cni       run a CNI network (.conflist) as a container runtime does\n"
    "  conf      validate CNI configuration files (conf validate [DIR|FILE]...)\n"
    "  webhook   serve the API server's admission webhook for pods with a fixed nodeName\n"
    "  ipam      cluster-ipam's address pool: show, check, release, import\n"
    "  explain   why a pod fits no node, node by node (also as kubectl nodegate explain)\n";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "-h") == 0 || std::strcmp(argv[1], "--help") == 0) {
    std::cerr << kUsage;
    return argc < 2 ? 2 : 0;
  }
  const std::string_view command = argv[1];
  // Subcommands receive argv starting at their own name.
  if (command == "admit") {
    return nodegate::admit::RunAdmitCli(argc - 1, argv + 1);
  }
  if (command == "guard") {
    return nodegate::admit::RunGuardCli(argc - 1, argv + 1);
  }
  if (command == "ports") {
    return nodegate::ports::RunPortsCli(argc - 1, argv + 1);
  }
  if (command == "cni") {
    return nodegate::runtime::RunCniCli(argc - 1, argv + 1);
  }
  if (command == "conf") {
    return nodegate::runtime::RunConfCli(argc - 1, argv + 1);
  }
  if (command == "webhook") {
    return nodegate::webhook::RunWebhookCli(argc - 1, argv + 1);
  }
  if (command == "ipam") {
    return nodegate::ipam::cluster::RunIpamCli(argc - 1, argv + 1);
  }
  if (command == "explain") {
    return nodegate::explain_cli::RunExplainCli(argc - 1, argv + 1);
  }
  std::cerr << "nodegate: unknown command '" << command << "'\n" << kUsage;
  return 2;
}
