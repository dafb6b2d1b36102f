// Loading configuration lists as libcni does: parsing, cniVersions, upconversion of single
// configs, and which file wins for a name.
#include "runtime/conflist/conflist.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>

namespace nodegate::runtime {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(ParseConfListTest, ReadsListFields) {
  auto list = ParseConfList(R"({"cniVersion":"1.0.0","name":"std","disableCheck":true,
      "disableGC":"false","plugins":[{"type":"bridge"},
      {"type":"portmap","capabilities":{"portMappings":true,"ips":false}}]})");
  ASSERT_TRUE(list.ok()) << list.error().msg;
  EXPECT_EQ(list->name, "std");
  EXPECT_EQ(list->cni_version, "1.0.0");
  EXPECT_TRUE(list->disable_check);
  EXPECT_FALSE(list->disable_gc);
  ASSERT_EQ(list->plugins.size(), 2u);
  EXPECT_EQ(list->plugins[1].type, "portmap");
  EXPECT_EQ(list->plugins[1].capabilities.at("portMappings"), true);
  EXPECT_EQ(list->plugins[1].capabilities.at("ips"), false);
}

struct VersionCase {
  const char* name;
  const char* json;
  const char* want;
};

class CniVersionsTest : public ::testing::TestWithParam<VersionCase> {};

TEST_P(CniVersionsTest, PicksHighestNotAboveOurSpec) {
  auto list = ParseConfList(GetParam().json);
  ASSERT_TRUE(list.ok()) << list.error().msg;
  EXPECT_EQ(list->cni_version, GetParam().want);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, CniVersionsTest,
    ::testing::Values(
        VersionCase{"OnlyCniVersion",
                    R"({"cniVersion":"0.4.0","name":"n","plugins":[{"type":"a"}]})", "0.4.0"},
        VersionCase{
            "ListWins",
            R"({"cniVersion":"0.4.0","cniVersions":["1.0.0","0.3.1"],"name":"n","plugins":[{"type":"a"}]})",
            "1.0.0"},
        VersionCase{
            "FutureSkipped",
            R"({"cniVersions":["1.0.0","1.1.0","2.0.0"],"name":"n","plugins":[{"type":"a"}]})",
            "1.1.0"},
        VersionCase{
            "CniVersionHigher",
            R"({"cniVersion":"1.1.0","cniVersions":["0.4.0"],"name":"n","plugins":[{"type":"a"}]})",
            "1.1.0"},
        VersionCase{"Missing", R"({"name":"n","plugins":[{"type":"a"}]})", ""}),
    [](const auto& info) { return std::string(info.param.name); });

struct ErrorCase {
  const char* name;
  const char* json;
  const char* want;
};

class ConfListErrorTest : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(ConfListErrorTest, NamesTheProblem) {
  auto list = ParseConfList(GetParam().json);
  ASSERT_FALSE(list.ok());
  EXPECT_EQ(list.error().code, kErrInvalidConfig);
  EXPECT_THAT(list.error().msg, HasSubstr(GetParam().want));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ConfListErrorTest,
    ::testing::Values(
        ErrorCase{"NotJson", "{", "invalid JSON"},
        ErrorCase{"NotObject", "[]", "expected a JSON object"},
        ErrorCase{"NoName", R"({"plugins":[{"type":"a"}]})", "no name"},
        ErrorCase{"NameType", R"({"name":1,"plugins":[{"type":"a"}]})", "invalid name type"},
        ErrorCase{"NoPlugins", R"({"name":"n"})", "no 'plugins' key"},
        ErrorCase{"EmptyPlugins", R"({"name":"n","plugins":[]})", "no plugins in list"},
        ErrorCase{"PluginsType", R"({"name":"n","plugins":{}})", "invalid 'plugins' type"},
        ErrorCase{"MissingType", R"({"name":"n","plugins":[{"x":1}]})", "plugin 0: missing 'type'"},
        ErrorCase{"BadFlag", R"({"name":"n","disableCheck":"yes","plugins":[{"type":"a"}]})",
                  "invalid value \"yes\" for disableCheck"},
        ErrorCase{"BadCapability",
                  R"({"name":"n","plugins":[{"type":"a","capabilities":{"ips":"yes"}}]})",
                  "capability \"ips\" must be true or false"},
        ErrorCase{"BadCniVersions", R"({"name":"n","cniVersions":["x"],"plugins":[{"type":"a"}]})",
                  "invalid cniVersions entry x"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(ParseSingleConfTest, UpconvertsLikeLibcni) {
  auto list = ParseSingleConf(R"({"cniVersion":"0.4.0","name":"single","type":"bridge"})");
  ASSERT_TRUE(list.ok()) << list.error().msg;
  EXPECT_TRUE(list->upconverted);
  EXPECT_EQ(list->name, "single");
  ASSERT_EQ(list->plugins.size(), 1u);
  EXPECT_EQ(list->plugins[0].type, "bridge");
  // Go marshals the map with sorted keys, compact.
  EXPECT_EQ(
      list->bytes,
      R"({"cniVersion":"0.4.0","name":"single","plugins":[{"cniVersion":"0.4.0","name":"single","type":"bridge"}]})");
}

class ConfDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ng-confdir-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ + "/" + name) << text;
  }
  static std::string List(const std::string& name, const std::string& type) {
    return R"({"cniVersion":"1.0.0","name":")" + name + R"(","plugins":[{"type":")" + type +
           R"("}]})";
  }
  std::string dir_;
};

TEST_F(ConfDirTest, ConflistsFirstThenSingleConfigsEachSorted) {
  Write("90-b.conflist", List("net", "second"));
  Write("10-a.conf", R"({"cniVersion":"1.0.0","name":"net","type":"single"})");
  Write("20-c.conflist", List("net", "first"));
  Write("30-d.json", R"({"cniVersion":"1.0.0","name":"json","type":"j"})");
  Write("40-e.txt", "ignored");
  std::filesystem::create_directory(dir_ + "/50-f.conflist");  // folders are skipped
  auto files = ConfFilesInLoadOrder(dir_);
  ASSERT_TRUE(files.ok());
  EXPECT_THAT(*files, ElementsAre(dir_ + "/20-c.conflist", dir_ + "/90-b.conflist",
                                  dir_ + "/10-a.conf", dir_ + "/30-d.json"));
  auto net = LoadNetwork(dir_, "net");
  ASSERT_TRUE(net.ok()) << net.error().msg;
  EXPECT_EQ(net->plugins[0].type, "first");
  EXPECT_EQ(net->source, dir_ + "/20-c.conflist");
  auto json = LoadNetwork(dir_, "json");
  ASSERT_TRUE(json.ok());
  EXPECT_TRUE(json->upconverted);
}

TEST_F(ConfDirTest, NotFoundAndEmptyAndBrokenFiles) {
  auto empty = LoadNetwork(dir_, "x");
  ASSERT_FALSE(empty.ok());
  EXPECT_THAT(empty.error().msg, HasSubstr("no net configurations found"));
  Write("10-a.conflist", List("a", "bridge"));
  auto missing = LoadNetwork(dir_, "x");
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.error().msg, HasSubstr("no net configuration with name \"x\""));
  // As in libcni, a broken file before the match stops the search.
  Write("05-broken.conflist", "{ nope");
  auto broken = LoadNetwork(dir_, "a");
  ASSERT_FALSE(broken.ok());
  EXPECT_THAT(broken.error().msg, HasSubstr("05-broken.conflist"));
  auto none = ConfFiles(dir_ + "/does-not-exist", {".conflist"});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

// Issue 13 row 4: a FIFO, a link to /dev/zero or a broken link in the folder is reported by
// `nodegate cni` as the reason the search stopped: no hang, no endless read, no silent skip.
TEST_F(ConfDirTest, FilesThatAreNotRegularStopTheSearchNamingThem) {
  Write("50-a.conflist", List("a", "bridge"));
  struct Case {
    std::string name;
    std::function<void(const std::string&)> make;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"10-fifo.conflist", [](const std::string& p) { ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0); },
       ": not a regular file (a FIFO)"},
      {"10-zero.conflist",
       [](const std::string& p) { std::filesystem::create_symlink("/dev/zero", p); },
       ": not a regular file (a character device)"},
      {"10-dangling.conflist",
       [](const std::string& p) { std::filesystem::create_symlink("/nonexistent", p); }, ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path = dir_ + "/" + c.name;
    c.make(path);
    auto net = LoadNetwork(dir_, "a");
    ASSERT_FALSE(net.ok());
    EXPECT_EQ(net.error().msg, c.want.empty() ? "not found: " + path : path + c.want);
    std::filesystem::remove(path);
  }
  EXPECT_TRUE(LoadNetwork(dir_, "a").ok());
}

TEST_F(ConfDirTest, HostileJsonIsAnErrorNotACrash) {
  Write("10-deep.conflist", std::string(100000, '[') + std::string(100000, ']'));
  auto deep = LoadNetwork(dir_, "a");
  ASSERT_FALSE(deep.ok());
  EXPECT_THAT(deep.error().msg, HasSubstr("10-deep.conflist"));
  std::filesystem::remove(dir_ + "/10-deep.conflist");
  Write("10-huge.conflist", R"({"name":"a","cniVersion":"1.0.0","mtu":1e400,"plugins":[]})");
  auto huge = LoadNetwork(dir_, "a");
  ASSERT_FALSE(huge.ok());
  EXPECT_THAT(huge.error().msg, HasSubstr("10-huge.conflist"));
}

TEST(PluginDescriptionTest, LibcniWording) {
  PluginConfig p;
  p.type = "bridge";
  EXPECT_EQ(PluginDescription(p), "type=\"bridge\"");
  p.raw = {{"name", "br"}};
  EXPECT_EQ(PluginDescription(p), "type=\"bridge\" name=\"br\"");
}

}  // namespace
}  // namespace nodegate::runtime
