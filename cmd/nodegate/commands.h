#pragma once
// Every `nodegate` command: its name, its line in `nodegate --help`, its entry point (argv[0]
// is the command's name). main.cc dispatches through this table; `version`, `completion` and
// the man page are built from it.

#include <string_view>
#include <vector>

#include "cmd/nodegate/help/docs.h"

namespace nodegate {

struct Command {
  std::string_view name;
  std::string_view summary;
  int (*run)(int argc, char** argv);
  bool hidden = false;  // not listed (the man page generator)
};

const std::vector<Command>& Commands();

// Usage: `nodegate --help`'s text.
std::string Usage();

// DescribeCommands: `nodegate` and every command as data, read from the commands' own flag
// definitions (cli::SetDescribeOnly); hidden commands included, marked.
help::CommandDoc DescribeCommands();

}  // namespace nodegate
