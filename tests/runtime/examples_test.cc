// conf/ as golden input of `nodegate conf validate`: the examples are clean with our plugins
// and Debian's bridge/loopback on the plugin path; each file of conf/invalid yields exactly the
// findings conf/README.md documents, and the exit status says so.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <set>
#include <utility>

#include "lib/cni/types.h"
#include "tests/support/netns_fixture.h"
#include "tests/support/plugin_runner.h"

namespace nodegate::testing {
namespace {

using Json = cni::Json;

class ExamplesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ng-examples-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    plugins_ = tmpl;
    for (const char* p : {"bridge", "loopback"}) {
      std::filesystem::create_symlink(ReferencePath(p), plugins_ + "/" + p);
    }
    for (const char* p : {"host-local", "portmap", "bandwidth"}) {
      std::filesystem::create_symlink(BinPath(p), plugins_ + "/" + p);
    }
    const char* src = std::getenv("NODEGATE_SOURCE_DIR");
    conf_ = std::string(src ? src : ".") + "/conf";
  }
  void TearDown() override { std::filesystem::remove_all(plugins_); }

  CommandResult Validate(const std::string& what, const std::string& extra = "") {
    return RunCommand(BinPath("nodegate") + " conf validate " + what + " --cni-path " + plugins_ +
                      " " + extra + " 2>/dev/null");
  }

  std::string plugins_;
  std::string conf_;
};

TEST_F(ExamplesTest, ExamplesAreClean) {
  auto r = Validate(conf_ + "/examples");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, ::testing::HasSubstr("0 error(s), 0 warning(s) in 3 file(s)"));
  auto j = Validate(conf_ + "/examples", "-o json");
  const Json report = Json::parse(j.output);
  EXPECT_EQ(report["valid"], true);
  EXPECT_EQ(report["networks"].size(), 3u);
}

TEST_F(ExamplesTest, InvalidFolderFindingsAreTheDocumentedOnes) {
  auto r = Validate(conf_ + "/invalid", "-o json");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  const Json report = Json::parse(r.output);
  std::set<std::pair<std::string, std::string>> got;  // (file name, severity:check)
  for (const auto& f : report["findings"]) {
    got.emplace(std::filesystem::path(f["file"].get<std::string>()).filename(),
                f["severity"].get<std::string>() + ":" + f["check"].get<std::string>());
  }
  const std::set<std::pair<std::string, std::string>> want = {
      {"10-portmap-first.conflist", "error:chain"},
      {"10-portmap-first.conflist", "warning:capabilities"},
      {"20-nodegate.conflist", "error:plugin-config"},
      {"30-nodegate-again.conflist", "error:duplicate"},
      {"40-future.conflist", "error:plugin-version"},
      {"40-future.conflist", "error:plugin-path"},
      {"50-broken.conflist", "error:json"},
  };
  EXPECT_EQ(got, want) << r.output;
  // The duplicate says which file wins; our portmap's own validation names the key.
  EXPECT_THAT(r.output, ::testing::HasSubstr("20-nodegate.conflist, which wins"));
  EXPECT_THAT(r.output, ::testing::HasSubstr("plugin portmap: "));
}

TEST_F(ExamplesTest, UnusableInputExits2) {
  EXPECT_EQ(Validate(conf_ + "/no-such-folder").exit_code, 2);
  EXPECT_EQ(Validate("--output xml").exit_code, 2);
}

}  // namespace
}  // namespace nodegate::testing
