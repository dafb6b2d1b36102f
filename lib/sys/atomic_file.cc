#include "lib/sys/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "lib/sys/fd.h"
#include "lib/sys/io.h"

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
  if (!WriteAll(fd.get(), content)) {
    return fail("write");
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
  if (!ReadAll(fd.get(), out)) {
    return Error(kErrIo, "read " + path + ": " + std::strerror(errno));
  }
  return out;
}

}  // namespace nodegate::sys
