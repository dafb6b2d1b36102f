#include "lib/sys/detached.h"

#include <unistd.h>

namespace nodegate::sys {
namespace {
bool g_allowed = false;
}  // namespace

void AllowDetachedWork() { g_allowed = true; }
bool DetachedWorkAllowed() { return g_allowed; }

void RunDetached(const std::function<void()>& work) {
  if (!g_allowed) {
    work();
    return;
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    work();
    return;
  }
  if (pid == 0) {
    ::close_range(0, ~0U, 0);
    work();
    ::_exit(0);  // no atexit handlers or static destructors of the parent's state
  }
}

}  // namespace nodegate::sys
