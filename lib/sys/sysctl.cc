#include "lib/sys/sysctl.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "lib/sys/fd.h"

namespace nodegate::sys {
namespace {

std::string PathOf(std::string_view name) { return "/proc/sys/" + std::string(name); }

}  // namespace

Result<std::string> ReadSysctl(std::string_view name) {
  UniqueFd fd(::open(PathOf(name).c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    return Error(kErrIo, "read sysctl " + std::string(name) + ": " + std::strerror(errno));
  }
  char buf[256];
  ssize_t n;
  do {
    n = ::read(fd.get(), buf, sizeof(buf));
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    return Error(kErrIo, "read sysctl " + std::string(name) + ": " + std::strerror(errno));
  }
  std::string_view text(buf, static_cast<size_t>(n));
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ' || text.back() == '\t')) {
    text.remove_suffix(1);
  }
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  return std::string(text);
}

Status WriteSysctl(std::string_view name, std::string_view value) {
  UniqueFd fd(::open(PathOf(name).c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd.valid()) {
    return Error(kErrIo, "write sysctl " + std::string(name) + ": " + std::strerror(errno));
  }
  ssize_t n;
  do {
    n = ::write(fd.get(), value.data(), value.size());
  } while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(value.size())) {
    return Error(kErrIo, "write sysctl " + std::string(name) + "=" + std::string(value) + ": " +
                             std::strerror(n < 0 ? errno : EIO));
  }
  return OkStatus();
}

Status EnsureSysctl(std::string_view name, std::string_view value) {
  auto current = ReadSysctl(name);
  if (current.ok() && *current == value) return OkStatus();
  return WriteSysctl(name, value);
}

}  // namespace nodegate::sys
