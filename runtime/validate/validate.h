#pragma once
// `nodegate conf validate`: everything a runtime would trip on in a CNI configuration folder,
// found before the runtime finds it. Checks, in order (check names as reported):
//   read          the path exists and is readable
//   json          the file is a JSON object
//   format        .conflist shape (name, plugins[] of objects with a string "type", flags of
//                 the right type); single-plugin .conf/.json files are flagged as deprecated
//   name          the network name is valid (spec: [a-zA-Z0-9][a-zA-Z0-9_.-]*)
//   version       cniVersion present and a version of the spec (cniVersions honoured)
//   duplicate     the same network name in several files of a folder: which file the
//                 runtimes' ordering picks, and an error when the contents differ
//   plugin-path   every plugin and delegated IPAM binary exists in the plugin path
//   plugin-version the plugin supports the list's cniVersion (asked with VERSION)
//   capabilities  capability names the conventions do not define
//   chain         plugins that need a prevResult (portmap, bandwidth, ...) placed first
//   plugin-config our own plugins' full validation (the code the plugin runs), by type
//   subnet        two networks allocating from overlapping host-local subnets
// Errors make the runtime fail; warnings are worth reading but do not fail (exit 0).
//
//   ValidateOptions options{.cni_path = {"/opt/cni/bin"}, .exec = &exec};
//   Report report = ValidatePaths({"/etc/cni/net.d"}, options);
//   if (report.HasErrors()) ...

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "lib/base/result.h"
#include "lib/cni/conf.h"
#include "runtime/invoke/invoke.h"

namespace nodegate::runtime {

enum class Severity { kError, kWarning };

struct Finding {
  Severity severity = Severity::kError;
  std::string file;
  std::string network;
  int plugin_index = -1;  // -1: about the file or list
  std::string plugin_type;
  std::string check;
  std::string message;
};

// One network configuration found, and whether a runtime would load it for its name.
struct NetworkSummary {
  std::string name;
  std::string file;
  std::string cni_version;
  std::vector<std::string> plugin_types;
  std::string shadowed_by;  // the file that wins for this name, "" when this one wins
};

struct Report {
  std::vector<std::string> files;
  std::vector<NetworkSummary> networks;
  std::vector<Finding> findings;
  bool unusable_input = false;  // a path could not be read at all

  bool HasErrors() const;
  int ErrorCount() const;
  int WarningCount() const;
};

// The validation one of our plugins runs on its config (the request config as a runtime
// builds it: the plugin's object with name and cniVersion injected). For an IPAM plugin the
// same whole config is passed: IPAM plugins read their "ipam" section from it. It gets the
// bytes, as the plugin does, and decodes them with the plugin's own config shape.
using ConfigValidator = std::function<Status(std::string_view stdin_data)>;

struct ValidateOptions {
  std::vector<std::string> cni_path;
  Executor* exec = nullptr;  // for VERSION queries; nullptr skips plugin-path/version checks
  // Main plugin types (and "ipam.type" values) whose full validation we run.
  std::map<std::string, ConfigValidator> validators;
};

Report ValidatePaths(const std::vector<std::string>& paths, const ValidateOptions& options);

// Capability names defined by the CNI conventions document.
const std::vector<std::string>& KnownCapabilities();

// Plugin types that only work chained after a main plugin (they need prevResult).
const std::vector<std::string>& ChainedOnlyPlugins();

// Report renderings: a short readable text, and one JSON object for tools.
std::string FormatReportText(const Report& report);
std::string FormatReportJson(const Report& report);

}  // namespace nodegate::runtime
