#include "lib/netfilter/release.h"

#include <fcntl.h>
#include <linux/membarrier.h>
#include <linux/netlink.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <vector>

#include "lib/netfilter/nfnl.h"
#include "lib/sys/detached.h"

namespace nodegate::netfilter {
namespace {

bool IsNfnetlinkSocket(int fd) {
  int value = 0;
  socklen_t len = sizeof(value);
  if (::getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &value, &len) != 0 || value != AF_NETLINK) {
    return false;
  }
  len = sizeof(value);
  return ::getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &value, &len) == 0 && value == NETLINK_NETFILTER;
}

// nf_tables' generation counter, read over `fd` (an nfnetlink socket the helper now owns);
// nullopt when the socket does not answer. Every commit in the namespace increments it. The
// request and the answer are the transport's (nfnl.h); the socket calls are made here because
// nothing here may allocate, and the helper waits at most 200 ms for the answer.
std::optional<uint32_t> ReadGeneration(int fd) {
  alignas(nlmsghdr) uint8_t buffer[8192];
  while (::recv(fd, buffer, sizeof(buffer), MSG_DONTWAIT) > 0) {
  }  // whatever the previous owner left unread
  alignas(nlmsghdr) uint8_t request[kGenerationRequestBytes];
  WriteGenerationRequest(request, 1);
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (::sendto(fd, request, sizeof(request), 0, reinterpret_cast<sockaddr*>(&kernel),
               sizeof(kernel)) < 0) {
    return std::nullopt;
  }
  pollfd ready{fd, POLLIN, 0};
  if (::poll(&ready, 1, 200) != 1) return std::nullopt;
  const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
  if (n <= 0) return std::nullopt;
  const auto* reply = reinterpret_cast<const nlmsghdr*>(buffer);
  if (!NLMSG_OK(reply, static_cast<size_t>(n))) return std::nullopt;
  return GenerationOf(reply);
}

// Waits until the namespace has gone one grace period without a commit: then no destroy work
// is pending and closing takes the commit mutex only for an instant. Bounded (2 s), so a
// namespace that never stops committing does not keep helpers around; past that, a close may
// again make one commit of someone else wait for the rest of a grace period.
// Runs in a child sharing the exited plugin's memory (sys::SpawnDetachedAtExit): system calls
// and locals only.
void WaitForQuietNfTables(const int* held, std::size_t count) {
  const int probe = count == 0 ? -1 : held[0];
  std::optional<uint32_t> first = probe >= 0 ? ReadGeneration(probe) : std::nullopt;
  uint32_t before = first.value_or(0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (std::chrono::steady_clock::now() < deadline) {
    // MEMBARRIER_CMD_GLOBAL returns after a full RCU grace period, which also covers the ones
    // destroy work started at earlier commits.
    if (::syscall(__NR_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0) != 0) ::usleep(50'000);
    if (!first) return;
    const std::optional<uint32_t> after = ReadGeneration(probe);
    if (!after || *after == before) return;
    before = *after;
  }
}

// Copies of the sockets handed off, kept open until this process exits.
std::vector<int>& Held() {
  static std::vector<int>* held = new std::vector<int>;  // never destroyed: used by atexit
  return *held;
}

// Work registered for the child; fixed storage the child reads after this process exited.
std::array<HelperWork, 4> g_works{};
std::size_t g_work_count = 0;
// The child's descriptors: those handed off (sys::SpawnDetachedAtExit shares memory for up to
// 64) and those its works open.
constexpr std::size_t kHandedOffAtMost = 64;
constexpr std::size_t kHeldAtMost = kHandedOffAtMost + 8;

// The child: the registered work first, then the wait, then exit (closing everything).
void RunHelper(const int* handed_off, std::size_t count) {
  std::array<int, kHeldAtMost> held{};
  std::size_t n = std::min(count, kHandedOffAtMost);
  std::copy(handed_off, handed_off + n, held.begin());
  for (std::size_t i = 0; i < g_work_count; ++i) {
    n += g_works[i](std::span<int>(held.data() + n, held.size() - n));
  }
  WaitForQuietNfTables(held.data(), n);
}

// At exit: one child runs the registered work and keeps the copies until nf_tables is quiet,
// then exits, closing them. It starts at exit, not at the first hand-off, because it shares
// this process's memory (sys::SpawnDetachedAtExit) and must not see it change under it for
// long.
void StartHelperAtExit() {
  std::vector<int>& held = Held();
  if (held.empty() && g_work_count == 0) return;
  // Without a child the copies close with the process, as a plain close would have, and the
  // registered work runs here, in the caller's time, as it would have without the helper.
  if (!sys::SpawnDetachedAtExit(RunHelper, held)) {
    std::array<int, kHeldAtMost - kHandedOffAtMost> opened{};
    for (std::size_t i = 0; i < g_work_count; ++i) {
      const std::size_t n = g_works[i](opened);
      for (std::size_t j = 0; j < n; ++j) ::close(opened[j]);
    }
  }
  for (int fd : held) ::close(fd);
  held.clear();
}

void StartHelperAtExitOnce() {
  static bool registered = false;
  if (registered) return;
  registered = true;
  std::atexit(StartHelperAtExit);
}

}  // namespace

void HandOffBeforeClose(int fd) {
  if (!sys::DetachedWorkAllowed() || fd < 0 || !IsNfnetlinkSocket(fd)) return;
  const int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
  if (copy < 0) return;
  StartHelperAtExitOnce();
  Held().push_back(copy);
}

bool RunInHelperAtExit(HelperWork work) {
  if (!sys::DetachedWorkAllowed() || g_work_count == g_works.size()) return false;
  StartHelperAtExitOnce();
  g_works[g_work_count++] = work;
  return true;
}

}  // namespace nodegate::netfilter
