#pragma once
// The runtime's result cache, in libcni's format and place so that DEL and CHECK work later
// and other tools (podman, containerd, cnitool) can read what we wrote and we can read theirs:
//
//   <cache_dir>/results/<network>-<containerID>-<ifname>       (dir 0700, file 0600)
//   {"kind":"cniCacheV1","containerId":ID,"config":BASE64(list bytes),"ifName":IF,
//    "networkName":NET,"netns":NS?,"cniArgs":[[K,V],...]?,"capabilityArgs":{...}?,
//    "result":{...}?}
//
// Keys are written in that order (Go's struct order) and empty optional keys are omitted.

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lib/base/result.h"
#include "lib/cni/types.h"

namespace nodegate::runtime {

inline constexpr char kDefaultCacheDir[] = "/var/lib/cni";
inline constexpr char kCacheKindV1[] = "cniCacheV1";

struct CachedAttachment {
  std::string container_id;
  std::string network_name;
  std::string ifname;
  std::string netns;
  std::string config;  // the list bytes (decoded from base64)
  std::vector<std::pair<std::string, std::string>> cni_args;
  cni::Json capability_args = cni::Json::object();
  cni::Json result;  // raw cached result (null when absent)
};

// "<cache_dir>/results/<network>-<containerID>-<ifname>"; an error when a part is empty.
Result<std::string> CacheFilePath(const std::string& cache_dir, const std::string& network,
                                  const std::string& container_id, const std::string& ifname);

std::string EncodeCacheEntry(const CachedAttachment& entry);
// Errors: code 6 when the bytes are not a cniCacheV1 object.
Result<CachedAttachment> DecodeCacheEntry(std::string_view bytes);

Status WriteCacheEntry(const std::string& cache_dir, const CachedAttachment& entry);
// nullopt when there is no cache file (not an error: the runtime may never have cached).
Result<std::optional<CachedAttachment>> ReadCacheEntry(const std::string& cache_dir,
                                                       const std::string& network,
                                                       const std::string& container_id,
                                                       const std::string& ifname);
Status DeleteCacheEntry(const std::string& cache_dir, const std::string& network,
                        const std::string& container_id, const std::string& ifname);

// Every readable cniCacheV1 entry under <cache_dir>/results (files sorted by name), as
// libcni's GetCachedAttachments; unreadable or foreign files are skipped.
std::vector<CachedAttachment> ListCachedAttachments(const std::string& cache_dir);

}  // namespace nodegate::runtime
