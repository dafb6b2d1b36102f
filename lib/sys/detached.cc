#include "lib/sys/detached.h"

#include <unistd.h>

#include <algorithm>

namespace nodegate::sys {
namespace {
bool g_allowed = false;
}  // namespace

void AllowDetachedWork() { g_allowed = true; }
bool DetachedWorkAllowed() { return g_allowed; }

bool SpawnDetached(const std::function<void()>& work, std::vector<int> keep_fds) {
  if (!g_allowed) return false;
  std::sort(keep_fds.begin(), keep_fds.end());
  const pid_t pid = ::fork();
  if (pid < 0) return false;
  if (pid == 0) {
    unsigned next = 0;  // the lowest descriptor not yet closed or kept
    for (int fd : keep_fds) {
      if (fd < 0 || static_cast<unsigned>(fd) < next) continue;
      if (static_cast<unsigned>(fd) > next) ::close_range(next, static_cast<unsigned>(fd) - 1, 0);
      next = static_cast<unsigned>(fd) + 1;
    }
    ::close_range(next, ~0U, 0);
    work();
    ::_exit(0);  // no atexit handlers or static destructors of the parent's state
  }
  return true;
}

}  // namespace nodegate::sys
