// `nodegate conf validate [DIR|FILE]...`: runtime/validate over folders or files, with the
// full configuration validation of our own plugins (runtime/validate/our_plugins.h).
#include "cmd/nodegate/conf/cli.h"

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "lib/cli/output.h"
#include "lib/cli/parse_flags.h"
#include "runtime/invoke/invoke.h"
#include "runtime/validate/our_plugins.h"
#include "runtime/validate/validate.h"

namespace nodegate::runtime {

int RunConfCli(int argc, char** argv) {
  std::vector<std::string> paths;
  const char* env_path = std::getenv("CNI_PATH");
  std::string cni_path = env_path != nullptr && *env_path != '\0' ? env_path : "/opt/cni/bin";
  cli::Format output = cli::Format::kText;
  bool no_exec = false;

  CLI::App app{"Validate CNI configuration before a runtime trips on it", "nodegate conf"};
  app.require_subcommand(1);
  CLI::App* validate = app.add_subcommand(
      "validate",
      "check folders or files: JSON, required fields, duplicate names and which file wins, "
      "plugins missing from the plugin path, cniVersion support (VERSION), capabilities, and "
      "our plugins' full config validation. Exit 0 valid (warnings allowed), 1 errors found, "
      "2 unusable input");
  validate->add_option("paths", paths, "folders or files (default /etc/cni/net.d)");
  validate->add_option("--cni-path", cni_path,
                       "plugin folders, ':'-separated (default $CNI_PATH or /opt/cni/bin)");
  cli::AddOutputFlag(*validate, output);
  validate->add_flag("--no-exec", no_exec,
                     "do not look for plugin binaries or run VERSION (config files only)");
  if (auto code = cli::ParseFlags(app, argc, argv)) {
    return *code;
  }
  if (paths.empty()) {
    paths.push_back("/etc/cni/net.d");
  }
  RealExecutor exec;
  ValidateOptions options{.cni_path = SplitPath(cni_path),
                          .exec = no_exec ? nullptr : &exec,
                          .validators = OurPluginValidators()};
  const Report report = ValidatePaths(paths, options);
  switch (output) {
    case cli::Format::kText:
      std::cout << FormatReportText(report);
      break;
    case cli::Format::kJson:
      std::cout << FormatReportJson(report);
      break;
    case cli::Format::kYaml:
      std::cout << cli::ToYaml(nlohmann::ordered_json::parse(FormatReportJson(report)));
      break;
  }
  if (report.unusable_input) {
    return cli::kExitUsage;
  }
  return report.HasErrors() ? cli::kExitNo : cli::kExitOk;
}

}  // namespace nodegate::runtime
