#include "admit/api/host_node.h"

#include <sys/statvfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace nodegate::admit {
namespace {

// MemInfoKiB: a "Name: N kB" (or plain count) line of /proc/meminfo, 0 when absent.
int64_t MemInfoValue(const std::string& name) {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name + ":", 0) == 0) {
      std::istringstream fields(line.substr(name.size() + 1));
      int64_t value = 0;
      fields >> value;
      return value;
    }
  }
  return 0;
}

std::string FormatGiB(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1fGi", static_cast<double>(bytes) / (1 << 30));
  return buf;
}

}  // namespace

std::string GoArch(const std::string& machine) {
  if (machine == "x86_64") {
    return "amd64";
  }
  if (machine == "aarch64" || machine == "arm64") {
    return "arm64";
  }
  if (machine.starts_with("armv")) {
    return "arm";
  }
  if (machine == "i386" || machine == "i686") {
    return "386";
  }
  return machine;  // ppc64le, s390x, riscv64 are spelled alike
}

Node HostNode() {
  Node node;
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') {
    std::snprintf(host, sizeof host, "localhost");
  }
  // Node names are lower case DNS names; hostnames may not be (kubelet lower-cases them).
  node.name = host;
  std::transform(node.name.begin(), node.name.end(), node.name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  utsname uts{};
  std::string machine = uname(&uts) == 0 ? uts.machine : "unknown";
  node.labels[std::string(kLabelOs)] = "linux";
  node.labels[std::string(kLabelArch)] = GoArch(machine);
  node.labels[std::string(kLabelHostname)] = node.name;

  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  ResourceList capacity;
  capacity["cpu"] = Quantity::FromUnits(cpus > 0 ? cpus : 1);
  int64_t mem_kib = MemInfoValue("MemTotal");
  if (mem_kib <= 0) {
    mem_kib = static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE) / 1024;
  }
  capacity["memory"] = Quantity::FromUnits(mem_kib * 1024);
  capacity["pods"] = Quantity::FromUnits(110);
  struct statvfs fs {};
  const char* root = access("/var/lib/kubelet", F_OK) == 0 ? "/var/lib/kubelet" : "/";
  if (statvfs(root, &fs) == 0) {
    capacity["ephemeral-storage"] =
        Quantity::FromUnits(static_cast<int64_t>(fs.f_blocks) * static_cast<int64_t>(fs.f_frsize));
  }
  const int64_t huge_kib = MemInfoValue("Hugepagesize");
  if (huge_kib > 0) {
    const int64_t total = MemInfoValue("HugePages_Total");
    std::string size = huge_kib % (1024 * 1024) == 0
                           ? std::to_string(huge_kib / (1024 * 1024)) + "Gi"
                       : huge_kib % 1024 == 0 ? std::to_string(huge_kib / 1024) + "Mi"
                                              : std::to_string(huge_kib) + "Ki";
    capacity["hugepages-" + size] = Quantity::FromUnits(total * huge_kib * 1024);
  }
  node.capacity = capacity;
  node.allocatable = capacity;
  return node;
}

std::string HostSummary(const Node& node) {
  auto get = [&](const char* name) -> int64_t {
    auto it = node.allocatable.find(name);
    return it == node.allocatable.end() ? 0 : it->second.Value();
  };
  return std::to_string(get("cpu")) + " CPUs, " + FormatGiB(get("memory")) + " memory, " +
         std::to_string(get("pods")) + " pods";
}

}  // namespace nodegate::admit
