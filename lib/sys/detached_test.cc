// Detached work: nothing runs until a main allows it; then the child sees only the descriptors
// it keeps, and outlives nothing it was not given (its kept descriptors close when it exits).
#include "lib/sys/detached.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <array>

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

}  // namespace
}  // namespace nodegate
