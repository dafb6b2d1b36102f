// ReadRegularFile: the one way nodegate reads a named file. Every kind of file that is not a
// regular one is refused by type, without blocking (FIFO) or reading forever (/dev/zero).
#include "lib/sys/io.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>

namespace nodegate::sys {
namespace {

class ReadRegularFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ng-io-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }

  std::string dir_;
};

TEST_F(ReadRegularFileTest, ReadsARegularFileAndALinkToOne) {
  std::ofstream(Path("a")) << "hello";
  std::filesystem::create_symlink(Path("a"), Path("link"));
  auto text = ReadRegularFile(Path("a"), 5);
  ASSERT_TRUE(text.ok()) << text.error().msg;
  EXPECT_EQ(*text, "hello");
  text = ReadRegularFile(Path("link"), 5);
  ASSERT_TRUE(text.ok()) << text.error().msg;
  EXPECT_EQ(*text, "hello");
}

TEST_F(ReadRegularFileTest, RefusesWhatIsNotARegularFileByType) {
  ASSERT_EQ(::mkfifo(Path("fifo").c_str(), 0600), 0);
  std::filesystem::create_symlink("/dev/zero", Path("zero"));
  struct Case {
    std::string path;
    std::string want;
  };
  const Case cases[] = {
      {Path("fifo"), Path("fifo") + ": not a regular file (a FIFO)"},
      {"/dev/zero", "/dev/zero: not a regular file (a character device)"},
      {Path("zero"), Path("zero") + ": not a regular file (a character device)"},
      {dir_, dir_ + ": is a directory"},
      {Path("missing"), "not found: " + Path("missing")},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.path);
    auto text = ReadRegularFile(c.path, 1 << 20);
    ASSERT_FALSE(text.ok());
    EXPECT_EQ(text.error().msg, c.want);
  }
}

TEST_F(ReadRegularFileTest, RefusesAFileOverTheCap) {
  std::ofstream(Path("big")) << std::string(101, 'x');
  auto text = ReadRegularFile(Path("big"), 100);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.error().msg, Path("big") + ": larger than 100 bytes");
  EXPECT_TRUE(ReadRegularFile(Path("big"), 101).ok());
}

TEST(ReadAllCappedTest, StopsAtTheCapOnAnEndlessStream) {
  const int fd = ::open("/dev/zero", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  std::string out;
  errno = 0;
  EXPECT_FALSE(ReadAllCapped(fd, size_t{1} << 20, out));
  EXPECT_EQ(errno, EFBIG);
  EXPECT_LE(out.size(), size_t{1} << 20);
  ::close(fd);
}

TEST(FormatByteCapTest, MiBWhenWhole) {
  EXPECT_EQ(FormatByteCap(size_t{16} << 20), "16 MiB");
  EXPECT_EQ(FormatByteCap(1000), "1000 bytes");
}

}  // namespace
}  // namespace nodegate::sys
