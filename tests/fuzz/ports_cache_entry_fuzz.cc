// The pod of a libcni cache entry as `nodegate ports` reads it (ports/cni_cache.h), from the
// JSON parser's events. Invariant: the same answer as reading the entry as a whole document
// (what the reader did before it read events): the oracle below.

#include <nlohmann/json.hpp>

#include "ports/cni_cache.h"
#include "tests/fuzz/fuzz_target.h"

namespace nodegate::fuzz {
namespace {

std::optional<std::string> Arg(const nlohmann::json& args, std::string_view name) {
  for (const nlohmann::json& pair : args) {
    if (pair.is_array() && pair.size() == 2 && pair[0].is_string() && pair[1].is_string() &&
        pair[0].get_ref<const std::string&>() == name) {
      return pair[1].get<std::string>();
    }
  }
  return std::nullopt;
}

std::optional<std::pair<std::string, std::string>> PodByDocument(std::string_view bytes) {
  const nlohmann::json entry = nlohmann::json::parse(bytes, nullptr, /*allow_exceptions=*/false);
  if (!entry.is_object()) return std::nullopt;
  const auto id = entry.find("containerId");
  const auto args = entry.find("cniArgs");
  if (id == entry.end() || !id->is_string() || id->get_ref<const std::string&>().empty() ||
      args == entry.end() || !args->is_array()) {
    return std::nullopt;
  }
  const auto ns = Arg(*args, "K8S_POD_NAMESPACE");
  const auto name = Arg(*args, "K8S_POD_NAME");
  if (!ns || !name || ns->empty() || name->empty()) return std::nullopt;
  return std::make_pair(id->get<std::string>(), *ns + "/" + *name);
}

}  // namespace
}  // namespace nodegate::fuzz

NG_FUZZ_TARGET(ports_cache_entry) {
  NG_FUZZ_CHECK(ports::PodOfCacheEntry(data) == PodByDocument(data));
}
