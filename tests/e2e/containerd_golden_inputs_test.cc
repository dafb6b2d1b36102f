// What containerd 1.6's CRI really passes to our plugins (recorded by
// tests/e2e/containerd_e2e.sh into tests/testdata/containerd/), read by each plugin's own
// config parser: Go-cased capability keys, the second DEL without netns or prevResult.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "ipam/config.h"
#include "lib/cni/args.h"
#include "lib/cni/conf.h"
#include "plugins/bandwidth/config.h"
#include "plugins/portmap/config.h"

namespace nodegate {
namespace {

namespace fs = std::filesystem;
using cni::Json;

struct Golden {
  std::string file;
  Json env;
  std::string stdin_data;
};

// $NODEGATE_SOURCE_DIR (set by CTest) or the working directory.
std::string SourceDir() {
  const char* dir = std::getenv("NODEGATE_SOURCE_DIR");
  return dir ? dir : ".";
}

Golden Load(const std::string& name) {
  const std::string path = SourceDir() + "/tests/testdata/containerd/" + name;
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  const Json j = Json::parse(in, nullptr, false);
  EXPECT_TRUE(j.is_object()) << path;
  return Golden{name, j.value("env", Json::object()), j.value("stdin", Json::object()).dump()};
}

cni::NetConf Parse(const Golden& g, const cni::gojson::Shape& shape,
                   cni::Strictness strictness = cni::Strictness::kAll) {
  auto conf = cni::ParseNetConf(g.stdin_data, shape, strictness);
  EXPECT_TRUE(conf.ok()) << g.file << ": " << (conf.ok() ? "" : conf.error().msg);
  return conf.ok() ? *conf : cni::NetConf();
}

TEST(ContainerdGoldenInputs, EveryRecordedCallIsThere) {
  size_t count = 0;
  for (const auto& e : fs::directory_iterator(SourceDir() + "/tests/testdata/containerd")) {
    if (e.path().extension() == ".json") ++count;
  }
  EXPECT_EQ(count, 9u) << "ADD, DEL on stop and DEL on remove for three plugins";
}

TEST(ContainerdGoldenInputs, PortmapReadsGoCasedMappings) {
  const Golden add = Load("02-run-portmap-ADD.json");
  ASSERT_NE(add.stdin_data.find("\"HostPort\""), std::string::npos) << "what containerd sends";
  const cni::NetConf conf = Parse(add, portmap::ConfigShape());
  auto config = portmap::ParseConfig(conf, {.container_id = add.env["CNI_CONTAINERID"],
                                            .ifname = "eth0",
                                            .purpose = portmap::Purpose::kAdd});
  ASSERT_TRUE(config.ok()) << config.error().msg;
  ASSERT_EQ(config->mappings.size(), 2u);
  EXPECT_EQ(config->mappings[0].host_port, 18080);
  EXPECT_EQ(config->mappings[0].container_port, 8080);
  EXPECT_EQ(config->mappings[0].protocol, portmap::Protocol::kTcp);
  EXPECT_FALSE(config->mappings[0].host_ip);  // HostIP "" is every address
  EXPECT_EQ(config->mappings[1].host_port, 18053);
  EXPECT_EQ(config->mappings[1].protocol, portmap::Protocol::kUdp);
  ASSERT_TRUE(config->container_v4);
  EXPECT_EQ(config->container_v4->ToString(), "10.88.0.2/16");
}

TEST(ContainerdGoldenInputs, BandwidthReadsGoCasedRates) {
  const Golden add = Load("03-run-bandwidth-ADD.json");
  ASSERT_NE(add.stdin_data.find("\"IngressRate\""), std::string::npos);
  auto config = bandwidth::ParseBandwidthConfig(Parse(add, bandwidth::ConfigShape()));
  ASSERT_TRUE(config.ok()) << config.error().msg;
  // kubernetes.io/ingress-bandwidth=10M; containerd's burst is always 2^32-1 bits.
  EXPECT_EQ(config->ingress.rate_bits, 10000000u);
  EXPECT_EQ(config->ingress.burst_bits, 4294967295u);
  EXPECT_EQ(config->egress.rate_bits, 10000000u);
  EXPECT_TRUE(config->shapes_anything());
}

TEST(ContainerdGoldenInputs, HostLocalReadsTheBridgeConfigAndPodArgs) {
  const Golden add = Load("01-run-host-local-ADD.json");
  auto config = ipam::LoadIpamConfig(Parse(add, ipam::ConfigShape()), add.env.value("CNI_ARGS", ""),
                                     ipam::Verb::kAdd);
  ASSERT_TRUE(config.ok()) << config.error().msg;
  EXPECT_EQ(config->network_name, "nodegate");
  ASSERT_EQ(config->range_sets.size(), 1u);
  EXPECT_TRUE(config->requested_ips.empty());  // K8S_* args are ignored (IgnoreUnknown=1)
}

// DEL on StopPodSandbox carries the netns and the cached prevResult; DEL on RemovePodSandbox
// has CNI_NETNS="" and no prevResult. Both must read.
TEST(ContainerdGoldenInputs, BothDelsOfEachPluginRead) {
  for (const char* phase : {"04-stop", "07-remove"}) {
    SCOPED_TRACE(phase);
    const bool stop = std::string(phase) == "04-stop";
    const Golden bw = Load(std::string(phase) + "-bandwidth-DEL.json");
    EXPECT_EQ(bw.env.value("CNI_NETNS", "?").empty(), !stop);
    const cni::NetConf bw_conf =
        Parse(bw, bandwidth::ConfigShape(), cni::Strictness::kNameAndVersion);
    EXPECT_TRUE(bw_conf.unreadable.empty());
    EXPECT_EQ(bw_conf.prev_result.has_value(), stop);
    EXPECT_TRUE(bandwidth::ValidateConfig(bw_conf).ok());
  }
  for (const char* phase : {"05-stop", "08-remove"}) {
    SCOPED_TRACE(phase);
    const Golden pm = Load(std::string(phase) + "-portmap-DEL.json");
    const cni::NetConf conf = Parse(pm, portmap::ConfigShape(), cni::Strictness::kNameAndVersion);
    EXPECT_TRUE(conf.unreadable.empty());
    auto config = portmap::ParseConfig(conf, {.container_id = pm.env["CNI_CONTAINERID"],
                                              .ifname = "eth0",
                                              .purpose = portmap::Purpose::kDel});
    ASSERT_TRUE(config.ok()) << config.error().msg;
    EXPECT_EQ(config->mappings.size(), 2u);
  }
  for (const char* phase : {"06-stop", "09-remove"}) {
    SCOPED_TRACE(phase);
    const Golden hl = Load(std::string(phase) + "-host-local-DEL.json");
    auto config = ipam::LoadIpamConfig(Parse(hl, ipam::ConfigShape()), hl.env.value("CNI_ARGS", ""),
                                       ipam::Verb::kDel);
    EXPECT_TRUE(config.ok()) << config.error().msg;
  }
}

}  // namespace
}  // namespace nodegate
