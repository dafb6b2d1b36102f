// `nodegate cni` driving real plugins inside throwaway namespaces: the example chain with
// Debian's reference plugins and with ours, rollback of a failed ADD, CHECK against the cached
// result, GC of attachments whose namespace is gone, and GC/STATUS forwarded to a plugin.
// The driver runs inside a node namespace (nsenter), so every plugin changes only that node.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>

#include "lib/cni/types.h"
#include "lib/sys/atomic_file.h"
#include "tests/support/background_process.h"
#include "tests/support/netns_fixture.h"
#include "tests/support/plugin_runner.h"

namespace nodegate::testing {
namespace {

using ::testing::HasSubstr;
using Json = cni::Json;

std::string SourceDir() {
  const char* s = std::getenv("NODEGATE_SOURCE_DIR");
  return s ? s : ".";
}

class DriverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ng-driver-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    tmp_ = tmpl;
    for (const char* d : {"/net.d", "/cache", "/ipam", "/plugins"}) {
      std::filesystem::create_directories(tmp_ + d);
    }
  }
  void TearDown() override { std::filesystem::remove_all(tmp_); }

  // The plugin folder: Debian's bridge/loopback always; host-local, portmap and bandwidth from
  // the reference or from our build.
  void UsePlugins(bool ours) {
    for (const char* p : {"bridge", "loopback"}) {
      std::filesystem::create_symlink(ReferencePath(p), tmp_ + "/plugins/" + p);
    }
    for (const char* p : {"host-local", "portmap", "bandwidth"}) {
      std::filesystem::create_symlink(ours ? BinPath(p) : ReferencePath(p), tmp_ + "/plugins/" + p);
    }
  }

  // Installs a conf/ example (or any list) with its IPAM store moved into the test folder.
  void InstallList(const std::string& file_name, Json list) {
    for (auto& plugin : list["plugins"]) {
      if (plugin.contains("ipam")) {
        plugin["ipam"]["dataDir"] = tmp_ + "/ipam";
      }
    }
    std::ofstream(tmp_ + "/net.d/" + file_name) << list.dump(2);
  }
  Json Example(const std::string& name) {
    auto text = sys::ReadFile(SourceDir() + "/conf/examples/" + name);
    EXPECT_TRUE(text.ok());
    return Json::parse(*text);
  }

  CommandResult Cni(const TestNetns& node, const std::string& args) {
    return RunCommand("nsenter --net=" + node.path() + " " + BinPath("nodegate") + " cni " + args +
                      " --conf-dir " + tmp_ + "/net.d --cni-path " + tmp_ +
                      "/plugins --cache-dir " + tmp_ + "/cache");
  }
  // busybox httpd on port 8080 of `ctr`, serving `page`; stopped when the result goes.
  std::unique_ptr<BackgroundProcess> Httpd(const TestNetns& ctr, const std::string& page) {
    std::filesystem::create_directories(tmp_ + "/www");
    std::ofstream(tmp_ + "/www/index.html") << page << "\n";
    return std::make_unique<BackgroundProcess>(
        ctr, std::vector<std::string>{"busybox", "httpd", "-f", "-p", "8080", "-h", tmp_ + "/www"});
  }
  std::vector<std::string> Files(const std::string& sub) {
    std::vector<std::string> out;
    if (std::filesystem::exists(tmp_ + sub)) {
      for (const auto& e : std::filesystem::recursive_directory_iterator(tmp_ + sub)) {
        if (e.is_regular_file()) out.push_back(e.path().filename());
      }
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  // IPAM reservation files (named after the address), ignoring bookkeeping files (lock,
  // last_reserved_ip.N, and whatever index an implementation keeps).
  std::vector<std::string> Reservations() {
    std::vector<std::string> out;
    for (const auto& f : Files("/ipam")) {
      if (f.find_first_of(".:") != std::string::npos &&
          f.find_first_not_of("0123456789abcdef.:") == std::string::npos) {
        out.push_back(f);
      }
    }
    return out;
  }

  std::string tmp_;
};

class StandardChainTest : public DriverTest, public ::testing::WithParamInterface<bool> {};

TEST_P(StandardChainTest, AddServeCheckDel) {
  NG_REQUIRE_ROOT();
  UsePlugins(/*ours=*/GetParam());
  InstallList("10-standard.conflist", Example("10-standard.conflist"));
  TestNetns node("ng-dnode");
  TestNetns ctr("ng-dctr");
  auto add =
      Cni(node, "add nodegate " + ctr.path() +
                    " --container-id ctr1 -p 18080:8080 --bandwidth ingress=20mbit,egress=20mbit");
  ASSERT_EQ(add.exit_code, 0) << add.output;
  EXPECT_THAT(add.output, HasSubstr("address 10.88.0."));
  // The container got the address the driver printed, and the IPAM store holds it.
  const std::string addr = ctr.MustRun("ip -4 -o addr show eth0 | awk '{print $4}' | cut -d/ -f1");
  ASSERT_THAT(addr, HasSubstr("10.88.0."));
  const std::string ip = addr.substr(0, addr.find('\n'));
  EXPECT_EQ(Reservations(), std::vector<std::string>{ip});
  // The cache is where libcni keeps it, with the capability arguments for DEL.
  auto cache = sys::ReadFile(tmp_ + "/cache/results/nodegate-ctr1-eth0");
  ASSERT_TRUE(cache.ok());
  const Json entry = Json::parse(*cache);
  EXPECT_EQ(entry["kind"], "cniCacheV1");
  EXPECT_EQ(entry["capabilityArgs"]["portMappings"][0]["hostPort"], 18080);
  // Traffic: an HTTP server in the container, reached directly and through the host port.
  {
    auto httpd = Httpd(ctr, "driver-ok");
    ASSERT_TRUE(WaitForListener(ctr, "TCP", 8080, httpd.get()));
    EXPECT_THAT(node.MustRun("timeout 5 busybox wget -qO- http://" + ip + ":8080/"),
                HasSubstr("driver-ok"));
    EXPECT_THAT(node.MustRun("timeout 5 busybox wget -qO- http://10.88.0.1:18080/"),
                HasSubstr("driver-ok"));
  }
  // The shaping plugin put a qdisc on the container's host-side interface.
  EXPECT_THAT(node.MustRun("tc qdisc show"), HasSubstr("tbf"));
  if (GetParam()) {  // Debian's portmap and bandwidth CHECK are broken (see CheckUses...)
    auto check = Cni(node, "check nodegate " + ctr.path() + " --container-id ctr1");
    EXPECT_EQ(check.exit_code, 0) << check.output;
  }

  auto del = Cni(node, "del nodegate " + ctr.path() + " --container-id ctr1");
  ASSERT_EQ(del.exit_code, 0) << del.output;
  EXPECT_TRUE(Reservations().empty());
  EXPECT_TRUE(Files("/cache").empty());
  EXPECT_EQ(CountListed(node, "iptables-legacy-save -t nat", "dport 18080"), 0);
  EXPECT_EQ(CountListed(node, "iptables-nft-save -t nat", "dport 18080"), 0);
  EXPECT_EQ(node.MustRun("ip -o link show type veth | wc -l"), "0\n");
  // DEL again (nothing cached, everything gone) still succeeds.
  auto again = Cni(node, "del nodegate " + ctr.path() + " --container-id ctr1");
  EXPECT_EQ(again.exit_code, 0) << again.output;
}

INSTANTIATE_TEST_SUITE_P(Plugins, StandardChainTest, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "Ours" : "Reference"; });

TEST_F(DriverTest, FailedAddRollsBackEveryPlugin) {
  NG_REQUIRE_ROOT();
  UsePlugins(/*ours=*/false);
  Json list = Example("10-standard.conflist");
  list["plugins"][1]["markMasqBit"] = 42;  // the reference portmap refuses it after bridge ran
  InstallList("10-standard.conflist", list);
  TestNetns node("ng-dnode");
  TestNetns ctr("ng-dctr");
  auto add = Cni(node, "add nodegate " + ctr.path() + " --container-id ctr1 -p 18080:80");
  EXPECT_EQ(add.exit_code, 1) << add.output;
  EXPECT_THAT(add.output, HasSubstr("plugin type=\"portmap\" failed (add)"));
  EXPECT_TRUE(Reservations().empty()) << "bridge's IPAM reservation was not released";
  EXPECT_TRUE(Files("/cache").empty());
  EXPECT_EQ(node.MustRun("ip -o link show type veth | wc -l"), "0\n");
  EXPECT_EQ(CountListed(ctr, "ip -o link show", "eth0"), 0);
}

TEST_F(DriverTest, CheckUsesTheCachedResult) {
  NG_REQUIRE_ROOT();
  UsePlugins(/*ours=*/false);
  Json list = Example("10-standard.conflist");
  // Debian's portmap 1.1.1 CHECK fails on any IPv6-capable node and its bandwidth CHECK
  // panics (reference bugs fixed upstream later): check the main plugin only.
  list["plugins"].erase(2);
  list["plugins"].erase(1);
  InstallList("10-standard.conflist", list);
  TestNetns node("ng-dnode");
  TestNetns ctr("ng-dctr");
  ASSERT_EQ(Cni(node, "add nodegate " + ctr.name()).exit_code, 0);  // bare name: /run/netns
  auto check = Cni(node, "check nodegate " + ctr.name());
  EXPECT_EQ(check.exit_code, 0) << check.output;
  EXPECT_THAT(check.output, HasSubstr("CHECK passed"));
  // Remove what bridge made: CHECK must now fail and say so.
  ctr.MustRun("ip addr flush dev eth0");
  auto broken = Cni(node, "check nodegate " + ctr.name() + " --json");
  EXPECT_EQ(broken.exit_code, 1) << broken.output;
  EXPECT_THAT(broken.output, HasSubstr("failed (check)"));
  EXPECT_EQ(Cni(node, "del nodegate " + ctr.name()).exit_code, 0);
  EXPECT_TRUE(Reservations().empty());
}

TEST_F(DriverTest, GcDeletesAttachmentsWhoseNamespaceIsGone) {
  NG_REQUIRE_ROOT();
  UsePlugins(/*ours=*/false);
  InstallList("10-standard.conflist", Example("10-standard.conflist"));
  TestNetns node("ng-dnode");
  TestNetns keep("ng-dkeep");
  auto gone = std::make_unique<TestNetns>("ng-dgone");
  ASSERT_EQ(Cni(node, "add nodegate " + keep.path() + " --container-id keep -p 18081:80").exit_code,
            0);
  ASSERT_EQ(
      Cni(node, "add nodegate " + gone->path() + " --container-id gone -p 18082:80").exit_code, 0);
  ASSERT_EQ(Reservations().size(), 2u);
  gone.reset();  // the namespace disappears without a DEL (a reboot, a crashed runtime)
  auto gc = Cni(node, "gc nodegate");
  ASSERT_EQ(gc.exit_code, 0) << gc.output;
  EXPECT_THAT(gc.output, HasSubstr("kept 1 attachment"));
  EXPECT_EQ(Files("/cache"), std::vector<std::string>{"nodegate-keep-eth0"});
  EXPECT_EQ(Reservations().size(), 1u);
  const std::string nat =
      node.MustRun("{ iptables-legacy-save -t nat; iptables-nft-save -t nat; } 2>/dev/null");
  EXPECT_THAT(nat, HasSubstr("18081"));
  EXPECT_THAT(nat, ::testing::Not(HasSubstr("18082")));
  EXPECT_EQ(Cni(node, "del nodegate " + keep.path() + " --container-id keep").exit_code, 0);
}

TEST_F(DriverTest, DualStackExampleWithOurPlugins) {
  NG_REQUIRE_ROOT();
  UsePlugins(/*ours=*/true);
  InstallList("20-dual-stack.conflist", Example("20-dual-stack.conflist"));
  TestNetns node("ng-dnode");
  TestNetns ctr("ng-dctr");
  auto add = Cni(node, "add nodegate-dual " + ctr.path() + " -p 18090:80 --json");
  ASSERT_EQ(add.exit_code, 0) << add.output;
  const Json result = Json::parse(add.output.substr(add.output.find('{')));
  ASSERT_EQ(result["ips"].size(), 2u) << add.output;
  EXPECT_THAT(result["ips"][0]["address"].get<std::string>(), HasSubstr("10.89.0."));
  EXPECT_THAT(result["ips"][1]["address"].get<std::string>(), HasSubstr("fd00:89::"));
  EXPECT_THAT(ctr.MustRun("ip -6 -o addr show dev eth0 scope global"), HasSubstr("fd00:89::"));
  EXPECT_EQ(Reservations().size(), 2u);
  auto check = Cni(node, "check nodegate-dual " + ctr.path());
  EXPECT_EQ(check.exit_code, 0) << check.output;
  auto del = Cni(node, "del nodegate-dual " + ctr.path());
  ASSERT_EQ(del.exit_code, 0) << del.output;
  EXPECT_TRUE(Reservations().empty());
  EXPECT_TRUE(Files("/cache").empty());
}

TEST_F(DriverTest, NftablesExampleWithOurPlugins) {
  NG_REQUIRE_ROOT();
  UsePlugins(/*ours=*/true);
  InstallList("30-nftables.conflist", Example("30-nftables.conflist"));
  TestNetns node("ng-dnode");
  TestNetns ctr("ng-dctr");
  auto add = Cni(node, "add nodegate-nft " + ctr.path() + " -p 18091:8080");
  ASSERT_EQ(add.exit_code, 0) << add.output;
  EXPECT_THAT(node.MustRun("nft list ruleset"), HasSubstr("18091"));
  EXPECT_EQ(CountListed(node, "iptables-legacy-save -t nat", "18091"), 0);
  {
    auto httpd = Httpd(ctr, "nft-ok");
    ASSERT_TRUE(WaitForListener(ctr, "TCP", 8080, httpd.get()));
    EXPECT_THAT(node.MustRun("timeout 5 busybox wget -qO- http://10.90.0.1:18091/ || true"),
                HasSubstr("nft-ok"));
  }
  auto check = Cni(node, "check nodegate-nft " + ctr.path());
  EXPECT_EQ(check.exit_code, 0) << check.output;
  ASSERT_EQ(Cni(node, "del nodegate-nft " + ctr.path()).exit_code, 0);
  EXPECT_THAT(node.MustRun("nft list ruleset"), ::testing::Not(HasSubstr("18091")));
  EXPECT_TRUE(Reservations().empty());
}

// Any plugin, not only ours: Debian's loopback alone, as a runtime sets up "lo".
TEST_F(DriverTest, AnyPluginDebianLoopback) {
  NG_REQUIRE_ROOT();
  UsePlugins(/*ours=*/false);
  InstallList("00-lo.conflist", Json::parse(R"({"cniVersion":"1.0.0","name":"lo",
      "plugins":[{"type":"loopback"}]})"));
  TestNetns node("ng-dnode");
  TestNetns ctr("ng-dctr");
  ctr.MustRun("ip link set lo down");
  auto add = Cni(node, "add lo " + ctr.path() + " --ifname lo --json");
  ASSERT_EQ(add.exit_code, 0) << add.output;
  EXPECT_THAT(add.output, HasSubstr("127.0.0.1/8"));
  EXPECT_THAT(ctr.MustRun("ip -o link show lo"), HasSubstr("UP"));
  EXPECT_EQ(Files("/cache").size(), 1u);
  ASSERT_EQ(Cni(node, "del lo " + ctr.path() + " --ifname lo").exit_code, 0);
  EXPECT_THAT(ctr.MustRun("ip -o link show lo"), ::testing::Not(HasSubstr(",UP")));
  EXPECT_TRUE(Files("/cache").empty());
}

// GC and STATUS reach the plugins only from cniVersion 1.1.0, which Debian's plugins do not
// speak: a one-plugin list of our host-local shows the forwarding with a real plugin.
TEST_F(DriverTest, GcAndStatusReachOurHostLocal) {
  NG_REQUIRE_ROOT();
  UsePlugins(/*ours=*/true);
  InstallList("10-ipam.conflist", Json::parse(R"({"cniVersion":"1.1.0","name":"ipamonly",
      "plugins":[{"type":"host-local",
      "ipam":{"type":"host-local","ranges":[[{"subnet":"203.0.113.0/24"}]]}}]})"));
  TestNetns node("ng-dnode");
  TestNetns ctr("ng-dctr");
  auto status = Cni(node, "status ipamonly");
  EXPECT_EQ(status.exit_code, 0) << status.output;
  EXPECT_THAT(status.output, HasSubstr("is available"));
  for (const std::string id : {"a", "b", "c"}) {
    auto add = Cni(node, "add ipamonly " + ctr.path() + " --container-id " + id);
    ASSERT_EQ(add.exit_code, 0) << add.output;
  }
  ASSERT_EQ(Reservations().size(), 3u);
  // The runtime lost its cache for "c" (so only the plugin can clean it up) and "b" is stale.
  std::filesystem::remove(tmp_ + "/cache/results/ipamonly-c-eth0");
  auto gc = Cni(node, "gc ipamonly --valid a");
  ASSERT_EQ(gc.exit_code, 0) << gc.output;
  EXPECT_EQ(Reservations().size(), 1u) << "host-local GC did not release the unlisted address";
  EXPECT_EQ(Files("/cache"), std::vector<std::string>{"ipamonly-a-eth0"});
}

}  // namespace
}  // namespace nodegate::testing
