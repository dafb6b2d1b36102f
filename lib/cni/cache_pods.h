#pragma once
// Which pod a container is, from the runtime's libcni result cache (runtime/chain/cache.h
// describes the format): each file under /var/lib/cni/results, named
// NETWORK-CONTAINERID-IFNAME, holds "containerId", "networkName" and, for pods a kubelet
// started, "cniArgs" with K8S_POD_NAMESPACE and K8S_POD_NAME. Read by `nodegate ports` and
// `nodegate admit --live` (every pod of the node) and by portmap's hostPortConflicts (the pod
// of the container that holds a port).

#include <map>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>

namespace nodegate::cni {

inline constexpr char kDefaultCniCacheDir[] = "/var/lib/cni/results";

// CachedPod: what a cache entry says of its container.
struct CachedPod {
  std::string container_id;
  std::string network;  // "networkName", "" when absent
  std::string pod;      // "NAMESPACE/NAME"
  bool operator==(const CachedPod&) const = default;
};

// PodOfCacheEntry: the pod of one cache file's bytes, or nullopt when they are not JSON or lack
// the container ID or either pod argument.
std::optional<CachedPod> PodOfCacheEntry(std::string_view bytes);

// PodOfContainer: "NAMESPACE/NAME" of the container `container_id` of `network` (of any
// network when it is "") from the cache folder `dir`, or nullopt. File names are ambiguous when
// names contain '-': the entry's own containerId and networkName decide.
std::optional<std::string> PodOfContainer(const std::string& dir, const std::string& network,
                                          const std::string& container_id);

// PodsByContainerId: every pod the cache files in `dir` name; `dir` may also be the cache's
// root (/var/lib/cni), whose results/ is then read. A missing folder is an empty cache;
// unreadable, foreign and non-regular files are skipped (the runtime owns the folder). Stops
// early, with what it has read, when `stop` is requested. With `only_ids`, only the files whose
// names hold one of them are read (libcni names a file NETWORK-CONTAINERID-IFNAME).
std::map<std::string, std::string> PodsByContainerId(
    const std::string& dir, std::stop_token stop = {},
    const std::set<std::string>* only_ids = nullptr);

}  // namespace nodegate::cni
