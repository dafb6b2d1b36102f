// The pod of a libcni cache entry as nodegate reads it (lib/cni/cache_pods.h), from the
// JSON parser's events. Invariant: the same answer as reading the entry as a whole document
// (what the reader did before it read events): the oracle below.

#include <nlohmann/json.hpp>

#include "lib/cni/cache_pods.h"
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

std::optional<cni::CachedPod> PodByDocument(std::string_view bytes) {
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
  const auto network = entry.find("networkName");
  return cni::CachedPod{
      id->get<std::string>(),
      network != entry.end() && network->is_string() ? network->get<std::string>() : std::string(),
      *ns + "/" + *name};
}

}  // namespace
}  // namespace nodegate::fuzz

NG_FUZZ_TARGET(cni_cache_pods) { NG_FUZZ_CHECK(cni::PodOfCacheEntry(data) == PodByDocument(data)); }
