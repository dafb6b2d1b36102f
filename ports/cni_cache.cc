#include "ports/cni_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <nlohmann/json.hpp>

#include "lib/sys/dir_io.h"
#include "lib/sys/fd.h"
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

// One cache file into `out` (reused between files), in four system calls where a path-based
// read takes six: a node has one file per container. False for anything but a regular file
// (the folder listing's type skips the rest unopened, fstat decides; O_NONBLOCK: a FIFO must
// not wait for a writer; O_NOFOLLOW: no symlinks) or one over the cap.
bool ReadCacheFile(int folder, const sys::DirEntry& entry, std::string& out) {
  if (entry.type != DT_REG && entry.type != DT_UNKNOWN) return false;
  sys::UniqueFd fd(::openat(folder, entry.name.c_str(),
                            O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK));
  if (!fd.valid()) return false;
  // fstat after the open decides: the file may have been replaced since the listing.
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  // A read of a regular file that returns less than asked for has reached its end, so a file
  // shorter than the first read (they all are) costs no second read to find the end.
  constexpr size_t kFirstRead = 64 << 10;
  out.resize(kFirstRead);
  ssize_t n;
  do {
    n = ::read(fd.get(), out.data(), kFirstRead);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return false;
  out.resize(static_cast<size_t>(n));
  if (static_cast<size_t>(n) < kFirstRead) return true;
  return sys::ReadAllCapped(fd.get(), kMaxCacheFileBytes - kFirstRead, out);
}

}  // namespace

std::optional<std::pair<std::string, std::string>> PodOfCacheEntry(std::string_view bytes) {
  // Only the two members read below are kept: an entry also holds the network's whole config
  // and result, and a node has one entry per container.
  const nlohmann::json::parser_callback_t only_needed =
      [](int depth, nlohmann::json::parse_event_t event, const nlohmann::json& parsed) {
        return depth != 1 || event != nlohmann::json::parse_event_t::key ||
               parsed == "containerId" || parsed == "cniArgs";
      };
  const nlohmann::json entry =
      nlohmann::json::parse(bytes, only_needed, /*allow_exceptions=*/false);
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

std::map<std::string, std::string> PodsByContainerId(const std::string& dir, std::stop_token stop,
                                                     const std::set<std::string>* only_ids) {
  std::map<std::string, std::string> pods;
  // The cache's root (what `nodegate cni --cache-dir` and libcni's CacheDir name) holds the
  // results in results/: read those, rather than finding no pod at all.
  const std::string nested = dir + "/results";
  sys::UniqueFd folder(::open(nested.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!folder.valid()) folder.Reset(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!folder.valid()) return pods;
  const auto entries = sys::ListDir(folder.get(), dir);
  if (!entries.ok()) return pods;
  std::string bytes;
  for (const sys::DirEntry& entry : *entries) {
    if (stop.stop_requested()) break;
    if (only_ids != nullptr &&
        std::none_of(only_ids->begin(), only_ids->end(), [&](const std::string& id) {
          return !id.empty() && entry.name.find(id) != std::string::npos;
        })) {
      continue;
    }
    if (!ReadCacheFile(folder.get(), entry, bytes)) continue;
    if (auto pod = PodOfCacheEntry(bytes)) {
      pods.insert(std::move(*pod));
    }
  }
  return pods;
}

}  // namespace nodegate::ports
