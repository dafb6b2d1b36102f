#include "webhook/metrics/process.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "webhook/metrics/names.h"

namespace nodegate::webhook {
namespace {

// BootTime: seconds since the epoch when the machine booted (/proc/stat's btime).
double BootTime() {
  std::ifstream stat("/proc/stat");
  std::string key;
  double value = 0;
  while (stat >> key) {
    if (key == "btime") {
      stat >> value;
      return value;
    }
    stat.ignore(1 << 16, '\n');
  }
  return 0;
}

size_t OpenFds() {
  size_t n = 0;
  if (DIR* dir = opendir("/proc/self/fd")) {
    while (dirent* entry = readdir(dir)) {
      n += entry->d_name[0] != '.';
    }
    closedir(dir);
    n -= n > 0 ? 1 : 0;  // the descriptor opendir itself holds
  }
  return n;
}

}  // namespace

std::vector<Sample> ProcessSamples() {
  std::vector<Sample> out;
  std::ifstream stat_file("/proc/self/stat");
  std::string stat((std::istreambuf_iterator<char>(stat_file)), {});
  // The fields after the command (which may hold spaces) start after its closing ')'.
  const size_t close = stat.rfind(')');
  if (close != std::string::npos) {
    std::istringstream fields(stat.substr(close + 2));
    std::string field;
    std::vector<std::string> f;
    while (fields >> field) {
      f.push_back(field);
    }
    // proc(5): utime 14, stime 15, starttime 22, vsize 23, rss 24 (counted from 1, the pid);
    // f[0] is field 3.
    if (f.size() > 21) {
      const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
      const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
      out.push_back({kProcessCpuSeconds, "User and system CPU time spent, in seconds.",
                     (std::stod(f[11]) + std::stod(f[12])) / tick, "", true});
      out.push_back(
          {kProcessResidentMemory, "Resident memory size in bytes.", std::stod(f[21]) * page, ""});
      out.push_back({kProcessVirtualMemory, "Virtual memory size in bytes.", std::stod(f[20]), ""});
      if (const double boot = BootTime(); boot > 0) {
        out.push_back({kProcessStartTime, "Start time of the process since the epoch, in seconds.",
                       boot + std::stod(f[19]) / tick, ""});
      }
    }
  }
  out.push_back(
      {kProcessOpenFds, "Number of open file descriptors.", static_cast<double>(OpenFds()), ""});
  struct rlimit limit = {};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0) {
    out.push_back({kProcessMaxFds, "Maximum number of open file descriptors.",
                   static_cast<double>(limit.rlim_cur), ""});
  }
  return out;
}

}  // namespace nodegate::webhook
