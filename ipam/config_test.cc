// Config parsing: key coverage, range-set order, requested-IP sources, error codes and the
// reference's texts, path safety.
#include "ipam/config.h"

#include <gtest/gtest.h>

#include "ipam/resolv_conf.h"
#include "ipam/testing/fake_store.h"

namespace nodegate::ipam {
namespace {

using testing::Ip;

cni::NetConf Conf(const std::string& json) {
  auto conf = cni::ParseNetConf(json);
  EXPECT_TRUE(conf.ok()) << json;
  return *conf;
}

std::string WithIpam(const std::string& ipam, const std::string& extra = "",
                     const std::string& version = "1.0.0") {
  return R"({"cniVersion":")" + version + R"(","name":"net1","type":"host-local",)" + extra +
         R"("ipam":)" + ipam + "}";
}

TEST(ConfigTest, FullConfig) {
  auto cfg = LoadIpamConfig(Conf(WithIpam(R"({"type":"host-local","dataDir":"/tmp/x/",
      "resolvConf":"/etc/r.conf","subnet":"10.1.0.0/24","gateway":"10.1.0.254",
      "ranges":[[{"subnet":"2001:db8::/64"}]],
      "routes":[{"dst":"0.0.0.0/0"},{"dst":"192.0.2.0/24","gw":"10.1.0.9","mtu":1400}]})")),
                            "", Verb::kAdd);
  ASSERT_TRUE(cfg.ok()) << cfg.error().msg;
  EXPECT_EQ(cfg->data_dir, "/tmp/x");
  EXPECT_EQ(cfg->NetworkDir(), "/tmp/x/net1");
  EXPECT_EQ(cfg->resolv_conf, "/etc/r.conf");
  ASSERT_EQ(cfg->range_sets.size(), 2u);  // legacy range first
  EXPECT_EQ(cfg->range_sets[0].ranges[0].gateway, Ip("10.1.0.254"));
  EXPECT_EQ(cfg->range_sets[1].family(), net::Family::kV6);
  ASSERT_EQ(cfg->routes.size(), 2u);
  EXPECT_EQ(cfg->routes[1].gw, Ip("10.1.0.9"));
  EXPECT_EQ(cfg->routes[1].mtu, 1400);
}

TEST(ConfigTest, DefaultsAndIpRangesCapabilityPrepended) {
  auto cfg = LoadIpamConfig(
      Conf(WithIpam(R"({"subnet":"10.1.0.0/24","ranges":[[{"subnet":"10.2.0.0/24"}]]})",
                    R"("runtimeConfig":{"ipRanges":[[{"subnet":"10.3.0.0/24"}]]},)")),
      "", Verb::kAdd);
  ASSERT_TRUE(cfg.ok()) << cfg.error().msg;
  EXPECT_EQ(cfg->data_dir, "/var/lib/cni/networks");
  ASSERT_EQ(cfg->range_sets.size(), 3u);
  EXPECT_EQ(cfg->range_sets[0].ranges[0].subnet.ToString(), "10.3.0.0/24");
  EXPECT_EQ(cfg->range_sets[1].ranges[0].subnet.ToString(), "10.1.0.0/24");
  EXPECT_EQ(cfg->range_sets[2].ranges[0].subnet.ToString(), "10.2.0.0/24");
}

TEST(ConfigTest, RequestedIpsMergedInReferenceOrder) {
  auto cfg = LoadIpamConfig(
      Conf(WithIpam(R"({"ranges":[[{"subnet":"10.1.0.0/24"}],[{"subnet":"2001:db8::/64"}]]})",
                    R"("args":{"cni":{"ips":["2001:db8::9/64","10.1.0.7"]}},
                       "runtimeConfig":{"ips":["10.1.0.7","10.1.0.8/24"]},)")),
      "IgnoreUnknown=1;K8S_POD_NAME=p;IP=10.1.0.6/24", Verb::kAdd);
  ASSERT_TRUE(cfg.ok()) << cfg.error().msg;
  std::vector<net::IpAddress> want = {Ip("10.1.0.6"), Ip("2001:db8::9"), Ip("10.1.0.7"),
                                      Ip("10.1.0.8")};
  EXPECT_EQ(cfg->requested_ips, want);
}

struct Bad {
  const char* name;
  std::string json;
  std::string args;
  int code;
  std::string msg;
};

TEST(ConfigTest, Errors) {
  const std::string r = R"([[{"subnet":"10.1.0.0/24"}]])";
  const Bad cases[] = {
      {"no ipam", R"({"cniVersion":"1.0.0","name":"n"})", "", 7, "IPAM config missing 'ipam' key"},
      {"no ranges", WithIpam(R"({"type":"host-local"})"), "", 7, "no IP ranges specified"},
      {"host bits", WithIpam(R"({"subnet":"10.1.0.1/24"})"), "", 7,
       "invalid range set 0: Network has host bits set. For a subnet mask of length 24 the "
       "network address is 10.1.0.0"},
      {"empty set", WithIpam(R"({"ranges":[[]]})"), "", 7, "invalid range set 0: empty range set"},
      {"sets overlap", WithIpam(R"({"subnet":"10.1.0.0/24","ranges":)" + r + "}"), "", 7,
       "range set 0 overlaps with 1"},
      {"v0.2.0 two v4 sets",
       WithIpam(R"({"ranges":[[{"subnet":"10.1.0.0/24"}],[{"subnet":"10.2.0.0/24"}]]})", "",
                "0.2.0"),
       "", 7, "CNI version 0.2.0 does not support more than 1 address per family"},
      {"bad cidr", WithIpam(R"({"subnet":"10.1.0.0/33"})"), "", 7,
       "invalid CIDR address: 10.1.0.0/33"},
      {"bad gateway", WithIpam(R"({"subnet":"10.1.0.0/24","gateway":"x"})"), "", 7,
       "invalid IP address: x"},
      {"ranges not a list", WithIpam(R"({"ranges":{"subnet":"10.1.0.0/24"}})"), "", 6,
       "error decoding ipam config: ipam.ranges must be a list of range sets"},
      {"dataDir not a string", WithIpam(R"({"dataDir":5,"ranges":)" + r + "}"), "", 6,
       "error decoding ipam config: ipam.dataDir must be a string"},
      {"dataDir escapes", WithIpam(R"({"dataDir":"/var/lib/../../etc","ranges":)" + r + "}"), "", 7,
       "invalid dataDir \"/var/lib/../../etc\": \"..\" is not allowed"},
      {"bad requested ip", WithIpam(R"({"ranges":)" + r + "}", R"("args":{"cni":{"ips":["z"]}},)"),
       "", 7, "cannot understand ip: invalid IP address: z"},
      {"unknown CNI_ARGS", WithIpam(R"({"ranges":)" + r + "}"), "ip=10.1.0.9", 4,
       "ARGS: unknown args [\"ip=10.1.0.9\"]"},
      {"bad CNI_ARGS IP", WithIpam(R"({"ranges":)" + r + "}"), "IP=nope", 4,
       "ARGS: error parsing value of \"IP\": cannot understand ip: invalid IP address: nope"},
      {"route without dst", WithIpam(R"({"ranges":)" + r + R"(,"routes":[{"gw":"10.1.0.1"}]})"), "",
       7, "route 0 has no dst"},
      // Issue 13: a prefix out of the family's range was accepted and ignored.
      {"CNI_ARGS IP prefix past 32", WithIpam(R"({"ranges":)" + r + "}"), "IP=10.1.0.50/99", 4,
       "ARGS: error parsing value of \"IP\": cannot understand ip: invalid IP address: "
       "10.1.0.50/99"},
      {"CNI_ARGS IP empty prefix", WithIpam(R"({"ranges":)" + r + "}"), "IP=10.1.0.50/", 4,
       "ARGS: error parsing value of \"IP\": cannot understand ip: invalid IP address: "
       "10.1.0.50/"},
      {"requested ip prefix not a number",
       WithIpam(R"({"ranges":)" + r + "}", R"("args":{"cni":{"ips":["2001:db8::9/129"]}},)"), "", 7,
       "cannot understand ip: invalid IP address: 2001:db8::9/129"},
  };
  for (const auto& c : cases) {
    auto cfg = LoadIpamConfig(Conf(c.json), c.args, Verb::kAdd);
    ASSERT_FALSE(cfg.ok()) << c.name;
    EXPECT_EQ(cfg.error().code, c.code) << c.name << ": " << cfg.error().msg;
    EXPECT_EQ(cfg.error().msg, c.msg) << c.name;
  }
}

TEST(ConfigTest, StorePathSafety) {
  EXPECT_TRUE(ValidateStorePath("/var/lib/cni/networks", "net-1.a").ok());
  EXPECT_TRUE(ValidateStorePath("/var/lib/cni..x/networks", "net").ok());
  for (const char* name : {"", "..", ".", "a/b", "../x", "-x"}) {
    auto s = ValidateStorePath("/var/lib/cni/networks", name);
    ASSERT_FALSE(s.ok()) << name;
    EXPECT_EQ(s.error().code, kErrInvalidConfig) << name;
  }
  for (const char* dir : {"..", "/a/..", "../b", "/a/../b"}) {
    auto s = ValidateStorePath(dir, "net");
    ASSERT_FALSE(s.ok()) << dir;
    EXPECT_EQ(s.error().code, kErrInvalidConfig) << dir;
  }
}

TEST(ConfigTest, GcAndStatusNeedNoRanges) {
  auto conf = Conf(WithIpam(R"({"type":"host-local","dataDir":"/tmp/y"})"));
  EXPECT_TRUE(LoadIpamConfig(conf, "", Verb::kGc).ok());
  auto status = LoadIpamConfig(conf, "", Verb::kStatus);
  ASSERT_TRUE(status.ok());
  EXPECT_TRUE(status->range_sets.empty());
  EXPECT_FALSE(LoadIpamConfig(conf, "", Verb::kDel).ok());
}

TEST(ConfigTest, ValidateConfigIsTheAddValidation) {
  EXPECT_TRUE(ValidateConfig(Conf(WithIpam(R"({"subnet":"10.1.0.0/24"})"))).ok());
  auto bad = ValidateConfig(Conf(WithIpam(R"({"subnet":"10.1.0.0/31"})")));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().msg, "invalid range set 0: Network 10.1.0.0/31 too small to allocate from");
  auto bad_name = ValidateConfig(Conf(R"({"cniVersion":"1.0.0","name":"a/b","ipam":{}})"));
  ASSERT_FALSE(bad_name.ok());
  EXPECT_EQ(bad_name.error().code, kErrInvalidConfig);
}

TEST(ResolvConfTest, ParsesLikeTheReference) {
  auto dns = ParseResolvConfText(
      "# comment\n; other\nnameserver 192.0.2.53\nnameserver 2001:db8::53\n"
      "domain a.example\ndomain b.example\nsearch x.example y.example\n"
      "options ndots:2 edns0\n  \nlonely\n");
  EXPECT_EQ(dns.nameservers, (std::vector<std::string>{"192.0.2.53", "2001:db8::53"}));
  EXPECT_EQ(dns.domain, "b.example");
  EXPECT_EQ(dns.search, (std::vector<std::string>{"x.example", "y.example"}));
  EXPECT_EQ(dns.options, (std::vector<std::string>{"ndots:2", "edns0"}));
  auto missing = ReadResolvConf("/nonexistent/resolv.conf");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, kErrIo);
}

// Issue 13 row 9: /dev/zero as resolvConf read until the allocation failed (code 999).
TEST(ResolvConfTest, RefusesWhatIsNotARegularFile) {
  for (const char* path : {"/dev/zero", "/dev/urandom", "/"}) {
    auto dns = ReadResolvConf(path);
    ASSERT_FALSE(dns.ok()) << path;
    EXPECT_EQ(dns.error().code, kErrIo) << path;
    EXPECT_NE(dns.error().msg.find(path), std::string::npos) << dns.error().msg;
  }
}

}  // namespace
}  // namespace nodegate::ipam
