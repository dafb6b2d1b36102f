// The operator's log file ("logFile", "logLevel" in the network config): what a record looks
// like, which levels reach the file, rotation at 10 MiB keeping three old files, and a file
// that cannot be opened, which is reported on stderr and never stops the invocation.
#include "lib/cni/logging.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>
#include <vector>

namespace nodegate::cni {
namespace {

namespace fs = std::filesystem;

class FileLoggingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "ng-logging.XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    ::unsetenv("NODEGATE_LOG_LEVEL");
    InitLogging("portmap");
  }
  void TearDown() override {
    InitLogging("portmap");  // a logger without the file sink: the file is closed
    fs::remove_all(dir_);
  }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
};

std::vector<std::string> Lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Every level (logLevel "debug"): one line a record, timestamp, plugin name, PID and level.
TEST_F(FileLoggingTest, RecordsAreOneLineEachWithTimePluginPidAndLevel) {
  ConfigureFileLogging("portmap", Path("cni.log"), "debug");
  LogDebug("ADD container={} ifname={}", "c1", "eth0");
  LogInfo("info {}", 2);
  LogWarn("warn {}", 3);
  const auto lines = Lines(Path("cni.log"));
  ASSERT_EQ(lines.size(), 3u);
  const std::string pid = std::to_string(::getpid());
  const std::string stamp = R"(^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3} portmap\[)" + pid + R"(\] )";
  EXPECT_TRUE(
      std::regex_search(lines[0], std::regex(stamp + "debug: ADD container=c1 ifname=eth0$")))
      << lines[0];
  EXPECT_TRUE(std::regex_search(lines[1], std::regex(stamp + "info: info 2$"))) << lines[1];
  EXPECT_TRUE(std::regex_search(lines[2], std::regex(stamp + "warning: warn 3$"))) << lines[2];
}

// logLevel picks what reaches the file; absent it is info, and a value spdlog does not know
// falls back to info too (never "off" by accident); "off" writes nothing.
TEST_F(FileLoggingTest, LogLevelPicksWhatReachesTheFile) {
  const struct {
    std::string level;
    std::vector<std::string> want;
  } cases[] = {
      {"debug", {"d", "i", "w"}}, {"info", {"i", "w"}}, {"warn", {"w"}}, {"", {"i", "w"}},
      {"loud", {"i", "w"}},       {"off", {}},          {"error", {}},
  };
  for (const auto& c : cases) {
    const std::string path = Path("level-" + (c.level.empty() ? "unset" : c.level) + ".log");
    InitLogging("portmap");
    ConfigureFileLogging("portmap", path, c.level);
    LogDebug("d");
    LogInfo("i");
    LogWarn("w");
    std::vector<std::string> got;
    for (const auto& line : Lines(path)) got.push_back(line.substr(line.rfind(' ') + 1));
    EXPECT_EQ(got, c.want) << "logLevel \"" << c.level << "\"";
  }
}

// No logFile: nothing but stderr, and no file anywhere.
TEST_F(FileLoggingTest, NoLogFileWritesNoFile) {
  ConfigureFileLogging("portmap", "", "debug");
  LogWarn("only stderr");
  EXPECT_TRUE(fs::is_empty(dir_));
}

// The file grows to 10 MiB, then becomes cni.1.log (cni.1 becomes cni.2 ...); three old files
// are kept, the oldest dropped: at most 40 MiB on the node's disk for one logFile.
TEST_F(FileLoggingTest, RotatesAtTenMiBKeepingThreeOldFiles) {
  ConfigureFileLogging("portmap", Path("cni.log"), "info");
  const std::string payload(64 * 1024, 'x');
  const int records = 45 * 16;  // 45 MiB of payload: four rotations, one file dropped
  for (int i = 0; i < records; ++i) LogInfo("{} {}", i, payload);
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir_)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"cni.1.log", "cni.2.log", "cni.3.log", "cni.log"}));
  constexpr uintmax_t kMax = 10 * 1024 * 1024;
  for (const std::string name : {"cni.1.log", "cni.2.log", "cni.3.log"}) {
    const uintmax_t size = fs::file_size(dir_ / name);
    EXPECT_LE(size, kMax) << name;
    EXPECT_GT(size, kMax - 2 * payload.size()) << name << " rotated early";
  }
  // The newest record is in cni.log; cni.3.log holds the oldest kept, the first ones are gone.
  const auto current = Lines(Path("cni.log"));
  ASSERT_FALSE(current.empty());
  EXPECT_NE(current.back().find(" info: " + std::to_string(records - 1) + " x"), std::string::npos);
  const auto oldest = Lines(Path("cni.3.log"));
  ASSERT_FALSE(oldest.empty());
  EXPECT_EQ(oldest.front().find(" info: 0 x"), std::string::npos) << "the first file was kept";
}

// A log file that cannot be opened (its folder cannot be made or written, even as root) is
// named on stderr; logging goes on to stderr and nothing throws: the plugin still answers.
TEST_F(FileLoggingTest, UnwritableLogDirectoryIsReportedAndIgnored) {
  std::ofstream(Path("a-file")) << "not a folder\n";
  for (const std::string& path :
       std::vector<std::string>{"/proc/self/nodegate-logs/cni.log", Path("a-file") + "/cni.log"}) {
    InitLogging("portmap");
    ::testing::internal::CaptureStderr();
    EXPECT_NO_THROW(ConfigureFileLogging("portmap", path, "debug")) << path;
    LogWarn("still logging");
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("portmap: cannot open log file " + path), std::string::npos) << err;
    EXPECT_NE(err.find("warning: still logging"), std::string::npos) << err;
    std::error_code ec;
    EXPECT_FALSE(fs::exists(path, ec)) << path;
  }
}

// A sibling run in-process (sibling.h) logs under its own name, its log file added to its own
// logger; the outer plugin's logger, with its one file sink, is back after it.
TEST_F(FileLoggingTest, ScopedPluginLoggingRestoresTheOuterLogger) {
  ConfigureFileLogging("portmap", Path("outer.log"), "info");  // the fixture's logger
  LogInfo("before");
  {
    ScopedPluginLogging sibling("host-local");
    ConfigureFileLogging("host-local", Path("inner.log"), "info");
    LogInfo("inside");
  }
  LogInfo("after");
  const auto outer = Lines(Path("outer.log"));
  const auto inner = Lines(Path("inner.log"));
  ASSERT_EQ(outer.size(), 2u);
  EXPECT_NE(outer[0].find(" portmap["), std::string::npos) << outer[0];
  EXPECT_NE(outer[1].find(" portmap["), std::string::npos) << outer[1];
  EXPECT_EQ(outer[1].substr(outer[1].rfind(' ') + 1), "after");
  ASSERT_EQ(inner.size(), 1u);
  EXPECT_NE(inner[0].find(" host-local["), std::string::npos) << inner[0];
  EXPECT_EQ(inner[0].substr(inner[0].rfind(' ') + 1), "inside");
}

}  // namespace
}  // namespace nodegate::cni
