#pragma once
// Pod names for container IDs, from the runtime's libcni result cache (runtime/chain/cache.h
// describes the format): each file under /var/lib/cni/results holds "containerId" and, for
// pods a kubelet started, "cniArgs" with K8S_POD_NAMESPACE and K8S_POD_NAME.

#include <map>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>

namespace nodegate::ports {

inline constexpr char kDefaultCniCacheDir[] = "/var/lib/cni/results";

// PodOfCacheEntry: (container ID, "NAMESPACE/NAME") from one cache file's bytes, or nullopt
// when they are not JSON or lack the container ID or either pod argument.
std::optional<std::pair<std::string, std::string>> PodOfCacheEntry(std::string_view bytes);

// PodsByContainerId: every pod the cache files in `dir` name; `dir` may also be the cache's
// root (/var/lib/cni), whose results/ is then read. A missing folder is an empty cache;
// unreadable, foreign and non-regular files are skipped (the runtime owns the folder). Stops
// early, with what it has read, when `stop` is requested. With `only_ids`, only the files whose
// names hold one of them are read (libcni names a file NETWORK-CONTAINERID-IFNAME).
std::map<std::string, std::string> PodsByContainerId(
    const std::string& dir, std::stop_token stop = {},
    const std::set<std::string>* only_ids = nullptr);

}  // namespace nodegate::ports
