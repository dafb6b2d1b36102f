#pragma once
// The plugin dispatcher ("skel"): reads the CNI_* environment and stdin through an injectable
// ProcessIo, validates them per spec 1.1.0, negotiates the version, calls the plugin's verb
// and prints exactly one thing on stdout: the result (ADD), the version object (VERSION),
// nothing (DEL/CHECK/GC/STATUS success), or the spec's error JSON (exit status 1).
//
//   int main() {
//     return nodegate::cni::PluginMain(nodegate::portmap::MakePlugin());
//   }
//
// Differences from the reference skeleton (documented in docs/cni-library.md): CNI_PATH is
// required only for GC (as the spec says), GC and STATUS need no container ID, and a plugin
// error that is not a CNI error keeps its code instead of becoming 999.

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/result.h"
#include "lib/cni/conf.h"
#include "lib/cni/types.h"

namespace nodegate::cni {

enum class Command { kAdd, kDel, kCheck, kGc, kStatus, kVersion };

std::optional<Command> ParseCommand(std::string_view text);
std::string_view CommandName(Command command);

// The process boundary, injectable for tests.
struct ProcessIo {
  std::function<std::optional<std::string>(const std::string&)> getenv;
  // All of stdin; nullopt when it cannot be read.
  std::function<std::optional<std::string>()> read_stdin;
  std::function<void(std::string_view)> write_stdout;
  std::function<void(std::string_view)> write_stderr;

  // fds 0, 1 and 2 through read(2) and write(2). Not iostreams: setting them up (the classic
  // locale and its facets) was a measurable part of a plugin's start (issue 35).
  static ProcessIo Real();
};

// Everything a verb handler gets: validated environment and parsed config.
struct CmdArgs {
  Command command = Command::kAdd;
  std::string container_id;
  std::string netns;  // may be empty for DEL
  std::string ifname;
  std::string args;  // raw CNI_ARGS
  std::string path;  // raw CNI_PATH
  std::string stdin_data;
  NetConf conf;
};

struct Plugin {
  std::string name;   // "portmap"; used in the about text and logs
  std::string about;  // first line printed without CNI_COMMAND
  std::vector<std::string> supported_versions;
  // The reference's config struct for this plugin: stdin is decoded as Go decodes into it.
  gojson::Shape config_shape = NetConfShape();
  std::function<Result<CniResult>(const CmdArgs&)> add;
  std::function<Status(const CmdArgs&)> del;
  std::function<Status(const CmdArgs&)> check;
  std::function<Status(const CmdArgs&)> gc;
  std::function<Status(const CmdArgs&)> status;
};

// The verb handlers of a plugin that implements the whole spec.
struct Verbs {
  std::function<Result<CniResult>(const CmdArgs&)> add;
  std::function<Status(const CmdArgs&)> del;
  std::function<Status(const CmdArgs&)> check;
  std::function<Status(const CmdArgs&)> gc;
  std::function<Status(const CmdArgs&)> status;
};

// One of this suite's plugins: its about text from the name, every verb from `verbs`.
Plugin SuitePlugin(std::string name, std::vector<std::string> supported_versions,
                   gojson::Shape config_shape, Verbs verbs);

// Runs one invocation; returns the process exit status (0 success, 1 CNI error).
int PluginMain(const Plugin& plugin, const ProcessIo& io);
int PluginMain(const Plugin& plugin);

// A handler for a verb a plugin does not implement yet: a clear error, never success.
Status NotImplemented(const CmdArgs& args);

// Validation helpers (spec section "Parameters"), exposed for reuse and tests.
Status ValidateContainerId(const std::string& id);
Status ValidateInterfaceName(const std::string& name);
Status ValidateNetworkName(const std::string& name);

}  // namespace nodegate::cni
