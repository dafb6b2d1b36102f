#pragma once
// "hostPortConflicts": "reject": ADD refuses a host port that another container already maps
// in any layout (installed_mappings.h), naming that container, its network and, when the
// runtime's libcni cache knows it, its pod. The check and the install run under one exclusive
// lock, so two ADDs of one port cannot both pass the check.
//
//   std::optional<sys::FileLock> lock;
//   if (config.host_port_conflicts == HostPortConflicts::kReject) {
//     NG_ASSIGN_OR_RETURN(lock, LockForConflictCheck());
//     NG_RETURN_IF_ERROR(RefuseTakenPorts(config));
//   }
//   ... install ...

#include <optional>
#include <string>
#include <vector>

#include "lib/base/result.h"
#include "lib/sys/file_lock.h"
#include "plugins/portmap/config.h"
#include "plugins/portmap/installed_mappings.h"

namespace nodegate::portmap {

// The CNI error code of a refused ADD (plugin-specific; documented in the README).
inline constexpr int kErrHostPortTaken = 120;

// The lock every "reject" ADD of the node takes; NODEGATE_PORTMAP_LOCK overrides it (tests).
inline constexpr char kConflictLockPath[] = "/run/nodegate/portmap.lock";
// The runtime's libcni cache (files <network>-<containerID>-<ifname>); NODEGATE_CNI_CACHE_DIR
// overrides it.
inline constexpr char kCniCacheDir[] = "/var/lib/cni/results";

// One host port an ADD claims, in a family it installs rules for.
struct Claim {
  net::Family family = net::Family::kV4;
  std::optional<net::IpAddress> host_ip;  // nullopt: every local address of the family
  Protocol protocol = Protocol::kTcp;
  int host_port = 0;
};
std::vector<Claim> ClaimsOf(const Config& config);

// Same family, protocol and port, and host IPs equal or either one every address of the
// family (a DNAT rule matches one family: lib/net/host_address.h's kOwnFamily).
bool Overlaps(const InstalledMapping& installed, const Claim& claim);
// The mapping belongs to this ADD's container (a re-ADD replaces its own mappings). A layout
// that does not record the network (the reference's nftables) matches on the ID alone.
bool OwnedBy(const InstalledMapping& installed, const Config& config);

// The refusal's message, naming the other container, its network and pod.
std::string ConflictMessage(const Claim& claim, const InstalledMapping& installed,
                            const std::optional<std::string>& pod);

// Takes the node's conflict lock (its folder and file created when missing).
Result<sys::FileLock> LockForConflictCheck();
// Error kErrHostPortTaken when another container maps one of the ADD's host ports.
Status RefuseTakenPorts(const Config& config);

}  // namespace nodegate::portmap
