#pragma once
// Which process holds a socket: /proc/*/fd links name sockets as "socket:[INODE]"; the
// command is /proc/PID/comm and the container is read from /proc/PID/cgroup.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace nodegate::ports {

struct ProcessInfo {
  int pid = 0;
  std::string command;
  std::optional<std::string> container;
};

// ContainerIdFromCgroup: the container ID a /proc/PID/cgroup text names, or nullopt. A path
// component names a container when, after dropping a runtime's prefix ("cri-containerd-",
// "crio-", "docker-", "libpod-") and a ".scope" suffix, it is 64 hex digits: systemd-driver
// scopes (cri-containerd-<id>.scope, libpod-<id>.scope) and cgroupfs paths (/docker/<id>,
// /kubepods/besteffort/pod<uid>/<id>) alike. conmon's scope (libpod-conmon-<id>) is not one.
std::optional<std::string> ContainerIdFromCgroup(std::string_view cgroup_text);

// SocketOwners: for each of `inodes`, every process under `proc_root` with a descriptor on it
// (a forked server shares its socket), by pid. Processes that end or deny access during the
// scan are skipped.
std::map<uint64_t, std::vector<ProcessInfo>> SocketOwners(const std::set<uint64_t>& inodes,
                                                          const std::string& proc_root = "/proc");

}  // namespace nodegate::ports
