// Dispatcher tests: every verb times every supported version, env validation, decode and
// version errors, and the exact bytes printed on stdout.
#include "lib/cni/skel.h"

#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include "lib/cni/version.h"

namespace nodegate::cni {
namespace {

struct Harness {
  std::map<std::string, std::string> env;
  std::istringstream in;
  std::ostringstream out;
  std::ostringstream err;
  std::vector<Command> calls;
  Plugin plugin;

  Harness() {
    plugin.name = "fake";
    plugin.about = "CNI fake plugin (test)";
    plugin.supported_versions = AllVersions();
    plugin.add = [this](const CmdArgs& a) -> Result<CniResult> {
      calls.push_back(a.command);
      CniResult r;
      r.interfaces.push_back({.name = "eth0", .mac = "02:00:00:00:00:01", .sandbox = a.netns});
      r.ips.push_back({.interface = 0,
                       .address = *net::IpPrefix::Parse("10.88.0.2/16"),
                       .gateway = net::IpAddress::Parse("10.88.0.1")});
      r.ips.push_back({.interface = 0,
                       .address = *net::IpPrefix::Parse("2001:db8::2/64"),
                       .gateway = std::nullopt});
      r.routes.push_back({.dst = *net::IpPrefix::Parse("0.0.0.0/0")});
      return r;
    };
    auto record = [this](const CmdArgs& a) -> Status {
      calls.push_back(a.command);
      return OkStatus();
    };
    plugin.del = record;
    plugin.check = record;
    plugin.gc = record;
    plugin.status = record;
  }

  void SetStandardEnv(const std::string& command) {
    env = {{"CNI_COMMAND", command},
           {"CNI_CONTAINERID", "ctr1"},
           {"CNI_NETNS", "/run/netns/x"},
           {"CNI_IFNAME", "eth0"},
           {"CNI_PATH", "/opt/cni/bin"}};
  }

  int Run(const std::string& stdin_text) {
    in.str(stdin_text);
    ProcessIo io;
    io.getenv = [this](const std::string& k) -> std::optional<std::string> {
      auto it = env.find(k);
      if (it == env.end()) {
        return std::nullopt;
      }
      return it->second;
    };
    io.read_stdin = [this]() -> std::optional<std::string> { return in.str(); };
    io.write_stdout = [this](std::string_view text) { out << text; };
    io.write_stderr = [this](std::string_view text) { err << text; };
    return PluginMain(plugin, io);
  }

  Json OutJson() const { return Json::parse(out.str()); }
};

std::string Conf(const std::string& version) {
  return R"({"cniVersion":")" + version + R"(","name":"testnet","type":"fake"})";
}

using VerbVersion = std::tuple<std::string, std::string>;

class VerbByVersion : public ::testing::TestWithParam<VerbVersion> {};

TEST_P(VerbByVersion, GatesAndDispatches) {
  const auto& [verb, version] = GetParam();
  Harness h;
  h.SetStandardEnv(verb);
  const int rc = h.Run(Conf(version));

  const bool check_refused = verb == "CHECK" && !VersionAtLeast(version, "0.4.0");
  const bool gc_status_refused =
      (verb == "GC" || verb == "STATUS") && !VersionAtLeast(version, "1.1.0");
  if (check_refused || gc_status_refused) {
    EXPECT_EQ(rc, 1);
    const Json err = h.OutJson();
    EXPECT_EQ(err["code"], 1);
    EXPECT_EQ(err["msg"], "config version does not allow " + verb);
    EXPECT_TRUE(h.calls.empty());
    return;
  }
  ASSERT_EQ(rc, 0) << h.out.str();
  ASSERT_EQ(h.calls.size(), 1u);
  EXPECT_EQ(CommandName(h.calls[0]), verb);
  if (verb != "ADD") {
    EXPECT_EQ(h.out.str(), "");  // DEL/CHECK/GC/STATUS print nothing on success
    return;
  }
  const Json result = h.OutJson();
  EXPECT_EQ(result["cniVersion"], version);
  const auto family = *FamilyOf(version);
  if (family == ResultFamily::k020) {
    EXPECT_EQ(result["ip4"]["ip"], "10.88.0.2/16");
    EXPECT_EQ(result["ip4"]["gateway"], "10.88.0.1");
    EXPECT_EQ(result["ip6"]["ip"], "2001:db8::2/64");
    EXPECT_FALSE(result.contains("interfaces"));
  } else {
    ASSERT_EQ(result["ips"].size(), 2u);
    EXPECT_EQ(result["ips"][0]["address"], "10.88.0.2/16");
    EXPECT_EQ(result["interfaces"][0]["sandbox"], "/run/netns/x");
    EXPECT_EQ(result["ips"][0].contains("version"), family == ResultFamily::k040);
    if (family == ResultFamily::k040) {
      EXPECT_EQ(result["ips"][1]["version"], "6");
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllVerbsAllVersions, VerbByVersion,
                         ::testing::Combine(::testing::Values("ADD", "DEL", "CHECK", "GC",
                                                              "STATUS"),
                                            ::testing::ValuesIn(AllVersions())),
                         [](const auto& info) {
                           std::string name =
                               std::get<0>(info.param) + "_" + std::get<1>(info.param);
                           for (char& c : name) {
                             if (c == '.') c = '_';
                           }
                           return name;
                         });

TEST(Skel, NoCommandPrintsAboutOnStderr) {
  Harness h;
  EXPECT_EQ(h.Run(""), 0);
  EXPECT_EQ(h.out.str(), "");
  EXPECT_EQ(h.err.str(),
            "CNI fake plugin (test)\n"
            "CNI protocol versions supported: 0.1.0, 0.2.0, 0.3.0, 0.3.1, 0.4.0, 1.0.0, 1.1.0\n");
}

TEST(Skel, VersionPrintsAllSupportedVersions) {
  Harness h;
  h.env = {{"CNI_COMMAND", "VERSION"}};
  EXPECT_EQ(h.Run(R"({"cniVersion":"1.1.0"})"), 0);
  EXPECT_EQ(h.out.str(),
            "{\"cniVersion\":\"1.1.0\",\"supportedVersions\":[\"0.1.0\",\"0.2.0\",\"0.3.0\","
            "\"0.3.1\",\"0.4.0\",\"1.0.0\",\"1.1.0\"]}\n");
}

TEST(Skel, MalformedStdinIsDecodeError) {
  Harness h;
  h.SetStandardEnv("ADD");
  EXPECT_EQ(h.Run("{not json"), 1);
  EXPECT_EQ(h.OutJson()["code"], 6);
  EXPECT_TRUE(h.calls.empty());
}

TEST(Skel, MissingContainerIdOnAddIsCode4WithExactMessage) {
  Harness h;
  h.SetStandardEnv("ADD");
  h.env.erase("CNI_CONTAINERID");
  h.env.erase("CNI_IFNAME");
  EXPECT_EQ(h.Run(Conf("1.0.0")), 1);
  // The exact bytes: Go MarshalIndent layout, no trailing newline.
  EXPECT_EQ(h.out.str(),
            "{\n    \"code\": 4,\n    \"msg\": \"required env variables "
            "[CNI_CONTAINERID,CNI_IFNAME] missing\"\n}");
}

TEST(Skel, NetnsOptionalForDelRequiredForCheck) {
  Harness del;
  del.SetStandardEnv("DEL");
  del.env.erase("CNI_NETNS");
  EXPECT_EQ(del.Run(Conf("1.0.0")), 0);
  Harness check;
  check.SetStandardEnv("CHECK");
  check.env.erase("CNI_NETNS");
  EXPECT_EQ(check.Run(Conf("1.0.0")), 1);
  EXPECT_EQ(check.OutJson()["msg"], "required env variables [CNI_NETNS] missing");
}

TEST(Skel, GcNeedsPathButNoContainer) {
  Harness h;
  h.env = {{"CNI_COMMAND", "GC"}};
  EXPECT_EQ(h.Run(Conf("1.1.0")), 1);
  EXPECT_EQ(h.OutJson()["code"], 4);
  Harness ok;
  ok.env = {{"CNI_COMMAND", "GC"}, {"CNI_PATH", "/opt/cni/bin"}};
  EXPECT_EQ(ok.Run(Conf("1.1.0")), 0);
}

TEST(Skel, UnknownCommand) {
  Harness h;
  h.SetStandardEnv("FROB");
  EXPECT_EQ(h.Run(Conf("1.0.0")), 1);
  EXPECT_EQ(h.OutJson()["code"], 4);
  EXPECT_EQ(h.OutJson()["msg"], "unknown CNI_COMMAND: FROB");
}

TEST(Skel, UnsupportedVersionNamesSupportedList) {
  Harness h;
  h.SetStandardEnv("ADD");
  h.plugin.supported_versions = {"0.3.0", "1.0.0"};
  EXPECT_EQ(h.Run(Conf("0.4.0")), 1);
  const Json err = h.OutJson();
  EXPECT_EQ(err["code"], 1);
  EXPECT_EQ(err["msg"], "incompatible CNI versions");
  EXPECT_EQ(err["details"], R"(config is "0.4.0", plugin supports ["0.3.0" "1.0.0"])");
}

TEST(Skel, GarbageVersionIsDecodeError) {
  Harness h;
  h.SetStandardEnv("ADD");
  EXPECT_EQ(h.Run(Conf("one.two")), 1);
  EXPECT_EQ(h.OutJson()["code"], 6);
}

TEST(Skel, MissingVersionDefaultsTo010) {
  Harness h;
  h.SetStandardEnv("ADD");
  EXPECT_EQ(h.Run(R"({"name":"n","type":"fake"})"), 0);
  EXPECT_EQ(h.OutJson()["cniVersion"], "0.1.0");
}

struct BadInput {
  std::string case_name;
  std::string env_key;
  std::string env_value;
  std::string conf;
  int want_code;
  std::string want_msg;
};

class BadInputTest : public ::testing::TestWithParam<BadInput> {};

TEST_P(BadInputTest, RejectsWithSpecCode) {
  const BadInput& c = GetParam();
  Harness h;
  h.SetStandardEnv("ADD");
  if (!c.env_key.empty()) {
    h.env[c.env_key] = c.env_value;
  }
  EXPECT_EQ(h.Run(c.conf.empty() ? Conf("1.0.0") : c.conf), 1);
  EXPECT_EQ(h.OutJson()["code"], c.want_code) << h.out.str();
  EXPECT_EQ(h.OutJson()["msg"], c.want_msg);
  EXPECT_TRUE(h.calls.empty());
}

INSTANTIATE_TEST_SUITE_P(
    Validation, BadInputTest,
    ::testing::Values(
        BadInput{"BadContainerId", "CNI_CONTAINERID", "-bad", "", 4,
                 "invalid characters in containerID"},
        BadInput{"LongIfname", "CNI_IFNAME", "abcdefghijklmnop", "", 4,
                 "interface name is too long"},
        BadInput{"DotIfname", "CNI_IFNAME", "..", "", 4, "interface name is . or .."},
        BadInput{"SlashIfname", "CNI_IFNAME", "a/b", "", 4,
                 "interface name contains / or : or whitespace characters"},
        BadInput{"BadArgs", "CNI_ARGS", "A=1;B", "", 4, "ARGS: invalid pair \"B\""},
        BadInput{"TrailingSemicolonArgs", "CNI_ARGS", "A=1;", "", 4, "ARGS: invalid pair \"\""},
        BadInput{"EmptyName", "", "", R"({"cniVersion":"1.0.0","name":"","type":"x"})", 7,
                 "missing network name"},
        BadInput{"BadName", "", "", R"({"cniVersion":"1.0.0","name":"a b","type":"x"})", 7,
                 "invalid characters found in network name"},
        BadInput{"ArrayStdin", "", "", "[]", 6,
                 "error unmarshall network config: expected a JSON object"},
        BadInput{"PrevResultWrongFamily", "", "",
                 R"({"cniVersion":"1.0.0","name":"n","type":"x",)"
                 R"("prevResult":{"cniVersion":"0.4.0","ips":[]}})",
                 6,
                 "could not parse prevResult: prevResult version \"0.4.0\" does not match the "
                 "config version \"1.0.0\""}),
    [](const auto& info) { return info.param.case_name; });

TEST(Skel, ExceptionInHandlerBecomesInternalErrorNotHalfResult) {
  Harness h;
  h.SetStandardEnv("ADD");
  h.plugin.add = [](const CmdArgs&) -> Result<CniResult> { throw std::runtime_error("boom"); };
  EXPECT_EQ(h.Run(Conf("1.0.0")), 1);
  EXPECT_EQ(h.OutJson()["code"], 999);
  EXPECT_EQ(h.OutJson()["msg"], "internal error: boom");
}

TEST(Skel, PluginErrorKeepsCodeAndDetails) {
  Harness h;
  h.SetStandardEnv("DEL");
  h.plugin.del = [](const CmdArgs&) -> Status {
    return Error(kErrTryAgainLater, "busy <now>", "d&d");
  };
  EXPECT_EQ(h.Run(Conf("1.0.0")), 1);
  // HTML-sensitive characters are escaped as Go's encoder does.
  EXPECT_EQ(h.out.str(),
            "{\n    \"code\": 11,\n    \"msg\": \"busy \\u003cnow\\u003e\",\n    \"details\": "
            "\"d\\u0026d\"\n}");
}

TEST(Skel, MissingHandlerIsNotImplementedNeverSuccess) {
  Harness h;
  h.SetStandardEnv("ADD");
  h.plugin.add = nullptr;
  EXPECT_EQ(h.Run(Conf("1.0.0")), 1);
  EXPECT_EQ(h.OutJson()["code"], kErrNotImplemented);
}

TEST(Skel, Adding020ResultWithoutAddressesFails) {
  Harness h;
  h.SetStandardEnv("ADD");
  h.plugin.add = [](const CmdArgs&) -> Result<CniResult> { return CniResult{}; };
  EXPECT_EQ(h.Run(Conf("0.2.0")), 1);
  EXPECT_EQ(h.OutJson()["msg"], "cannot convert: no valid IP addresses");
}

TEST(Skel, PrevResultIsParsedInConfigVersion) {
  Harness h;
  h.SetStandardEnv("ADD");
  std::optional<CniResult> seen;
  h.plugin.add = [&](const CmdArgs& a) -> Result<CniResult> {
    seen = a.conf.prev_result;
    return *a.conf.prev_result;
  };
  const std::string conf =
      R"({"cniVersion":"0.3.1","name":"n","type":"x","prevResult":{"cniVersion":"0.3.0",)"
      R"("interfaces":[{"name":"eth0"}],"ips":[{"version":"4","interface":0,)"
      R"("address":"10.1.2.3/24","gateway":"10.1.2.1"}]}})";
  ASSERT_EQ(h.Run(conf), 0) << h.out.str();
  ASSERT_TRUE(seen.has_value());
  EXPECT_EQ(seen->ips[0].address.ToString(), "10.1.2.3/24");
  EXPECT_EQ(h.OutJson()["cniVersion"], "0.3.1");
  EXPECT_EQ(h.OutJson()["ips"][0]["version"], "4");
}

}  // namespace
}  // namespace nodegate::cni
