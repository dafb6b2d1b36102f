#pragma once
// CNI_ARGS ("K=V;K2=V2"), parsed as the reference does: every piece must be exactly one
// "key=value"; keys are case-sensitive names the plugin knows; unknown keys are an error
// unless IgnoreUnknown is 1/true (any case) somewhere in the string.

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/result.h"

namespace nodegate::cni {

class CniArgs {
 public:
  // Syntax check only (every piece "K=V"); for the dispatcher.
  static Status CheckSyntax(std::string_view text);
  // Full parse against the keys a plugin understands ("IgnoreUnknown" is always known).
  static Result<CniArgs> Parse(std::string_view text, const std::vector<std::string>& known_keys);

  std::optional<std::string> Get(const std::string& key) const;

 private:
  std::map<std::string, std::string> values_;
};

}  // namespace nodegate::cni
