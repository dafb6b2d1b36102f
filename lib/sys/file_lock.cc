#include "lib/sys/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>

#include <cerrno>
#include <cstring>

namespace nodegate::sys {

Result<FileLock> FileLock::Acquire(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!fd.valid()) {
    return Error(kErrIo, "open lock " + path + ": " + std::strerror(errno));
  }
  while (::flock(fd.get(), LOCK_EX) != 0) {
    if (errno != EINTR) {
      return Error(kErrIo, "flock " + path + ": " + std::strerror(errno));
    }
  }
  return FileLock(std::move(fd));
}

Result<FileLock> FileLock::AcquireDirectory(const std::string& dir) {
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) {
    return Error(kErrIo, "open folder " + dir + " to lock it: " + std::strerror(errno));
  }
  while (::flock(fd.get(), LOCK_EX) != 0) {
    if (errno != EINTR) {
      return Error(kErrIo, "flock " + dir + ": " + std::strerror(errno));
    }
  }
  return FileLock(std::move(fd));
}

}  // namespace nodegate::sys
