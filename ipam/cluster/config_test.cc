#include "ipam/cluster/config.h"

#include <gtest/gtest.h>

namespace nodegate::ipam::cluster {
namespace {

const char* kEtcd = R"("etcd":{"endpoints":["https://127.0.0.1:2379"],"caFile":"/ca"})";

Result<ClusterConfig> Load(const std::string& ipam_body, const std::string& extra = "",
                           const std::string& cni_args = "", Purpose purpose = Purpose::kAllocate,
                           const std::string& version = "1.1.0") {
  const std::string text = R"({"cniVersion":")" + version + R"(","name":"net1",)" + extra +
                           R"("ipam":{"type":"cluster-ipam",)" + ipam_body + "}}";
  auto conf = cni::ParseNetConf(text, ConfigShape());
  if (!conf.ok()) return conf.error();
  return LoadClusterConfig(*conf, cni_args, purpose, {"from-env", "from-host"});
}

TEST(ClusterConfig, TheIssuesExample) {
  auto cfg = Load(
      R"("ranges":[[{"subnet":"10.244.0.0/16","blockSize":26}],[{"subnet":"fd00:244::/48","blockSize":122}]],
         "routes":[{"dst":"0.0.0.0/0"}],"nodeName":"node-1","strictAffinity":false,
         "etcd":{"endpoints":["https://127.0.0.1:2379","https://127.0.0.1:2381"],
                 "caFile":"/etc/nodegate/etcd/ca.crt","certFile":"/etc/nodegate/etcd/client.crt",
                 "keyFile":"/etc/nodegate/etcd/client.key","prefix":"/nodegate/ipam","timeout":"5s"})");
  ASSERT_TRUE(cfg.ok()) << cfg.error().msg;
  EXPECT_EQ(cfg->node_name, "node-1");
  EXPECT_FALSE(cfg->strict_affinity);
  ASSERT_EQ(cfg->pool.sets.size(), 2u);
  EXPECT_EQ(cfg->pool.sets[0].block_sizes[0], 26);
  EXPECT_EQ(cfg->pool.sets[1].block_sizes[0], 122);
  EXPECT_EQ(cfg->pool.sets[1].range_set.ranges[0].gateway.ToString(), "fd00:244::1");
  EXPECT_EQ(cfg->routes.size(), 1u);
  EXPECT_EQ(cfg->etcd.endpoints.size(), 2u);
  EXPECT_EQ(cfg->etcd.tls.key_file, "/etc/nodegate/etcd/client.key");
  EXPECT_EQ(cfg->etcd.timeout, std::chrono::seconds(5));
  EXPECT_EQ(cfg->keys().Pool(), "/nodegate/ipam/net1/pool");
}

TEST(ClusterConfig, AgentSocketAndLockDir) {
  const std::string ranges = R"("ranges":[[{"subnet":"10.9.0.0/24"}]],)";
  auto defaults = Load(ranges + kEtcd);
  ASSERT_TRUE(defaults.ok()) << defaults.error().msg;
  EXPECT_EQ(defaults->agent_socket, "/run/nodegate/cluster-ipam.sock");
  EXPECT_EQ(defaults->lock_dir, "/run/nodegate/cluster-ipam");
  auto given = Load(ranges + R"("agentSocket":"","lockDir":"/var/lib/cni/locks",)" + kEtcd);
  ASSERT_TRUE(given.ok()) << given.error().msg;
  EXPECT_EQ(given->agent_socket, "");  // never ask an agent
  EXPECT_EQ(given->lock_dir, "/var/lib/cni/locks");
  for (const std::string& bad : std::vector<std::string>{
           R"("agentSocket":"run/x.sock",)", R"("lockDir":"",)", R"("lockDir":"locks",)",
           R"("agentSocket":"/)" + std::string(120, 'a') + R"(",)"}) {
    auto cfg = Load(ranges + bad + kEtcd);
    ASSERT_FALSE(cfg.ok()) << bad;
    EXPECT_EQ(cfg.error().code, kErrInvalidConfig) << bad;
  }
  auto wrong_type = Load(ranges + R"("agentSocket":1,)" + kEtcd);
  ASSERT_FALSE(wrong_type.ok());
  EXPECT_EQ(wrong_type.error().code, kErrDecode);
}

TEST(ClusterConfig, DefaultsAndNodeNameSources) {
  auto cfg = Load(
      std::string(R"("ranges":[[{"subnet":"10.9.0.0/28"}],[{"subnet":"fd00::/64"}]],)") + kEtcd);
  ASSERT_TRUE(cfg.ok()) << cfg.error().msg;
  EXPECT_EQ(cfg->node_name, "from-env");
  EXPECT_EQ(cfg->pool.sets[0].block_sizes[0], 28);  // the subnet is smaller than /26
  EXPECT_EQ(cfg->pool.sets[1].block_sizes[0], 122);
  EXPECT_EQ(cfg->etcd.prefix, "/nodegate/ipam");
  EXPECT_EQ(cfg->etcd.dial_timeout, std::chrono::seconds(1));
  const std::string text =
      std::string(
          R"({"cniVersion":"1.0.0","name":"n","ipam":{"ranges":[[{"subnet":"10.9.0.0/24"}]],)") +
      kEtcd + "}}";
  auto conf = cni::ParseNetConf(text, ConfigShape());
  ASSERT_TRUE(conf.ok());
  auto from_host = LoadClusterConfig(*conf, "", Purpose::kAllocate, {"", "host-a"});
  ASSERT_TRUE(from_host.ok());
  EXPECT_EQ(from_host->node_name, "host-a");
}

TEST(ClusterConfig, PodAttributesFromCniArgs) {
  auto cfg = Load(std::string(R"("ranges":[[{"subnet":"10.9.0.0/24"}]],)") + kEtcd, "",
                  "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-1;"
                  "K8S_POD_INFRA_CONTAINER_ID=abc;K8S_POD_UID=u-1");
  ASSERT_TRUE(cfg.ok()) << cfg.error().msg;
  EXPECT_EQ(cfg->pod, (PodAttributes{"default", "web-1", "u-1", "abc"}));
}

TEST(ClusterConfig, BadPoolsAreRefusedWithTheReason) {
  const std::string e = std::string(",") + kEtcd;
  struct Case {
    std::string ranges;
    int code;
    const char* says;
  };
  const Case cases[] = {
      {R"("ranges":[[{"subnet":"10.0.0.0/24","blockSize":20}]])", 7, "larger than the range"},
      {R"("ranges":[[{"subnet":"10.0.0.0/16","blockSize":33}]])", 7, "from 20 to 32"},
      {R"("ranges":[[{"subnet":"10.0.0.0/8","blockSize":16}]])", 7, "from 20 to 32"},
      {R"("ranges":[[{"subnet":"fd00::/64","blockSize":100}]])", 7, "from 116 to 128"},
      {R"("ranges":[[{"subnet":"10.0.0.0/16","blockSize":"26"}]])", 6, "must be an integer"},
      {R"("ranges":[[{"subnet":"10.0.0.1/16"}]])", 7, "host bits set"},
      {R"("ranges":[[{"subnet":"10.0.0.0/16"}],[{"subnet":"10.0.128.0/17"}]])", 7, "overlaps"},
      {R"("ranges":[[{"subnet":"10.0.0.0/24","rangeEnd":"10.0.0.100"},{"subnet":"10.0.0.0/24","rangeStart":"10.0.0.101"}]])",
       7, "a subnet of its own"},
      {R"("ranges":[[{"subnet":"10.0.0.0/24"},{"subnet":"fd00::/64"}]])", 7,
       "mixed address families"},
      {R"("ranges":[])", 7, "no IP ranges specified"},
      {R"("ranges":[[]])", 7, "empty range set"},
  };
  for (const auto& c : cases) {
    auto cfg = Load(c.ranges + e);
    ASSERT_FALSE(cfg.ok()) << c.ranges;
    EXPECT_EQ(cfg.error().code, c.code) << c.ranges << ": " << cfg.error().msg;
    EXPECT_NE(cfg.error().msg.find(c.says), std::string::npos)
        << c.ranges << ": " << cfg.error().msg;
  }
}

TEST(ClusterConfig, BadEtcdSettings) {
  const std::string r = R"("ranges":[[{"subnet":"10.0.0.0/24"}]],)";
  const std::pair<std::string, const char*> cases[] = {
      {R"("etcd":{"endpoints":[]})", "endpoints is empty"},
      {R"("etcd":{"endpoints":["127.0.0.1:2379"]})", "scheme"},
      {R"("etcd":{"endpoints":["https://127.0.0.1:2379"],"timeout":"soon"})", "a duration"},
      {R"("etcd":{"endpoints":["https://127.0.0.1:2379"],"prefix":"nodegate"})",
       "must start with /"},
      {R"("etcd":{"endpoints":["https://127.0.0.1:2379"],"username":"u"})", "go together"},
      {R"("nodeName":"a/b","etcd":{"endpoints":["https://127.0.0.1:2379"]})", "node name"},
  };
  for (const auto& [body, says] : cases) {
    auto cfg = Load(r + body);
    ASSERT_FALSE(cfg.ok()) << body;
    EXPECT_EQ(cfg.error().code, 7) << body;
    EXPECT_NE(cfg.error().msg.find(says), std::string::npos) << body << ": " << cfg.error().msg;
  }
  auto missing = Load(r.substr(0, r.size() - 1));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().msg.find("ipam.etcd is missing"), std::string::npos);
}

TEST(ClusterConfig, RequestedAddressesAndIpRangesAreRefusedExplicitly) {
  const std::string body = std::string(R"("ranges":[[{"subnet":"10.0.0.0/24"}]],)") + kEtcd;
  auto ip = Load(body, "", "IP=10.0.0.5");
  ASSERT_FALSE(ip.ok());
  EXPECT_EQ(ip.error().code, kErrUnsupportedField);
  auto ips = Load(body, R"("runtimeConfig":{"ips":["10.0.0.5"]},)");
  ASSERT_FALSE(ips.ok());
  EXPECT_EQ(ips.error().code, kErrUnsupportedField);
  auto ranges = Load(body, R"("runtimeConfig":{"ipRanges":[[{"subnet":"10.1.0.0/24"}]]},)");
  ASSERT_FALSE(ranges.ok());
  EXPECT_EQ(ranges.error().code, kErrUnsupportedField);
  auto unknown = Load(body, "", "FOO=1");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code, kErrInvalidEnvironment);
}

TEST(ClusterConfig, ReleaseNeedsOnlyNameNodeAndEtcd) {
  auto cfg = Load(std::string(R"("ranges":"garbage",)") + kEtcd, "", "garbage", Purpose::kRelease);
  ASSERT_TRUE(cfg.ok()) << cfg.error().msg;
  EXPECT_TRUE(cfg->pool.sets.empty());
  EXPECT_EQ(cfg->node_name, "from-env");
}

}  // namespace
}  // namespace nodegate::ipam::cluster
