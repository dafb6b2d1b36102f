// WriteFileAtomic replaces the whole file through a rename and leaves no temporary behind.
#include "lib/sys/atomic_file.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "lib/sys/testing/temp_dir.h"

namespace nodegate {
namespace {

using sys::testing::TempDir;

TEST_F(TempDir, AtomicWriteReplacesWholeFileAndLeavesNoTemp) {
  const std::string path = dir_ + "/f";
  ASSERT_TRUE(sys::WriteFileAtomic(path, "one").ok());
  ASSERT_TRUE(sys::WriteFileAtomic(path, "two").ok());
  auto content = sys::ReadFile(path);
  ASSERT_TRUE(content.ok());
  EXPECT_EQ(*content, "two");
  int entries = 0;
  for ([[maybe_unused]] auto& e : std::filesystem::directory_iterator(dir_)) {
    ++entries;
  }
  EXPECT_EQ(entries, 1);
  auto missing = sys::ReadFile(dir_ + "/nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, kErrIo);
}

}  // namespace
}  // namespace nodegate
