// nodegate: node-side tools. Each command's layer is a folder of cmd/nodegate/ (commands.cc
// lists them); this file only dispatches on the first argument.
#include <iostream>
#include <string_view>

#include "cmd/nodegate/commands.h"
#include "lib/cli/exit_status.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << nodegate::Usage();
    return nodegate::cli::kExitUsage;
  }
  std::string_view command = argv[1];
  if (command == "-h" || command == "--help") {
    std::cout << nodegate::Usage();
    return nodegate::cli::kExitOk;
  }
  // --version is `nodegate version` (with its flags: nodegate --version -o json).
  char version[] = "version";
  if (command == "--version") {
    argv[1] = version;
    command = version;
  }
  // Commands receive argv starting at their own name.
  for (const nodegate::Command& c : nodegate::Commands()) {
    if (c.name == command) {
      return c.run(argc - 1, argv + 1);
    }
  }
  std::cerr << "nodegate: unknown command '" << command << "'\n" << nodegate::Usage();
  return nodegate::cli::kExitUsage;
}
