#include "lib/sys/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "lib/sys/fd.h"

namespace nodegate::sys {

Status WriteFileAtomic(const std::string& path, std::string_view content, int mode) {
  const auto slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  std::string tmp = dir + "/" + std::string(kTempPrefix) + base + ".XXXXXX";
  UniqueFd fd(::mkostemp(tmp.data(), O_CLOEXEC));
  if (!fd.valid()) {
    return Error(kErrIo, "create temporary file for " + path + ": " + std::strerror(errno));
  }
  auto fail = [&](const char* what) {
    const int saved = errno;
    ::unlink(tmp.c_str());
    return Error(kErrIo, std::string(what) + " " + path + ": " + std::strerror(saved));
  };
  size_t written = 0;
  while (written < content.size()) {
    const ssize_t n = ::write(fd.get(), content.data() + written, content.size() - written);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      return fail("write");
    }
    written += static_cast<size_t>(n);
  }
  if (::fchmod(fd.get(), static_cast<mode_t>(mode)) != 0) {
    return fail("chmod");
  }
  if (::fsync(fd.get()) != 0) {
    return fail("fsync");
  }
  fd.Reset();
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    return fail("rename");
  }
  return OkStatus();
}

Result<std::string> ReadFile(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    if (errno == ENOENT) {
      return Error(kErrIo, "not found: " + path);
    }
    return Error(kErrIo, "open " + path + ": " + std::strerror(errno));
  }
  std::string out;
  char buf[4096];
  while (true) {
    const ssize_t n = ::read(fd.get(), buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      return Error(kErrIo, "read " + path + ": " + std::strerror(errno));
    }
    if (n == 0) {
      break;
    }
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

}  // namespace nodegate::sys
