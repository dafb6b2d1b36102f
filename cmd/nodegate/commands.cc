#include "cmd/nodegate/commands.h"

#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "cmd/nodegate/admit/cli.h"
#include "cmd/nodegate/cni/cli.h"
#include "cmd/nodegate/conf/cli.h"
#include "cmd/nodegate/explain/cli.h"
#include "cmd/nodegate/ipam/cli.h"
#include "cmd/nodegate/ports/cli.h"
#include "cmd/nodegate/version/cli.h"
#include "cmd/nodegate/webhook/cli.h"
#include "lib/cli/output.h"
#include "lib/cli/parse_flags.h"

namespace nodegate {
namespace {

int RunCompletionCli(int argc, char** argv) {
  std::string shell;
  CLI::App app{
      "Prints a completion script for bash or zsh: commands, subcommands, flags and the "
      "values of flags that take one of a fixed set.\n"
      "bash:  source <(nodegate completion bash)  (or save it as "
      "/usr/share/bash-completion/completions/nodegate)\n"
      "zsh:   nodegate completion zsh > \"${fpath[1]}/_nodegate\"\n"
      "Exit status: 0 printed, 2 unusable flags.",
      "nodegate completion"};
  app.add_option("shell", shell, "the shell")->check(CLI::IsMember({"bash", "zsh"}))->required();
  if (auto code = cli::ParseFlags(app, argc, argv)) {
    return *code;
  }
  const help::CommandDoc root = DescribeCommands();
  std::cout << (shell == "bash" ? help::BashCompletion(root) : help::ZshCompletion(root));
  return cli::kExitOk;
}

// `nodegate man`: the build writes the man page with it (cmd/nodegate/CMakeLists.txt).
int RunManCli(int argc, char** argv) {
  std::string template_path;
  std::string out_path;
  CLI::App app{
      "Writes the man page: the template's prose with every command's options as --help "
      "prints them. Exit status: 0 written, 2 unusable flags or an unreadable template.",
      "nodegate man"};
  app.add_option("--template", template_path, "the page's prose (deploy/debian/nodegate.1.in)")
      ->required();
  app.add_option("--out", out_path, "where to write the page (default: standard output)");
  if (auto code = cli::ParseFlags(app, argc, argv)) {
    return *code;
  }
  std::ifstream in(template_path);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) {
    std::cerr << "nodegate man: cannot read " << template_path << "\n";
    return cli::kExitUsage;
  }
  const std::string page = help::FillManPage(text.str(), DescribeCommands().subcommands);
  if (out_path.empty()) {
    std::cout << page;
    return cli::kExitOk;
  }
  std::ofstream out(out_path, std::ios::trunc);
  out << page;
  out.close();
  if (!out) {
    std::cerr << "nodegate man: cannot write " << out_path << "\n";
    return cli::kExitUsage;
  }
  return cli::kExitOk;
}

}  // namespace

const std::vector<Command>& Commands() {
  static const std::vector<Command> commands = {
      {"admit", "check pods against this node as the scheduler and kubelet would",
       admit::RunAdmitCli},
      {"guard", "install a static-pod manifest only when the node admits it", admit::RunGuardCli},
      {"ports", "show every host port: declared by pods, mapped by portmap, listened on",
       ports::RunPortsCli},
      {"cni", "run a CNI network (.conflist) as a container runtime does", runtime::RunCniCli},
      {"conf", "validate CNI configuration files (conf validate [DIR|FILE]...)",
       runtime::RunConfCli},
      {"webhook", "serve the API server's admission webhook for pods with a fixed nodeName",
       webhook::RunWebhookCli},
      {"ipam", "cluster-ipam's address pool: show, check, release, import",
       ipam::cluster::RunIpamCli},
      {"explain", "why a pod fits no node, node by node (also as kubectl nodegate explain)",
       explain_cli::RunExplainCli},
      {"version", "the build: version, commit, source date, compiler, platform",
       version_cli::RunVersionCli},
      {"completion", "a bash or zsh completion script", RunCompletionCli},
      {"man", "write the man page (used by the build)", RunManCli, /*hidden=*/true},
  };
  return commands;
}

std::string Usage() {
  std::string usage =
      "usage: nodegate <command> [args]\n"
      "       nodegate <command> --help\n"
      "       nodegate --version\n"
      "\n"
      "commands:\n";
  for (const Command& c : Commands()) {
    if (c.hidden) continue;
    std::string name(c.name);
    name.resize(std::max<size_t>(name.size() + 2, 12), ' ');
    usage += "  " + name + std::string(c.summary) + "\n";
  }
  usage +=
      "\n"
      "Exit status: 0 done and the answer is yes, 1 the answer is no (rejected, errors found,\n"
      "fits nowhere), 2 unusable input or flags, 3 what the command needs could not be reached.\n";
  return usage;
}

help::CommandDoc DescribeCommands() {
  help::CommandDoc root;
  root.path = "nodegate";
  root.description = "node-side tools of nodegate";
  root.flags.push_back({.names = {"-h", "--help"}, .help = "this list of commands"});
  root.flags.push_back({.names = {"--version"}, .help = "the same as nodegate version"});
  for (const Command& c : Commands()) {
    std::vector<help::CommandDoc> described;
    cli::SetDescribeOnly(
        [&described](const CLI::App& app) { described.push_back(help::Describe(app, "")); });
    std::string name(c.name);
    char* argv[] = {name.data(), nullptr};
    c.run(1, argv);
    cli::SetDescribeOnly(nullptr);
    for (help::CommandDoc& d : described) {
      d.hidden = c.hidden;
      root.subcommands.push_back(std::move(d));
    }
  }
  return root;
}

}  // namespace nodegate
