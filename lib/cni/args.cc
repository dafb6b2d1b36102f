#include "lib/cni/args.h"

#include <algorithm>

namespace nodegate::cni {
namespace {

std::vector<std::string_view> Split(std::string_view text, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    const size_t pos = text.find(sep, start);
    out.push_back(text.substr(start, pos == std::string_view::npos ? pos : pos - start));
    if (pos == std::string_view::npos) {
      break;
    }
    start = pos + 1;
  }
  return out;
}

bool IsTrueFlag(std::string_view v) {
  std::string lower(v);
  std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
  return lower == "1" || lower == "true";
}

}  // namespace

Status CniArgs::CheckSyntax(std::string_view text) {
  if (text.empty()) {
    return OkStatus();
  }
  for (std::string_view piece : Split(text, ';')) {
    if (Split(piece, '=').size() != 2) {
      return Error(kErrInvalidEnvironment, "ARGS: invalid pair \"" + std::string(piece) + "\"");
    }
  }
  return OkStatus();
}

Result<CniArgs> CniArgs::Parse(std::string_view text, const std::vector<std::string>& known_keys) {
  CniArgs out;
  if (text.empty()) {
    return out;
  }
  NG_RETURN_IF_ERROR(CheckSyntax(text));
  bool ignore_unknown = false;
  std::vector<std::pair<std::string, std::string>> pairs;
  for (std::string_view piece : Split(text, ';')) {
    auto kv = Split(piece, '=');
    pairs.emplace_back(std::string(kv[0]), std::string(kv[1]));
    if (kv[0] == "IgnoreUnknown" && IsTrueFlag(kv[1])) {
      ignore_unknown = true;
    }
  }
  std::vector<std::string> unknown;
  for (auto& [key, value] : pairs) {
    const bool known = key == "IgnoreUnknown" ||
                       std::find(known_keys.begin(), known_keys.end(), key) != known_keys.end();
    if (!known) {
      unknown.push_back('"' + key + "=" + value + '"');
      continue;
    }
    out.values_[key] = value;
  }
  if (!unknown.empty() && !ignore_unknown) {
    std::string list;
    for (size_t i = 0; i < unknown.size(); ++i) {
      list += (i ? " " : "") + unknown[i];
    }
    return Error(kErrInvalidEnvironment, "ARGS: unknown args [" + list + "]");
  }
  return out;
}

std::optional<std::string> CniArgs::Get(const std::string& key) const {
  auto it = values_.find(key);
  if (it == values_.end()) {
    return std::nullopt;
  }
  return it->second;
}

}  // namespace nodegate::cni
