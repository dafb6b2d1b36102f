// FileLock: a released lock can be taken again, and its file stays.
#include "lib/sys/file_lock.h"

#include <gtest/gtest.h>

#include <filesystem>

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

}  // namespace
}  // namespace nodegate
