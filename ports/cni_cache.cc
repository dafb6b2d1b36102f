#include "ports/cni_cache.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "lib/sys/io.h"

namespace nodegate::ports {
namespace {

constexpr size_t kMaxCacheFileBytes = 16 << 20;

// CniArg: the value of `name` in libcni's [[K, V], ...] list.
std::optional<std::string> CniArg(const nlohmann::json& args, std::string_view name) {
  for (const nlohmann::json& pair : args) {
    if (pair.is_array() && pair.size() == 2 && pair[0].is_string() && pair[1].is_string() &&
        pair[0].get_ref<const std::string&>() == name) {
      return pair[1].get<std::string>();
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::pair<std::string, std::string>> PodOfCacheEntry(std::string_view bytes) {
  const nlohmann::json entry = nlohmann::json::parse(bytes, nullptr, /*allow_exceptions=*/false);
  if (!entry.is_object()) {
    return std::nullopt;
  }
  const auto id = entry.find("containerId");
  const auto args = entry.find("cniArgs");
  if (id == entry.end() || !id->is_string() || id->get_ref<const std::string&>().empty() ||
      args == entry.end() || !args->is_array()) {
    return std::nullopt;
  }
  const auto ns = CniArg(*args, "K8S_POD_NAMESPACE");
  const auto name = CniArg(*args, "K8S_POD_NAME");
  if (!ns || !name || ns->empty() || name->empty()) {
    return std::nullopt;
  }
  return std::make_pair(id->get<std::string>(), *ns + "/" + *name);
}

std::map<std::string, std::string> PodsByContainerId(const std::string& dir) {
  std::map<std::string, std::string> pods;
  std::error_code ec;
  // The cache's root (what `nodegate cni --cache-dir` and libcni's CacheDir name) holds the
  // results in results/: read those, rather than finding no pod at all.
  std::string results = dir;
  if (std::filesystem::is_directory(std::filesystem::path(dir) / "results", ec)) {
    results = (std::filesystem::path(dir) / "results").string();
  }
  for (std::filesystem::directory_iterator it(results, ec), end; !ec && it != end;
       it.increment(ec)) {
    auto bytes = sys::ReadRegularFile(it->path().string(), kMaxCacheFileBytes);
    if (!bytes.ok()) {
      continue;
    }
    if (auto pod = PodOfCacheEntry(*bytes)) {
      pods.insert(std::move(*pod));
    }
  }
  return pods;
}

}  // namespace nodegate::ports
