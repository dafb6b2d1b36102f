#include "lib/sys/netns.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace nodegate::sys {

Result<std::unique_ptr<NetnsScope>> NetnsScope::Enter(const std::string& path) {
  UniqueFd original(::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
  if (!original.valid()) {
    return Error(kErrIo, std::string("open current netns: ") + std::strerror(errno));
  }
  UniqueFd target(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!target.valid()) {
    return Error(kErrInvalidNetns,
                 "failed to open netns \"" + path + "\": " + std::strerror(errno));
  }
  if (::setns(target.get(), CLONE_NEWNET) != 0) {
    return Error(kErrInvalidNetns,
                 "failed to enter netns \"" + path + "\": " + std::strerror(errno));
  }
  return std::unique_ptr<NetnsScope>(new NetnsScope(std::move(original)));
}

NetnsScope::~NetnsScope() {
  // Failing to return would leave later kernel calls in the wrong namespace: never continue.
  if (::setns(original_.get(), CLONE_NEWNET) != 0) {
    std::abort();
  }
}

bool IsCurrentNetns(const std::string& path) {
  struct stat a {};
  struct stat b {};
  if (::stat("/proc/thread-self/ns/net", &a) != 0 || ::stat(path.c_str(), &b) != 0) {
    return false;
  }
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

}  // namespace nodegate::sys
