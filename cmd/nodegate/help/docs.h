#pragma once
// The `nodegate` commands as data, read from their CLI11 definitions (the ones --help prints),
// and what is generated from that data so it cannot drift from --help: the man page's OPTIONS
// section and the bash and zsh completions.

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace nodegate::help {

struct FlagDoc {
  std::vector<std::string> names;    // "-o", "--output"; a positional's one name ("POD_FILE")
  std::string value;                 // the value's type name ("TEXT", "FORMAT"); "" for a switch
  std::vector<std::string> choices;  // the values a check admits ({text,json}), else none
  std::string help;
  std::string default_value;
  bool required = false;
  bool positional = false;
};

struct CommandDoc {
  std::string path;  // "nodegate conf validate"
  std::string description;
  std::vector<FlagDoc> flags;  // --help first
  std::vector<CommandDoc> subcommands;
  bool hidden = false;  // in no listing but the man page's
};

// Describe: `app` and its subcommands, under `path` (the command's words before its own name:
// "nodegate" for `nodegate conf`).
CommandDoc Describe(const CLI::App& app, const std::string& parent_path);

// ManOptions: roff for the man page's OPTIONS section: a subsection per command and
// subcommand, a tagged paragraph per flag with its value, default and whether it is required.
std::string ManOptions(const std::vector<CommandDoc>& commands);
// FillManPage: the template with its line `.\" @OPTIONS@` replaced by ManOptions.
std::string FillManPage(const std::string& man_template, const std::vector<CommandDoc>& commands);

// BashCompletion, ZshCompletion: scripts for `nodegate` and `kubectl-nodegate` that complete
// commands, subcommands, flags, and the values of flags that admit a fixed set; files for the
// rest. `root` is `nodegate` itself, its subcommands the commands.
std::string BashCompletion(const CommandDoc& root);
std::string ZshCompletion(const CommandDoc& root);

}  // namespace nodegate::help
