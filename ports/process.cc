#include "ports/process.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <memory>

#include "lib/sys/io.h"

namespace nodegate::ports {
namespace {

constexpr std::string_view kRuntimePrefixes[] = {"cri-containerd-", "crio-", "docker-", "libpod-"};
constexpr size_t kContainerIdLength = 64;

bool IsContainerId(std::string_view s) {
  return s.size() == kContainerIdLength && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

std::optional<std::string> ContainerIdFromComponent(std::string_view component) {
  for (std::string_view prefix : kRuntimePrefixes) {
    if (component.starts_with(prefix)) {
      component.remove_prefix(prefix.size());
      break;
    }
  }
  if (component.ends_with(".scope")) {
    component.remove_suffix(std::string_view(".scope").size());
  }
  if (IsContainerId(component)) {
    return std::string(component);
  }
  return std::nullopt;
}

using DirPtr = std::unique_ptr<DIR, int (*)(DIR*)>;

DirPtr OpenDir(const std::string& path) { return DirPtr(::opendir(path.c_str()), ::closedir); }

std::optional<uint64_t> ParseNumber(std::string_view s) {
  uint64_t value = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) {
    return std::nullopt;
  }
  return value;
}

// SocketInode: N from a descriptor link "socket:[N]".
std::optional<uint64_t> SocketInode(int fd_dir, const char* name) {
  std::array<char, 64> link{};
  const ssize_t n = ::readlinkat(fd_dir, name, link.data(), link.size() - 1);
  const std::string_view text(link.data(), n > 0 ? static_cast<size_t>(n) : 0);
  if (!text.starts_with("socket:[") || !text.ends_with("]")) {
    return std::nullopt;
  }
  return ParseNumber(text.substr(8, text.size() - 9));
}

ProcessInfo DescribeProcess(const std::string& proc_root, int pid) {
  const std::string dir = proc_root + "/" + std::to_string(pid);
  ProcessInfo info;
  info.pid = pid;
  if (auto comm = sys::ReadRegularFile(dir + "/comm", 4096); comm.ok()) {
    info.command = *comm;
    while (!info.command.empty() && info.command.back() == '\n') {
      info.command.pop_back();
    }
  }
  if (auto cgroup = sys::ReadRegularFile(dir + "/cgroup", 1 << 20); cgroup.ok()) {
    info.container = ContainerIdFromCgroup(*cgroup);
  }
  return info;
}

// WantedSocketsOf: the inodes among `inodes` that process `pid` has descriptors on.
std::set<uint64_t> WantedSocketsOf(const std::string& proc_root, int pid,
                                   const std::set<uint64_t>& inodes) {
  std::set<uint64_t> found;
  DirPtr fds = OpenDir(proc_root + "/" + std::to_string(pid) + "/fd");
  if (fds == nullptr) {
    return found;
  }
  while (const dirent* entry = ::readdir(fds.get())) {
    const auto inode = SocketInode(::dirfd(fds.get()), entry->d_name);
    if (inode && inodes.contains(*inode)) {
      found.insert(*inode);
    }
  }
  return found;
}

}  // namespace

std::optional<std::string> ContainerIdFromCgroup(std::string_view cgroup_text) {
  size_t start = 0;
  while (start < cgroup_text.size()) {
    size_t end = cgroup_text.find_first_of("/\n", start);
    if (end == std::string_view::npos) {
      end = cgroup_text.size();
    }
    if (auto id = ContainerIdFromComponent(cgroup_text.substr(start, end - start))) {
      return id;
    }
    start = end + 1;
  }
  return std::nullopt;
}

std::map<uint64_t, std::vector<ProcessInfo>> SocketOwners(const std::set<uint64_t>& inodes,
                                                          const std::string& proc_root) {
  std::map<uint64_t, std::vector<ProcessInfo>> owners;
  DirPtr proc = OpenDir(proc_root);
  if (proc == nullptr || inodes.empty()) {
    return owners;
  }
  while (const dirent* entry = ::readdir(proc.get())) {
    const auto pid = ParseNumber(entry->d_name);
    if (!pid) {
      continue;
    }
    const std::set<uint64_t> held = WantedSocketsOf(proc_root, static_cast<int>(*pid), inodes);
    if (held.empty()) {
      continue;
    }
    const ProcessInfo info = DescribeProcess(proc_root, static_cast<int>(*pid));
    for (uint64_t inode : held) {
      owners[inode].push_back(info);
    }
  }
  return owners;
}

}  // namespace nodegate::ports
