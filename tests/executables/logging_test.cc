// The plugins' operator log ("logFile", "logLevel"; lib/cni/logging.h) as a runtime meets it:
// the built executables exec'd with the CNI environment. What each call writes there at each
// level, stdout left to the result, and a log file that cannot be opened: the call answers
// exactly as it does without one. (lib/cni/logging_test.cc has the record format, the
// levels' names and the rotation.) No root: host-local touches no kernel object, and portmap
// and bandwidth are given configs they refuse before any system call.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/support/plugin_runner.h"

namespace nodegate::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Where no process can make the log's folder, as root too (procfs has no mkdir).
constexpr char kUnwritableLog[] = "/proc/self/nodegate-logs/cni.log";

class PluginLoggingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "ng-plugin-log.XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }

  // host-local's config on the network "lognet", its store in this test's folder; `log` adds
  // the top-level keys logFile and logLevel (each only when not empty).
  std::string HostLocalConf(const std::string& log_file, const std::string& log_level,
                            const std::string& store = "store") const {
    json conf = {{"cniVersion", "1.0.0"},
                 {"name", "lognet"},
                 {"type", "host-local"},
                 {"ipam",
                  {{"type", "host-local"},
                   {"dataDir", (dir_ / store).string()},
                   {"ranges", {{{{"subnet", "10.99.0.0/29"}}}}}}}};
    if (!log_file.empty()) conf["logFile"] = log_file;
    if (!log_level.empty()) conf["logLevel"] = log_level;
    return conf.dump();
  }

  PluginOutput Call(const std::string& plugin, const std::string& command, const std::string& id,
                    const std::string& conf) const {
    return RunPlugin({.binary = BinPath(plugin),
                      .command = command,
                      .container_id = id,
                      .netns = "/var/run/netns/ng-no-such-netns",
                      .ifname = "eth0",
                      .stdin_data = conf});
  }

  std::string Log() const {
    std::ifstream in(dir_ / "logs" / "cni.log");
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }

  fs::path dir_;
};

// logLevel debug: the call itself (the dispatcher's line) goes to the file, which the plugin
// makes with its folder; stdout holds the result alone and stderr stays quiet.
TEST_F(PluginLoggingTest, DebugLevelLogsEachCallAndStdoutKeepsTheResult) {
  const std::string log = (dir_ / "logs" / "cni.log").string();
  const auto add = Call("host-local", "ADD", "ctr1", HostLocalConf(log, "debug"));
  ASSERT_EQ(add.exit_code, 0) << add.out << add.err;
  EXPECT_EQ(json::parse(add.out)["ips"][0]["address"], "10.99.0.2/29") << add.out;
  EXPECT_EQ(add.err, "");
  const std::string text = Log();
  EXPECT_NE(text.find("host-local["), std::string::npos) << text;
  EXPECT_NE(text.find("] debug: host-local ADD container=ctr1 ifname=eth0"), std::string::npos)
      << text;
}

// The default level is info: a repeated ADD's info line is written, the call's debug line is
// not; at warn neither is.
TEST_F(PluginLoggingTest, InfoByDefaultWarnWritesLess) {
  const std::string log = (dir_ / "logs" / "cni.log").string();
  ASSERT_EQ(Call("host-local", "ADD", "ctr1", HostLocalConf("", "")).exit_code, 0);
  const auto again = Call("host-local", "ADD", "ctr1", HostLocalConf(log, ""));
  ASSERT_EQ(again.exit_code, 0) << again.err;
  std::string text = Log();
  EXPECT_NE(text.find("] info: host-local: ctr1 already holds 10.99.0.2;"), std::string::npos)
      << text;
  EXPECT_EQ(text.find("debug:"), std::string::npos) << text;
  const auto at_warn = Call("host-local", "ADD", "ctr1", HostLocalConf(log, "warn"));
  ASSERT_EQ(at_warn.exit_code, 0) << at_warn.err;
  EXPECT_EQ(Log(), text) << "warn level wrote an info line";
}

// A log file that cannot be opened: named on stderr, and the call answers as it does without
// a log file, a result (host-local) or the same CNI error (portmap and bandwidth refusing their
// configs).
TEST_F(PluginLoggingTest, UnwritableLogDirectoryStillAnswers) {
  const auto logged = Call("host-local", "ADD", "ctr1", HostLocalConf(kUnwritableLog, "debug"));
  const auto plain = Call("host-local", "ADD", "ctr1", HostLocalConf("", "", "store2"));
  ASSERT_EQ(logged.exit_code, 0) << logged.out << logged.err;
  EXPECT_EQ(json::parse(logged.out), json::parse(plain.out));
  EXPECT_NE(logged.err.find(std::string("cannot open log file ") + kUnwritableLog),
            std::string::npos)
      << logged.err;

  const json refused[] = {
      // portmap: a host port out of range.
      {{"cniVersion", "1.0.0"},
       {"name", "lognet"},
       {"type", "portmap"},
       {"runtimeConfig",
        {{"portMappings", {{{"hostPort", 99999}, {"containerPort", 80}, {"protocol", "tcp"}}}}}}},
      // bandwidth: a rate without a burst.
      {{"cniVersion", "1.0.0"},
       {"name", "lognet"},
       {"type", "bandwidth"},
       {"ingressRate", 1000000}},
  };
  for (json conf : refused) {
    const std::string plugin = conf["type"];
    const auto without = Call(plugin, "ADD", "ctr1", conf.dump());
    conf["logFile"] = kUnwritableLog;
    conf["logLevel"] = "debug";
    const auto with = Call(plugin, "ADD", "ctr1", conf.dump());
    EXPECT_NE(without.exit_code, 0) << plugin << without.out;
    EXPECT_EQ(json::parse(without.out)["code"], 7) << plugin << without.out;
    EXPECT_EQ(with.exit_code, without.exit_code) << plugin;
    EXPECT_EQ(with.out, without.out) << plugin;
    EXPECT_NE(with.err.find("cannot open log file"), std::string::npos) << plugin << with.err;
  }
}

}  // namespace
}  // namespace nodegate::testing
