#pragma once
// A scripted Executor for driver unit tests: records every call and answers from a table
// keyed by "<type> <COMMAND>", so tests assert exactly what a plugin received.

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "lib/cni/types.h"
#include "runtime/invoke/invoke.h"

namespace nodegate::runtime::testing {

struct Call {
  std::string type;  // binary base name
  CniEnv env;
  cni::Json stdin_json;
};

class FakeExecutor : public Executor {
 public:
  // Plugins that exist: type -> "/fake/<type>".
  std::vector<std::string> installed = {"bridge", "portmap", "bandwidth", "host-local"};
  // "<type> <COMMAND>" -> output; missing entries succeed with empty stdout.
  std::map<std::string, ExecOutput> replies;
  // Supported versions answered to VERSION, by type (default: every version).
  std::map<std::string, std::vector<std::string>> versions;
  std::vector<Call> calls;

  Result<std::string> FindInPath(const std::string& type,
                                 const std::vector<std::string>& dirs) override {
    for (const auto& t : installed) {
      if (t == type && !dirs.empty()) {
        return "/fake/" + type;
      }
    }
    return Error(kErrInvalidConfig, "failed to find plugin \"" + type + "\" in path [fake]");
  }

  Result<ExecOutput> Run(const std::string& binary, const CniEnv& env,
                         const std::string& stdin_data) override {
    const std::string type = binary.substr(binary.rfind('/') + 1);
    calls.push_back({type, env, cni::Json::parse(stdin_data, nullptr, false)});
    if (env.command == "VERSION") {
      auto it = versions.find(type);
      std::vector<std::string> v =
          it != versions.end() ? it->second
                               : std::vector<std::string>{"0.3.1", "0.4.0", "1.0.0", "1.1.0"};
      return ExecOutput{0, cni::Json({{"cniVersion", "1.1.0"}, {"supportedVersions", v}}).dump(),
                        ""};
    }
    auto it = replies.find(type + " " + env.command);
    if (it != replies.end()) {
      return it->second;
    }
    return ExecOutput{0, "", ""};
  }

  std::vector<std::string> Sequence() const {
    std::vector<std::string> out;
    for (const auto& c : calls) {
      out.push_back(c.type + " " + c.env.command);
    }
    return out;
  }
};

}  // namespace nodegate::runtime::testing
