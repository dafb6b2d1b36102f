// conf validate on folders built per test, with a scripted executor for the plugin path and
// VERSION answers, and a stand-in for one of our plugins' validators.
#include "runtime/validate/validate.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "runtime/testing/fake_executor.h"

namespace nodegate::runtime {
namespace {

using testing::FakeExecutor;
using ::testing::HasSubstr;

class ValidateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ng-validate-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    options_.cni_path = {"/fake"};
    options_.exec = &exec_;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ + "/" + name) << text;
  }
  Report Run() { return ValidatePaths({dir_}, options_); }
  // Findings of one check, as "severity:message" for readable failures.
  std::vector<const Finding*> Of(const Report& r, const std::string& check) {
    std::vector<const Finding*> out;
    for (const auto& f : r.findings) {
      if (f.check == check) out.push_back(&f);
    }
    return out;
  }
  std::string Dump(const Report& r) { return FormatReportText(r); }

  std::string dir_;
  FakeExecutor exec_;
  ValidateOptions options_;
};

constexpr char kGood[] = R"({"cniVersion":"1.0.0","name":"std","plugins":[
  {"type":"bridge","ipam":{"type":"host-local","subnet":"203.0.113.0/24"}},
  {"type":"portmap","capabilities":{"portMappings":true}},
  {"type":"bandwidth","capabilities":{"bandwidth":true}}]})";

TEST_F(ValidateTest, CleanFolderHasNoFindings) {
  Write("10-std.conflist", kGood);
  const Report r = Run();
  EXPECT_TRUE(r.findings.empty()) << Dump(r);
  EXPECT_FALSE(r.HasErrors());
  ASSERT_EQ(r.networks.size(), 1u);
  EXPECT_EQ(r.networks[0].plugin_types,
            (std::vector<std::string>{"bridge", "portmap", "bandwidth"}));
  // Each binary's VERSION was asked once.
  EXPECT_EQ(exec_.calls.size(), 4u);
}

TEST_F(ValidateTest, BrokenJsonNamesLineAndColumn) {
  Write("10-bad.conflist", "{\n  \"name\": \"x\",\n  \"plugins\": [,]\n}");
  const Report r = Run();
  ASSERT_EQ(Of(r, "json").size(), 1u) << Dump(r);
  EXPECT_THAT(Of(r, "json")[0]->message, HasSubstr("line 3"));
  EXPECT_TRUE(r.HasErrors());
}

// Issue 13 row 4: hostile files in the folder each become a finding; the run neither crashes
// (100,000 nested '[', 1e400), nor hangs (a FIFO), nor reads forever (a link to /dev/zero), and
// the JSON report stays valid UTF-8 whatever bytes the names hold.
TEST_F(ValidateTest, HostileFilesAreFindingsNotCrashes) {
  Write("10-deep.conflist", std::string(100000, '[') + std::string(100000, ']'));
  Write("20-huge.conflist", R"({"cniVersion":"1.0.0","name":"h","mtu":1e400,"plugins":[]})");
  Write("30-\xff.conflist",
        "{\"cniVersion\":\"1.0.0\",\"name\":\"n\xff\",\"plugins\":[{\"type\":\"bridge\"}]}");
  ASSERT_EQ(::mkfifo((dir_ + "/40-fifo.conflist").c_str(), 0600), 0);
  std::filesystem::create_symlink("/dev/zero", dir_ + "/50-zero.conflist");
  const Report r = Run();
  std::map<std::string, std::string> first_finding;  // file name -> "check: message"
  for (const auto& f : r.findings) {
    const std::string name = std::filesystem::path(f.file).filename();
    first_finding.emplace(name, f.check + ": " + f.message);
  }
  EXPECT_THAT(first_finding["10-deep.conflist"], HasSubstr("json: invalid JSON"));
  EXPECT_THAT(first_finding["20-huge.conflist"],
              HasSubstr("json: invalid JSON: number 1e400 is out of range"));
  EXPECT_THAT(first_finding["30-\xff.conflist"], HasSubstr("name: "));
  EXPECT_EQ(first_finding["40-fifo.conflist"],
            "read: " + dir_ + "/40-fifo.conflist: not a regular file (a FIFO)");
  EXPECT_EQ(first_finding["50-zero.conflist"],
            "read: " + dir_ + "/50-zero.conflist: not a regular file (a character device)");
  EXPECT_TRUE(r.HasErrors());
  std::string json;
  ASSERT_NO_THROW(json = FormatReportJson(r));
  const auto parsed = nlohmann::json::parse(json, nullptr, false);
  ASSERT_FALSE(parsed.is_discarded());
  EXPECT_THAT(json, HasSubstr("30-\xEF\xBF\xBD.conflist"));
}

TEST_F(ValidateTest, FormatNameAndVersionProblems) {
  Write("10-a.conflist", R"({"name":"a","plugins":[{"type":"bridge"}]})");
  Write("20-b.conflist",
        R"({"cniVersion":"0.5.0","name":"bad name","plugins":[{"type":"bridge"}]})");
  Write("30-c.conflist", R"({"cniVersion":"1.0.0","name":"c"})");
  Write("40-d.conf", R"({"cniVersion":"1.0.0","name":"d","type":"bridge"})");
  Write("50-e.conflist", R"({"cniVersion":"1.0.0","name":"e","plugins":[{"type":"../bin/x"}]})");
  const Report r = Run();
  const auto versions = Of(r, "version");
  ASSERT_EQ(versions.size(), 2u) << Dump(r);
  EXPECT_EQ(versions[0]->severity, Severity::kWarning);
  EXPECT_THAT(versions[0]->message, HasSubstr("treat it as 0.1.0"));
  EXPECT_EQ(versions[1]->severity, Severity::kError);
  EXPECT_THAT(versions[1]->message, HasSubstr("\"0.5.0\" is not a CNI spec version"));
  ASSERT_EQ(Of(r, "name").size(), 1u);
  EXPECT_THAT(Of(r, "name")[0]->message, HasSubstr("invalid characters"));
  const auto format = Of(r, "format");
  ASSERT_EQ(format.size(), 3u) << Dump(r);
  EXPECT_THAT(format[0]->message, HasSubstr("no 'plugins' key"));
  // Load order: every .conflist, then 40-d.conf (deprecated, still loads: a warning).
  EXPECT_THAT(format[1]->message, HasSubstr("cannot contain '/'"));
  EXPECT_EQ(format[2]->severity, Severity::kWarning);
  EXPECT_THAT(format[2]->message, HasSubstr("single-plugin"));
}

TEST_F(ValidateTest, MissingPluginsAndUnsupportedVersions) {
  exec_.installed = {"bridge", "portmap"};  // no bandwidth, no host-local
  exec_.versions["portmap"] = {"0.3.1", "0.4.0"};
  Write("10-std.conflist", kGood);
  const Report r = Run();
  const auto missing = Of(r, "plugin-path");
  ASSERT_EQ(missing.size(), 2u) << Dump(r);
  EXPECT_THAT(missing[0]->message, HasSubstr("IPAM plugin: failed to find plugin \"host-local\""));
  EXPECT_EQ(missing[1]->plugin_index, 2);
  const auto version = Of(r, "plugin-version");
  ASSERT_EQ(version.size(), 1u);
  EXPECT_THAT(version[0]->message,
              HasSubstr("does not support cniVersion \"1.0.0\" (it supports 0.3.1 0.4.0)"));
}

TEST_F(ValidateTest, DuplicatesSayWhichFileWins) {
  Write("10-a.conf", R"({"cniVersion":"1.0.0","name":"net","type":"bridge"})");
  Write("90-z.conflist", kGood);
  Write("20-same.conflist", kGood);
  Write("30-other.conflist",
        R"({"cniVersion":"1.0.0","name":"std","plugins":[{"type":"bridge"}]})");
  const Report r = Run();
  const auto dups = Of(r, "duplicate");
  ASSERT_EQ(dups.size(), 2u) << Dump(r);
  // Load order: 20-same, 30-other, 90-z (conflists by name), then 10-a.conf.
  EXPECT_EQ(dups[0]->severity, Severity::kError);
  EXPECT_THAT(dups[0]->file, HasSubstr("30-other.conflist"));
  EXPECT_THAT(dups[0]->message, HasSubstr("20-same.conflist, which wins"));
  EXPECT_EQ(dups[1]->severity, Severity::kWarning);
  EXPECT_THAT(dups[1]->file, HasSubstr("90-z.conflist"));
  int used = 0;
  for (const auto& n : r.networks) {
    used += n.name == "std" && n.shadowed_by.empty();
  }
  EXPECT_EQ(used, 1);
}

TEST_F(ValidateTest, CapabilitiesChainAndSubnets) {
  Write("10-a.conflist", R"({"cniVersion":"1.0.0","name":"a","plugins":[
      {"type":"portmap","capabilities":{"portMapping":true}},
      {"type":"bridge","ipam":{"type":"host-local","ranges":[[{"subnet":"203.0.113.0/25"}]]}}]})");
  Write("20-b.conflist", R"({"cniVersion":"1.0.0","name":"b","plugins":[
      {"type":"bridge","ipam":{"type":"host-local","subnet":"203.0.113.64/26"}}]})");
  const Report r = Run();
  ASSERT_EQ(Of(r, "capabilities").size(), 1u) << Dump(r);
  EXPECT_THAT(Of(r, "capabilities")[0]->message, HasSubstr("\"portMapping\" is not defined"));
  ASSERT_EQ(Of(r, "chain").size(), 1u);
  EXPECT_EQ(Of(r, "chain")[0]->severity, Severity::kError);
  ASSERT_EQ(Of(r, "subnet").size(), 1u);
  EXPECT_THAT(Of(r, "subnet")[0]->message, HasSubstr("203.0.113.0/25 of network \"a\""));
}

TEST_F(ValidateTest, RunsOurValidatorsOnTheRequestConfig) {
  std::vector<cni::NetConf> seen;
  options_.validators["portmap"] = [&](std::string_view text) -> Status {
    seen.push_back(*cni::ParseNetConf(text));
    return Error(kErrInvalidConfig, "MasqMarkBit must be between 0 and 31");
  };
  options_.validators["host-local"] = [&](std::string_view text) -> Status {
    seen.push_back(*cni::ParseNetConf(text));
    return OkStatus();
  };
  Write("10-std.conflist", kGood);
  const Report r = Run();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].type, "bridge");  // host-local gets the whole config of its main plugin
  EXPECT_EQ(seen[0].ipam["subnet"], "203.0.113.0/24");
  EXPECT_EQ(seen[1].name, "std");  // name and cniVersion injected as the runtime does
  EXPECT_EQ(seen[1].cni_version, "1.0.0");
  const auto findings = Of(r, "plugin-config");
  ASSERT_EQ(findings.size(), 1u) << Dump(r);
  EXPECT_EQ(findings[0]->message, "plugin portmap: MasqMarkBit must be between 0 and 31");
  EXPECT_EQ(findings[0]->plugin_index, 1);
}

TEST_F(ValidateTest, MissingPathIsUnusableAndJsonOutputIsForTools) {
  const Report r = ValidatePaths({dir_ + "/nope"}, options_);
  EXPECT_TRUE(r.unusable_input);
  auto j = cni::Json::parse(FormatReportJson(r));
  EXPECT_EQ(j["valid"], false);
  EXPECT_EQ(j["findings"][0]["check"], "read");
  Write("10-std.conflist", kGood);
  auto ok = cni::Json::parse(FormatReportJson(Run()));
  EXPECT_EQ(ok["valid"], true);
  EXPECT_EQ(ok["networks"][0]["name"], "std");
  EXPECT_EQ(ok["networks"][0]["used"], true);
}

TEST_F(ValidateTest, EmptyFolderWarns) {
  const Report r = Run();
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].severity, Severity::kWarning);
  EXPECT_FALSE(r.HasErrors());
}

}  // namespace
}  // namespace nodegate::runtime
