#include "lib/cni/skel.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <exception>

#include "lib/cni/args.h"
#include "lib/cni/logging.h"
#include "lib/cni/version.h"
#include "lib/sys/io.h"

namespace nodegate::cni {
namespace {

// Which environment variables each command requires (spec 1.1.0, "Parameters").
struct EnvRequirement {
  const char* name;
  std::array<bool, 6> required;  // indexed by Command: ADD DEL CHECK GC STATUS VERSION
};
constexpr std::array<EnvRequirement, 6> kEnvTable = {{
    {"CNI_COMMAND", {true, true, true, true, true, true}},
    {"CNI_CONTAINERID", {true, true, true, false, false, false}},
    {"CNI_NETNS", {true, false, true, false, false, false}},
    {"CNI_IFNAME", {true, true, true, false, false, false}},
    {"CNI_ARGS", {false, false, false, false, false, false}},
    {"CNI_PATH", {false, false, false, true, false, false}},
}};

bool IsAddDelCheck(Command c) {
  return c == Command::kAdd || c == Command::kDel || c == Command::kCheck;
}

int Fail(const ProcessIo& io, const Error& error) {
  io.write_stdout(FormatError(error));
  return 1;
}

std::string VersionsCsv(const std::vector<std::string>& versions) {
  std::string out;
  for (size_t i = 0; i < versions.size(); ++i) {
    out += (i ? ", " : "") + versions[i];
  }
  return out;
}

Status CheckVersion(const Plugin& plugin, Command command, const std::string& version) {
  if (!ParseVersion(version).ok()) {
    return Error(kErrDecode, "invalid cniVersion \"" + version + "\"");
  }
  if (command == Command::kCheck && !VersionAtLeast(version, "0.4.0")) {
    return Error(kErrIncompatibleVersion, "config version does not allow CHECK");
  }
  if ((command == Command::kGc || command == Command::kStatus) &&
      !VersionAtLeast(version, "1.1.0")) {
    return Error(kErrIncompatibleVersion,
                 std::string("config version does not allow ") + std::string(CommandName(command)));
  }
  const auto& supported = plugin.supported_versions;
  if (std::find(supported.begin(), supported.end(), version) == supported.end()) {
    return Error(kErrIncompatibleVersion, "incompatible CNI versions",
                 "config is \"" + version + "\", plugin supports " + QuoteVersionList(supported));
  }
  return OkStatus();
}

std::string EnvOrEmpty(const ProcessIo& io, const char* name) {
  return io.getenv(name).value_or("");
}

// Called with no CNI_COMMAND: a person ran the binary, so tell them what it is.
int PrintAbout(const Plugin& plugin, const ProcessIo& io) {
  io.write_stderr(plugin.about + "\nCNI protocol versions supported: " +
                  VersionsCsv(plugin.supported_versions) + "\n");
  return 0;
}

Status CheckRequiredEnv(const ProcessIo& io, Command command) {
  std::vector<std::string> missing;
  for (const auto& row : kEnvTable) {
    if (row.required[static_cast<size_t>(command)] && EnvOrEmpty(io, row.name).empty()) {
      missing.push_back(row.name);
    }
  }
  if (missing.empty()) {
    return OkStatus();
  }
  std::string list;
  for (size_t i = 0; i < missing.size(); ++i) {
    list += (i ? "," : "") + missing[i];
  }
  return Error(kErrInvalidEnvironment, "required env variables [" + list + "] missing");
}

int PrintVersions(const Plugin& plugin, const ProcessIo& io) {
  OrderedJson j;
  j["cniVersion"] = std::string(kSpecVersion);
  j["supportedVersions"] = plugin.supported_versions;
  io.write_stdout(j.dump() + "\n");
  return 0;
}

Result<CmdArgs> ReadCmdArgs(const ProcessIo& io, Command command) {
  CmdArgs args;
  args.command = command;
  args.container_id = EnvOrEmpty(io, "CNI_CONTAINERID");
  args.netns = EnvOrEmpty(io, "CNI_NETNS");
  args.ifname = EnvOrEmpty(io, "CNI_IFNAME");
  args.args = EnvOrEmpty(io, "CNI_ARGS");
  args.path = EnvOrEmpty(io, "CNI_PATH");
  std::optional<std::string> stdin_data = io.read_stdin();
  if (!stdin_data) {
    return Error(kErrIo, "error reading from stdin");
  }
  args.stdin_data = std::move(*stdin_data);
  return args;
}

// Parses stdin into args.conf and sets up the file logging it asks for.
Status LoadNetConf(const Plugin& plugin, CmdArgs& args) {
  // A runtime stops a chain's teardown at the first failing DEL, so DEL needs only what names
  // the attachment; the plugin removes what it owns by that.
  auto conf =
      ParseNetConf(args.stdin_data, plugin.config_shape,
                   args.command == Command::kDel ? Strictness::kNameAndVersion : Strictness::kAll);
  if (!conf.ok()) {
    return std::move(conf).error();
  }
  args.conf = std::move(conf).value();
  ConfigureFileLogging(plugin.name, args.conf.log_file, args.conf.log_level);
  for (const std::string& problem : args.conf.unreadable) {
    LogWarn("{} DEL: ignoring unreadable config: {}", plugin.name, problem);
  }
  return OkStatus();
}

// The names and versions every command is checked for before its handler runs; ADD, DEL and
// CHECK must name a container and interface, the others only have them checked when given.
Status ValidateCmdArgs(const Plugin& plugin, const CmdArgs& args) {
  NG_RETURN_IF_ERROR(ValidateNetworkName(args.conf.name));
  if (IsAddDelCheck(args.command) || !args.container_id.empty()) {
    NG_RETURN_IF_ERROR(ValidateContainerId(args.container_id));
  }
  if (IsAddDelCheck(args.command) || !args.ifname.empty()) {
    NG_RETURN_IF_ERROR(ValidateInterfaceName(args.ifname));
  }
  if (Status s = CniArgs::CheckSyntax(args.args); !s.ok()) {
    if (args.command != Command::kDel) {
      return s;
    }
    LogWarn("{} DEL: ignoring unreadable CNI_ARGS: {}", plugin.name, s.error().msg);
  }
  return CheckVersion(plugin, args.command, args.conf.cni_version);
}

int RunAdd(const Plugin& plugin, const CmdArgs& args, const ProcessIo& io) {
  if (!plugin.add) {
    return Fail(io, NotImplemented(args).error());
  }
  Result<CniResult> result = plugin.add(args);
  if (!result.ok()) {
    LogWarn("{} ADD {} failed: {}", plugin.name, args.container_id, result.error().msg);
    return Fail(io, result.error());
  }
  // Encode fully before printing anything, so a failure never leaves half a result.
  auto encoded = EncodeResult(*result, args.conf.cni_version);
  if (!encoded.ok()) {
    return Fail(io, encoded.error());
  }
  io.write_stdout(FormatJson(*encoded));
  return 0;
}

// The handler of a command that prints nothing on success; null for ADD and VERSION.
const std::function<Status(const CmdArgs&)>* StatusHandler(const Plugin& plugin, Command command) {
  switch (command) {
    case Command::kDel:
      return &plugin.del;
    case Command::kCheck:
      return &plugin.check;
    case Command::kGc:
      return &plugin.gc;
    case Command::kStatus:
      return &plugin.status;
    default:
      return nullptr;
  }
}

int RunStatusCommand(const Plugin& plugin, const CmdArgs& args, const ProcessIo& io) {
  const std::function<Status(const CmdArgs&)>* handler = StatusHandler(plugin, args.command);
  if (handler == nullptr || !*handler) {
    return Fail(io, NotImplemented(args).error());
  }
  Status status = (*handler)(args);
  if (!status.ok()) {
    LogWarn("{} {} {} failed: {}", plugin.name, CommandName(args.command), args.container_id,
            status.error().msg);
    return Fail(io, status.error());
  }
  return 0;
}

int Dispatch(const Plugin& plugin, const ProcessIo& io) {
  const std::string command_text = EnvOrEmpty(io, "CNI_COMMAND");
  if (command_text.empty()) {
    return PrintAbout(plugin, io);
  }
  const std::optional<Command> command = ParseCommand(command_text);
  if (!command) {
    return Fail(io, Error(kErrInvalidEnvironment, "unknown CNI_COMMAND: " + command_text));
  }
  if (Status s = CheckRequiredEnv(io, *command); !s.ok()) {
    return Fail(io, s.error());
  }
  if (*command == Command::kVersion) {
    return PrintVersions(plugin, io);
  }
  Result<CmdArgs> args = ReadCmdArgs(io, *command);
  if (!args.ok()) {
    return Fail(io, args.error());
  }
  if (Status s = LoadNetConf(plugin, *args); !s.ok()) {
    return Fail(io, s.error());
  }
  if (Status s = ValidateCmdArgs(plugin, *args); !s.ok()) {
    return Fail(io, s.error());
  }
  LogDebug("{} {} container={} ifname={} netns={} network={}", plugin.name, CommandName(*command),
           args->container_id, args->ifname, args->netns, args->conf.name);
  if (*command == Command::kAdd) {
    return RunAdd(plugin, *args, io);
  }
  return RunStatusCommand(plugin, *args, io);
}

}  // namespace

std::optional<Command> ParseCommand(std::string_view text) {
  if (text == "ADD") return Command::kAdd;
  if (text == "DEL") return Command::kDel;
  if (text == "CHECK") return Command::kCheck;
  if (text == "GC") return Command::kGc;
  if (text == "STATUS") return Command::kStatus;
  if (text == "VERSION") return Command::kVersion;
  return std::nullopt;
}

std::string_view CommandName(Command command) {
  switch (command) {
    case Command::kAdd:
      return "ADD";
    case Command::kDel:
      return "DEL";
    case Command::kCheck:
      return "CHECK";
    case Command::kGc:
      return "GC";
    case Command::kStatus:
      return "STATUS";
    case Command::kVersion:
      return "VERSION";
  }
  return "?";
}

ProcessIo ProcessIo::Real() {
  ProcessIo io;
  io.getenv = [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) {
      return std::nullopt;
    }
    return std::string(v);
  };
  io.read_stdin = []() -> std::optional<std::string> {
    std::string data;
    if (!sys::ReadAll(STDIN_FILENO, data)) {
      return std::nullopt;
    }
    return data;
  };
  // A failed write has no one left to tell: stdout is the only channel to the runtime.
  io.write_stdout = [](std::string_view text) { (void)sys::WriteAll(STDOUT_FILENO, text); };
  io.write_stderr = [](std::string_view text) { (void)sys::WriteAll(STDERR_FILENO, text); };
  return io;
}

int PluginMain(const Plugin& plugin, const ProcessIo& io) {
  // No exception may escape: anything unexpected becomes the spec's error JSON (code 999).
  try {
    return Dispatch(plugin, io);
  } catch (const std::exception& e) {
    return Fail(io, Error(kErrInternal, std::string("internal error: ") + e.what()));
  } catch (...) {
    return Fail(io, Error(kErrInternal, "internal error"));
  }
}

int PluginMain(const Plugin& plugin) {
  InitLogging(plugin.name);
  return PluginMain(plugin, ProcessIo::Real());
}

Plugin SuitePlugin(std::string name, std::vector<std::string> supported_versions,
                   gojson::Shape config_shape, Verbs verbs) {
  Plugin plugin;
  plugin.about = AboutText(name);
  plugin.name = std::move(name);
  plugin.supported_versions = std::move(supported_versions);
  plugin.config_shape = std::move(config_shape);
  plugin.add = std::move(verbs.add);
  plugin.del = std::move(verbs.del);
  plugin.check = std::move(verbs.check);
  plugin.gc = std::move(verbs.gc);
  plugin.status = std::move(verbs.status);
  return plugin;
}

Status NotImplemented(const CmdArgs& args) {
  return Error(kErrNotImplemented,
               std::string(CommandName(args.command)) + " is not implemented by this plugin yet");
}

namespace {
bool MatchesIdRegex(const std::string& s) {
  // ^[a-zA-Z0-9][a-zA-Z0-9_.\-]*$ without std::regex's cost.
  if (s.empty() || !std::isalnum(static_cast<unsigned char>(s[0]))) {
    return false;
  }
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (!(std::isalnum(u) || c == '_' || c == '.' || c == '-')) {
      return false;
    }
  }
  return true;
}
}  // namespace

Status ValidateContainerId(const std::string& id) {
  if (id.empty()) {
    return Error(kErrUnknownContainer, "missing containerID");
  }
  if (!MatchesIdRegex(id)) {
    return Error(kErrInvalidEnvironment, "invalid characters in containerID", id);
  }
  return OkStatus();
}

Status ValidateInterfaceName(const std::string& name) {
  if (name.empty()) {
    return Error(kErrInvalidEnvironment, "interface name is empty");
  }
  if (name.size() > 15) {
    return Error(kErrInvalidEnvironment, "interface name is too long",
                 "interface name should be less than 16 characters");
  }
  if (name == "." || name == "..") {
    return Error(kErrInvalidEnvironment, "interface name is . or ..");
  }
  for (char c : name) {
    if (c == '/' || c == ':' || std::isspace(static_cast<unsigned char>(c))) {
      return Error(kErrInvalidEnvironment,
                   "interface name contains / or : or whitespace characters");
    }
  }
  return OkStatus();
}

Status ValidateNetworkName(const std::string& name) {
  if (name.empty()) {
    return Error(kErrInvalidConfig, "missing network name");
  }
  if (!MatchesIdRegex(name)) {
    return Error(kErrInvalidConfig, "invalid characters found in network name", name);
  }
  return OkStatus();
}

}  // namespace nodegate::cni
