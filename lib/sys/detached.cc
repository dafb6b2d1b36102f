#include "lib/sys/detached.h"

#include <unistd.h>

namespace nodegate::sys {
namespace {
bool g_allowed = false;
}  // namespace

void AllowDetachedWork() { g_allowed = true; }
bool DetachedWorkAllowed() { return g_allowed; }

bool SpawnDetached(const std::function<void()>& work, int keep_fd) {
  if (!g_allowed) return false;
  const pid_t pid = ::fork();
  if (pid < 0) return false;
  if (pid == 0) {
    if (keep_fd > 0) ::close_range(0, static_cast<unsigned>(keep_fd) - 1, 0);
    ::close_range(keep_fd < 0 ? 0 : static_cast<unsigned>(keep_fd) + 1, ~0U, 0);
    work();
    ::_exit(0);  // no atexit handlers or static destructors of the parent's state
  }
  return true;
}

}  // namespace nodegate::sys
