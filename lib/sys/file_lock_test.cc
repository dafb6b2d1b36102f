// FileLock: a released lock can be taken again, and its file stays.
#include "lib/sys/file_lock.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

namespace nodegate {
namespace {

class TempDir : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ng-file-lock-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

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
