// Detached work: nothing runs until a main allows it; then the child sees only the descriptors
// it keeps, and outlives nothing it was not given (its kept descriptors close when it exits),
// also where close_range is missing (a kernel before 5.9, a seccomp profile that refuses it)
// and where /proc is not mounted: a seccomp filter makes those calls fail as such a host would.
#include "lib/sys/detached.h"

#include <gtest/gtest.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstddef>
#include <utility>
#include <vector>

namespace nodegate {
namespace {

struct Pipe {
  Pipe() { EXPECT_EQ(::pipe(fds.data()), 0); }
  ~Pipe() {
    for (int fd : fds) {
      if (fd >= 0) ::close(fd);
    }
  }
  void CloseWriteEnd() {
    ::close(fds[1]);
    fds[1] = -1;
  }
  int read_end() const { return fds[0]; }
  int write_end() const { return fds[1]; }
  std::array<int, 2> fds{-1, -1};
};

// The child's work: reports on fds[0] (a write end), then waits until fds[1] (a read end)
// reaches end of file.
void ReportThenWaitForRelease(const int* fds, std::size_t count) {
  if (count != 2) return;
  const char report = 'x';
  if (::write(fds[0], &report, 1) != 1) return;
  char byte;
  while (::read(fds[1], &byte, 1) > 0) {
  }
}

// Reads one byte within `timeout_ms`; -1 on timeout, 0 on end of file.
int ReadOne(int fd, char* byte, int timeout_ms) {
  pollfd ready{fd, POLLIN, 0};
  if (::poll(&ready, 1, timeout_ms) != 1) return -1;
  return static_cast<int>(::read(fd, byte, 1));
}

void ExpectChildKeepsOnlyItsDescriptors(bool (*spawn)(const Pipe&, const Pipe&)) {
  Pipe report, release, unrelated;
  ASSERT_TRUE(spawn(report, release));
  report.CloseWriteEnd();
  unrelated.CloseWriteEnd();
  char byte = 0;
  ASSERT_EQ(ReadOne(report.read_end(), &byte, 5000), 1);
  EXPECT_EQ(byte, 'x');
  // The child runs (it is waiting on `release`) and did not keep `unrelated`'s write end.
  EXPECT_EQ(ReadOne(unrelated.read_end(), &byte, 5000), 0);
  release.CloseWriteEnd();
  // It exits, closing the kept write end of `report`.
  EXPECT_EQ(ReadOne(report.read_end(), &byte, 5000), 0);
}

bool SpawnAtExit(const Pipe& report, const Pipe& release) {
  const std::array<int, 2> keep{report.write_end(), release.read_end()};
  return sys::SpawnDetachedAtExit(ReportThenWaitForRelease, keep);
}

bool SpawnForked(const Pipe& report, const Pipe& release) {
  const int write_end = report.write_end(), read_end = release.read_end();
  return sys::SpawnDetached(
      [write_end, read_end] {
        const std::array<int, 2> kept{write_end, read_end};
        ReportThenWaitForRelease(kept.data(), kept.size());
      },
      {write_end, read_end});
}

TEST(DetachedWork, RunsOnlyOnceAllowedAndKeepsOnlyTheGivenDescriptors) {
  Pipe never;
  const std::array<int, 1> keep{never.write_end()};
  EXPECT_FALSE(sys::SpawnDetachedAtExit(ReportThenWaitForRelease, keep));
  EXPECT_FALSE(sys::SpawnDetached([] { ::_exit(1); }));
  never.CloseWriteEnd();
  char byte;
  EXPECT_EQ(ReadOne(never.read_end(), &byte, 100), 0);  // nobody else holds the write end

  sys::AllowDetachedWork();
  ExpectChildKeepsOnlyItsDescriptors(SpawnAtExit);
  ExpectChildKeepsOnlyItsDescriptors(SpawnForked);
}

// Makes each listed system call fail with its errno in this process and its children, as a
// kernel without it (ENOSYS) or a seccomp profile would.
bool RefuseSystemCalls(const std::vector<std::pair<long, int>>& calls) {
#if defined(__x86_64__)
  constexpr uint32_t kArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
  constexpr uint32_t kArch = AUDIT_ARCH_AARCH64;
#endif
  std::vector<sock_filter> program = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kArch, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
  };
  for (const auto& [number, error] : calls) {
    program.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<uint32_t>(number), 0, 1));
    program.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | static_cast<uint32_t>(error)));
  }
  program.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  const sock_fprog filter{static_cast<unsigned short>(program.size()), program.data()};
  return ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
         ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &filter) == 0;
}

// Runs both kinds of detached work in a child process whose `calls` fail as listed; the
// child's assertions decide its exit status.
void ExpectDescriptorsClosedWhere(const std::vector<std::pair<long, int>>& calls) {
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // A low descriptor limit keeps the no-/proc path (one close per number) short.
    rlimit limit{};
    ::getrlimit(RLIMIT_NOFILE, &limit);
    limit.rlim_cur = std::min<rlim_t>(limit.rlim_cur, 4096);
    ::setrlimit(RLIMIT_NOFILE, &limit);
    if (!RefuseSystemCalls(calls)) ::_exit(2);
    EXPECT_EQ(::close_range(1000, 1000, 0), -1);
    EXPECT_EQ(errno, ENOSYS);
    sys::AllowDetachedWork();
    ExpectChildKeepsOnlyItsDescriptors(SpawnAtExit);
    ExpectChildKeepsOnlyItsDescriptors(SpawnForked);
    ::_exit(::testing::Test::HasFailure() ? 1 : 0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0) << "2: the seccomp filter could not be installed";
}

TEST(DetachedWork, ClosesDescriptorsWithoutCloseRange) {
  ExpectDescriptorsClosedWhere({{SYS_close_range, ENOSYS}});
}

TEST(DetachedWork, ClosesDescriptorsWithoutCloseRangeOrProc) {
  ExpectDescriptorsClosedWhere({{SYS_close_range, ENOSYS}, {SYS_openat, ENOENT}});
}

}  // namespace
}  // namespace nodegate
