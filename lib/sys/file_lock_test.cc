// FileLock: a released lock can be taken again, and its file stays; AcquireUntil's deadline.
#include "lib/sys/file_lock.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "lib/sys/testing/temp_dir.h"

namespace nodegate {
namespace {

using sys::testing::TempDir;

TEST_F(TempDir, FileLockIsReentrantAcrossObjectsAfterRelease) {
  const std::string path = dir_ + "/lock";
  {
    auto lock = sys::FileLock::Acquire(path);
    ASSERT_TRUE(lock.ok());
  }
  auto again = sys::FileLock::Acquire(path);
  EXPECT_TRUE(again.ok());
  EXPECT_TRUE(std::filesystem::exists(path));
}

// Two descriptors of one file exclude each other, even in one process (flock is per open file):
// the second waits until its deadline (code 11), or gets the lock once the first is released.
TEST_F(TempDir, AcquireUntilGivesUpAtItsDeadlineOrTakesTheReleasedLock) {
  using Clock = std::chrono::steady_clock;
  const std::string path = dir_ + "/node.lock";
  std::optional<sys::FileLock> held;
  {
    auto first = sys::FileLock::AcquireUntil(path, Clock::now() + std::chrono::seconds(1));
    ASSERT_TRUE(first.ok());
    held.emplace(std::move(*first));
  }
  const auto start = Clock::now();
  auto refused = sys::FileLock::AcquireUntil(path, start + std::chrono::milliseconds(50));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, kErrTryAgainLater);
  EXPECT_GE(Clock::now() - start, std::chrono::milliseconds(50));
  std::thread release([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    held.reset();
  });
  auto taken = sys::FileLock::AcquireUntil(path, Clock::now() + std::chrono::seconds(5));
  release.join();
  EXPECT_TRUE(taken.ok());
}

}  // namespace
}  // namespace nodegate
