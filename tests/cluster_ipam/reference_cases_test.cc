// The reference host-local's own test cases that are about an IPAM plugin's interface
// (containernetworking/plugins, plugins/ipam/host-local/host_local_test.go: results, ranges,
// routes, dns, dual-stack, per-interface handles, DEL of an unknown ID), run against
// cluster-ipam for every spec version, with three real etcd members. Where cluster-ipam
// differs by design it is said beside the case: a repeated ADD returns the same addresses
// (the reference fails), and the first address of a range set with several ranges is in the
// block the node claimed (either range's first address). The cases about requested addresses
// (args.cni.ips) and host-local's files do not apply (ipam/cluster/README.md).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/cluster_ipam/harness.h"

namespace nodegate::cluster_ipam::testing {
namespace {

using Json = nlohmann::json;

class ReferenceCasesTest : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() { etcd_ = new EtcdCluster(); }
  static void TearDownTestSuite() {
    delete etcd_;
    etcd_ = nullptr;
  }
  void SetUp() override {
    ASSERT_TRUE(etcd_->ok()) << etcd_->failure();
    version_ = GetParam();
    // A network per version, so the cases of one version never see another's blocks.
    suffix_ = version_;
    std::replace(suffix_.begin(), suffix_.end(), '.', '-');
  }

  std::string Conf(const std::string& name, const std::string& ranges,
                   const std::string& extra = "") {
    // One block per range (blockSize = the subnet's length): the reference's addresses.
    return testing::Conf(*etcd_, {.version = version_,
                                  .network = name + "-" + suffix_,
                                  .ranges = ranges,
                                  .extra_ipam = extra});
  }
  bool HasIpVersion() const { return version_ >= "0.3.0" && version_ < "1.0.0"; }
  bool Old() const { return version_ < "0.3.0"; }

  // The 1.x view of any result: ips (address, gateway) and routes, as the reference's test
  // reads them after converting.
  struct Ip {
    std::string address, gateway;
  };
  std::vector<Ip> Ips(const Json& j) const {
    std::vector<Ip> out;
    if (Old()) {
      for (const char* f : {"ip4", "ip6"}) {
        if (j.contains(f)) out.push_back({j[f]["ip"], j[f].value("gateway", "")});
      }
    } else {
      for (const auto& ip : j["ips"]) out.push_back({ip["address"], ip.value("gateway", "")});
    }
    return out;
  }
  std::vector<std::string> Routes(const Json& j) const {
    std::vector<std::string> out;
    auto add = [&](const Json& routes) {
      for (const auto& r : routes)
        out.push_back(r["dst"].get<std::string>() + " " + r.value("gw", ""));
    };
    if (Old()) {
      for (const char* f : {"ip4", "ip6"}) {
        if (j.contains(f) && j[f].contains("routes")) add(j[f]["routes"]);
      }
    } else if (j.contains("routes")) {
      add(j["routes"]);
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  static EtcdCluster* etcd_;
  std::string version_;
  std::string suffix_;
};
EtcdCluster* ReferenceCasesTest::etcd_ = nullptr;

// "allocates and releases addresses with ADD/DEL"
TEST_P(ReferenceCasesTest, AllocatesAndReleasesAddressesWithAddDel) {
  const std::string resolv = etcd_->dir() + "/resolv.conf";
  std::ofstream(resolv) << "nameserver 192.0.2.3";
  const std::string conf =
      Conf("mynet",
           R"([[{"subnet":"10.1.2.0/24","blockSize":24},{"subnet":"10.2.2.0/24","blockSize":24}],
          [{"subnet":"2001:db8:1::/64","blockSize":122}]])",
           R"("resolvConf":")" + resolv + R"(","routes":[{"dst":"0.0.0.0/0"},{"dst":"::/0"},
          {"dst":"192.168.0.0/16","gw":"1.1.1.1"},{"dst":"2001:db8:2::0/64","gw":"2001:db8:3::1"}],)");
  const auto add = Cni("ADD", conf, "dummy");
  ASSERT_EQ(add.exit_code, 0) << add.out;
  if (HasIpVersion()) {
    EXPECT_NE(add.out.find("\"version\":"), std::string::npos);
  }
  const Json j = Json::parse(add.out);
  const auto ips = Ips(j);
  ASSERT_EQ(ips.size(), 2u);
  // Which range of the set the node's block is in is the claim's choice (see the file comment).
  EXPECT_TRUE((ips[0].address == "10.1.2.2/24" && ips[0].gateway == "10.1.2.1") ||
              (ips[0].address == "10.2.2.2/24" && ips[0].gateway == "10.2.2.1"))
      << ips[0].address << " " << ips[0].gateway;
  EXPECT_EQ(ips[1].address.substr(ips[1].address.size() - 3), "/64");
  EXPECT_EQ(ips[1].gateway, "2001:db8:1::1");
  EXPECT_EQ(Routes(j), (std::vector<std::string>{"0.0.0.0/0 ", "192.168.0.0/16 1.1.1.1",
                                                 "2001:db8:2::/64 2001:db8:3::1", "::/0 "}));
  EXPECT_EQ(j["dns"]["nameservers"], Json::array({"192.0.2.3"}));
  ASSERT_EQ(Cni("DEL", conf, "dummy").exit_code, 0);
  for (const auto& [key, value] : etcd_->Dump("/nodegate/ipam/mynet-" + suffix_ + "/handles/")) {
    ADD_FAILURE() << key << " left after DEL";
  }
}

// "allocates and releases addresses on specific interface with ADD/DEL"
TEST_P(ReferenceCasesTest, AllocatesAndReleasesAddressesOnSpecificInterface) {
  const std::string conf0 = Conf("mynet0", R"([[{"subnet":"10.1.2.0/24","blockSize":24}]])");
  const std::string conf1 = Conf("mynet1", R"([[{"subnet":"10.2.2.0/24","blockSize":24}]])");
  const auto r0 = Cni("ADD", conf0, "dummy", "eth0");
  const auto r1 = Cni("ADD", conf1, "dummy", "eth1");
  ASSERT_EQ(r0.exit_code, 0) << r0.out;
  ASSERT_EQ(r1.exit_code, 0) << r1.out;
  EXPECT_EQ(AddressesOf(r0.out), std::vector<std::string>{"10.1.2.2"});
  EXPECT_EQ(AddressesOf(r1.out), std::vector<std::string>{"10.2.2.2"});
  ASSERT_EQ(Cni("DEL", conf0, "dummy", "eth0").exit_code, 0);
  EXPECT_TRUE(etcd_->Dump("/nodegate/ipam/mynet0-" + suffix_ + "/handles/").empty());
  EXPECT_EQ(etcd_->Dump("/nodegate/ipam/mynet1-" + suffix_ + "/handles/").size(), 1u);
  ASSERT_EQ(Cni("DEL", conf1, "dummy", "eth1").exit_code, 0);
  EXPECT_TRUE(etcd_->Dump("/nodegate/ipam/mynet1-" + suffix_ + "/handles/").empty());
}

// "repeat allocating addresses on specific interface for same container ID with ADD": the
// reference fails the repeated ADD; cluster-ipam answers it with the same addresses.
TEST_P(ReferenceCasesTest, RepeatedAddOfOneContainer) {
  const std::string conf = Conf("repeat", R"([[{"subnet":"10.1.2.0/24","blockSize":24}]])");
  const auto first = Cni("ADD", conf, "dummy");
  ASSERT_EQ(first.exit_code, 0);
  EXPECT_EQ(AddressesOf(first.out), std::vector<std::string>{"10.1.2.2"});
  EXPECT_EQ(Cni("ADD", conf, "dummy").out, first.out);
  const auto other = Cni("ADD", conf, "dummy1");
  EXPECT_EQ(AddressesOf(other.out), std::vector<std::string>{"10.1.2.3"});
  EXPECT_EQ(Cni("ADD", conf, "dummy").out, first.out);
  EXPECT_EQ(Cni("DEL", conf, "dummy").exit_code, 0);
  EXPECT_EQ(Cni("DEL", conf, "dummy1").exit_code, 0);
}

// "doesn't error when passed an unknown ID on DEL" (with host-local's legacy "subnet" key)
TEST_P(ReferenceCasesTest, DelOfAnUnknownId) {
  Json conf = Json::parse(Conf("unknown", R"([])"));
  conf["ipam"].erase("ranges");
  conf["ipam"]["subnet"] = "10.1.2.0/24";
  EXPECT_EQ(Cni("DEL", conf.dump(), "dummy").exit_code, 0);
  const auto add = Cni("ADD", conf.dump(), "testing");
  // "does not output an error message upon initial subnet creation"
  ASSERT_EQ(add.exit_code, 0) << add.out;
  EXPECT_EQ(add.out.find("Error retriving last reserved ip"), std::string::npos);
  EXPECT_EQ(add.err.find("rror"), std::string::npos) << add.err;
  EXPECT_EQ(Cni("DEL", conf.dump(), "testing").exit_code, 0);
}

// The reference's multiple-ranges cases, without their requested addresses: two IPv4 range
// sets are refused before 0.3.0 with the reference's words.
TEST_P(ReferenceCasesTest, MoreThanOneAddressPerFamilyBefore030) {
  const std::string conf = Conf("multi", R"([[{"subnet":"10.1.2.0/24","blockSize":24}],
                                            [{"subnet":"10.1.3.0/24","blockSize":24}]])");
  const auto add = Cni("ADD", conf, "dummy");
  if (Old()) {
    EXPECT_EQ(ErrorCode(add), 7);
    EXPECT_EQ(Json::parse(add.out)["msg"],
              "CNI version " + version_ + " does not support more than 1 address per family");
    return;
  }
  ASSERT_EQ(add.exit_code, 0) << add.out;
  EXPECT_EQ(AddressesOf(add.out), (std::vector<std::string>{"10.1.2.2", "10.1.3.2"}));
  EXPECT_EQ(Cni("DEL", conf, "dummy").exit_code, 0);
}

INSTANTIATE_TEST_SUITE_P(AllSpecVersions, ReferenceCasesTest,
                         ::testing::Values("0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0",
                                           "1.1.0"),
                         [](const auto& info) {
                           std::string name = "v" + info.param;
                           std::replace(name.begin(), name.end(), '.', '_');
                           return name;
                         });

}  // namespace
}  // namespace nodegate::cluster_ipam::testing
