#include "lib/sys/detached.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <new>
#include <tuple>

namespace nodegate::sys {
namespace {
bool g_allowed = false;

// The descriptor numbers of a process that cannot list its own (no /proc): the soft limit,
// capped at the kernel's default fs.nr_open.
constexpr unsigned kMaxDescriptors = 1U << 20;

// Closes the descriptors from `first` to `last`; allocates nothing. close_range is Linux
// 5.9+: on older kernels (RHEL 8's 4.18, Ubuntu 20.04's 5.4), or under a seccomp profile that
// refuses it (ENOSYS, EPERM), the descriptors /proc/self/fd lists are closed one by one, and
// without /proc every number below the descriptor limit.
void CloseRange(unsigned first, unsigned last) {
  if (::close_range(first, last, 0) == 0) return;
  const int dir = ::open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    alignas(dirent64) char entries[4096];
    ssize_t length;
    // Closing while listing is safe: the listing's position is a descriptor number.
    while ((length = ::getdents64(dir, entries, sizeof(entries))) > 0) {
      for (ssize_t offset = 0; offset < length;) {
        const auto* entry = reinterpret_cast<const dirent64*>(entries + offset);
        offset += entry->d_reclen;
        unsigned fd = 0;
        const char* digit = entry->d_name;
        for (; *digit >= '0' && *digit <= '9'; ++digit) fd = fd * 10 + (*digit - '0');
        if (*digit != '\0' || digit == entry->d_name) continue;  // "." and ".."
        if (fd >= first && fd <= last && fd != static_cast<unsigned>(dir)) {
          ::close(static_cast<int>(fd));
        }
      }
    }
    ::close(dir);
    return;
  }
  rlimit limit{};
  unsigned end = kMaxDescriptors;
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < kMaxDescriptors) {
    end = static_cast<unsigned>(limit.rlim_cur);
  }
  for (unsigned fd = first; fd < end && fd <= last; ++fd) ::close(static_cast<int>(fd));
}

// Closes every descriptor but those in `keep` (sorted); allocates nothing.
void CloseAllBut(std::span<const int> keep) {
  unsigned next = 0;  // the lowest descriptor not yet closed or kept
  for (int fd : keep) {
    if (fd < 0 || static_cast<unsigned>(fd) < next) continue;
    if (static_cast<unsigned>(fd) > next) CloseRange(next, static_cast<unsigned>(fd) - 1);
    next = static_cast<unsigned>(fd) + 1;
  }
  CloseRange(next, ~0U);
}

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kShareMemory = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kShareMemory = false;
#else
constexpr bool kShareMemory = true;
#endif
#else
constexpr bool kShareMemory = true;
#endif

// What the memory-sharing child reads, at the start of its own mapping (below its stack).
struct SharedChildArgs {
  SharedMemoryWork work;
  std::size_t count;
  std::array<int, 64> fds;
};
constexpr std::size_t kSharedChildMapping = 256 * 1024;

int RunSharedChild(void* raw) {
  const auto* args = static_cast<const SharedChildArgs*>(raw);
  std::array<int, std::tuple_size_v<decltype(SharedChildArgs::fds)>> sorted = args->fds;
  std::sort(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(args->count));
  CloseAllBut(std::span<const int>(sorted.data(), args->count));
  args->work(args->fds.data(), args->count);
  return 0;  // the child's exit, not the parent's
}
}  // namespace

void AllowDetachedWork() { g_allowed = true; }
bool DetachedWorkAllowed() { return g_allowed; }

bool SpawnDetached(const std::function<void()>& work, std::vector<int> keep_fds) {
  if (!g_allowed) return false;
  std::sort(keep_fds.begin(), keep_fds.end());
  const pid_t pid = ::fork();
  if (pid < 0) return false;
  if (pid == 0) {
    CloseAllBut(keep_fds);
    work();
    ::_exit(0);  // no atexit handlers or static destructors of the parent's state
  }
  return true;
}

bool SpawnDetachedAtExit(SharedMemoryWork work, std::span<const int> keep_fds) {
  if (!g_allowed) return false;
  if (!kShareMemory || keep_fds.size() > std::tuple_size_v<decltype(SharedChildArgs::fds)>) {
    return SpawnDetached(
        [work, fds = std::vector<int>(keep_fds.begin(), keep_fds.end())] {
          work(fds.data(), fds.size());
        },
        std::vector<int>(keep_fds.begin(), keep_fds.end()));
  }
  void* mapping = ::mmap(nullptr, kSharedChildMapping, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (mapping == MAP_FAILED) return false;
  auto* args = new (mapping) SharedChildArgs{work, keep_fds.size(), {}};
  std::copy(keep_fds.begin(), keep_fds.end(), args->fds.begin());
  char* stack_top = static_cast<char*>(mapping) + kSharedChildMapping;
  // Not unmapped once the child runs on it: it outlives this process, and the address space
  // ends with the child.
  if (::clone(RunSharedChild, stack_top, CLONE_VM | SIGCHLD, args) > 0) return true;
  ::munmap(mapping, kSharedChildMapping);
  return false;
}

}  // namespace nodegate::sys
