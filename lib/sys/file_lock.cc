#include "lib/sys/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

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

Result<FileLock> FileLock::AcquireUntil(const std::string& path,
                                        std::chrono::steady_clock::time_point deadline) {
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!fd.valid()) {
    return Error(kErrIo, "open lock " + path + ": " + std::strerror(errno));
  }
  auto pause = std::chrono::microseconds(100);
  for (;;) {
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) == 0) return FileLock(std::move(fd));
    if (errno != EWOULDBLOCK && errno != EINTR) {
      return Error(kErrIo, "flock " + path + ": " + std::strerror(errno));
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      return Error(kErrTryAgainLater, "lock " + path + ": still held by another process");
    }
    std::this_thread::sleep_for(
        std::min<std::chrono::steady_clock::duration>(pause, deadline - now));
    pause = std::min<std::chrono::microseconds>(pause * 2, std::chrono::milliseconds(5));
  }
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
