// LoadKernelModule runs the modprobe program with "-q NAME", nothing on its stdin or stdout,
// and reports a failing or missing program; KernelModuleLoaded looks for the module's file.
#include "lib/sys/kernel_module.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "lib/sys/atomic_file.h"

namespace nodegate::sys {
namespace {

class KernelModuleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("ng-kmod-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // A stand-in modprobe: records its arguments and what it read, prints on stdout, exits `code`.
  std::string FakeModprobe(int code) {
    const std::string path = (dir_ / "modprobe").string();
    std::ofstream(path) << "#!/bin/sh\necho \"$@\" > " << (dir_ / "args").string() << "\ncat > "
                        << (dir_ / "stdin").string() << "\necho noise\nexit " << code << "\n";
    ::chmod(path.c_str(), 0755);
    return path;
  }
  std::string Read(const std::string& name) {
    auto text = ReadFile((dir_ / name).string());
    return text.ok() ? *text : "<" + text.error().msg + ">";
  }

  std::filesystem::path dir_;
};

TEST_F(KernelModuleTest, RunsModprobeQuietlyWithTheName) {
  ASSERT_TRUE(LoadKernelModule("ip_tables", FakeModprobe(0)).ok());
  EXPECT_EQ(Read("args"), "-q ip_tables\n");
  EXPECT_EQ(Read("stdin"), "");
}

TEST_F(KernelModuleTest, AFailingModprobeIsAnError) {
  const Status loaded = LoadKernelModule("ip6_tables", FakeModprobe(1));
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.error().code, kErrKernel);
  EXPECT_NE(loaded.error().msg.find("ip6_tables"), std::string::npos);
}

TEST_F(KernelModuleTest, AMissingModprobeIsAnError) {
  const Status loaded = LoadKernelModule("ip_tables", (dir_ / "absent").string());
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.error().msg.find("absent"), std::string::npos);
}

TEST_F(KernelModuleTest, LoadedByItsFile) {
  EXPECT_FALSE(KernelModuleLoaded((dir_ / "ip_tables_names").string()));
  std::ofstream((dir_ / "ip_tables_names").string()) << "";
  EXPECT_TRUE(KernelModuleLoaded((dir_ / "ip_tables_names").string()));
}

TEST(ModprobeProgram, IsAnAbsolutePath) { EXPECT_EQ(ModprobeProgram().front(), '/'); }

}  // namespace
}  // namespace nodegate::sys
