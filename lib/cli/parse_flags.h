#pragma once
// Flag parsing shared by the `nodegate` subcommands: CLI11 with the project's exit codes, so
// every subcommand answers --help and a usage error the same way.
//
//   CLI::App app{"...", "nodegate ports"};
//   ... app.add_option(...);
//   if (auto code = cli::ParseFlags(app, argc, argv)) return *code;

#include <CLI/CLI.hpp>
#include <functional>
#include <optional>

#include "lib/cli/exit_status.h"

namespace nodegate::cli {

// Parses argv into `app`. nullopt: carry on. Otherwise the status to exit with: 0 after --help
// (printed on stdout), kExitUsage after a usage error (on stderr, with a hint to run --help).
std::optional<int> ParseFlags(CLI::App& app, int argc, char** argv);

// DescribeOnly: while set, ParseFlags parses nothing: it hands the command's App, every flag
// defined, to `visit` and returns 0. The man page and the shell completions are generated so
// (cmd/nodegate/help/), from the very definitions --help prints.
using AppVisitor = std::function<void(const CLI::App&)>;
void SetDescribeOnly(AppVisitor visit);

}  // namespace nodegate::cli
