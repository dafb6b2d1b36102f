#pragma once
// Flag parsing shared by the `nodegate` subcommands: CLI11 with the project's exit codes, so
// every subcommand answers --help and a usage error the same way.
//
//   CLI::App app{"...", "nodegate ports"};
//   ... app.add_option(...);
//   if (auto code = cli::ParseFlags(app, argc, argv)) return *code;

#include <CLI/CLI.hpp>
#include <optional>

namespace nodegate::cli {

// The exit status of a usage error (an unknown flag, a bad value), as for unusable input.
inline constexpr int kExitUsage = 2;

// Parses argv into `app`. nullopt: carry on. Otherwise the status to exit with: 0 after --help
// (printed on stdout), kExitUsage after a usage error (on stderr, with a hint to run --help).
std::optional<int> ParseFlags(CLI::App& app, int argc, char** argv);

}  // namespace nodegate::cli
