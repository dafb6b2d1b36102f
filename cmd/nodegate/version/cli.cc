#include "cmd/nodegate/version/cli.h"

#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "lib/build/build_info.h"
#include "lib/cli/output.h"
#include "lib/cli/parse_flags.h"

namespace nodegate::version_cli {

int RunVersionCli(int argc, char** argv) {
  cli::Format output = cli::Format::kText;
  CLI::App app{
      "Prints the build: version, git commit, source date (the reproducible build's "
      "SOURCE_DATE_EPOCH), compiler, platform, and whether the executable is static.\n"
      "Exit status: 0 printed, 2 unusable flags.",
      "nodegate version"};
  cli::AddOutputFlag(app, output);
  if (auto code = cli::ParseFlags(app, argc, argv)) {
    return *code;
  }
  const BuildInfo& b = Build();
  const nlohmann::ordered_json j = {
      {"version", b.version},         {"commit", b.commit}, {"sourceDate", b.source_date},
      {"compiler", b.compiler},       {"os", "linux"},      {"arch", b.arch},
      {"static", b.static_executable}};
  if (output != cli::Format::kText) {
    std::cout << cli::Render(j, output);
    return cli::kExitOk;
  }
  std::cout << "nodegate " << b.version << "\n"
            << "commit:       " << b.commit << "\n"
            << "source date:  " << b.source_date << "\n"
            << "compiler:     " << b.compiler << "\n"
            << "platform:     linux/" << b.arch << "\n"
            << "static:       " << (b.static_executable ? "yes" : "no") << "\n";
  return cli::kExitOk;
}

}  // namespace nodegate::version_cli
