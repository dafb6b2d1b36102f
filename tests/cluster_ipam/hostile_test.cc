// cluster-ipam given hostile input, against three real etcd members: pools that cannot work,
// endpoints and certificates that are wrong, and values in etcd that cluster-ipam never
// writes. Each gives a CNI error on stdout (exit 1, never a signal), and etcd holds exactly
// what it held before.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/cluster_ipam/harness.h"
#include "tests/support/netns_fixture.h"

namespace nodegate::cluster_ipam::testing {
namespace {

using Json = nlohmann::json;

class HostileTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { etcd_ = new EtcdCluster(); }
  static void TearDownTestSuite() {
    delete etcd_;
    etcd_ = nullptr;
  }
  void SetUp() override { ASSERT_TRUE(etcd_->ok()) << etcd_->failure(); }

  // Runs the verb and checks the contract: exit 1, an error object with `code`, etcd as before.
  static void ExpectRefused(const std::string& verb, const std::string& conf, int code,
                            const std::string& says = "", const std::string& id = "c9") {
    const auto before = etcd_->Dump("/");
    const auto out = Cni(verb, conf, id);
    EXPECT_EQ(out.exit_code, 1) << verb << " " << conf << "\n" << out.out << out.err;
    EXPECT_FALSE(out.killed);
    EXPECT_EQ(ErrorCode(out), code) << verb << ": " << out.out;
    if (!says.empty()) {
      EXPECT_NE(out.out.find(says), std::string::npos) << out.out;
    }
    EXPECT_EQ(etcd_->Dump("/"), before) << verb << " changed etcd";
  }

  static EtcdCluster* etcd_;
};
EtcdCluster* HostileTest::etcd_ = nullptr;

TEST_F(HostileTest, PoolsThatCannotWork) {
  const std::pair<std::string, const char*> pools[] = {
      {R"([[{"subnet":"10.80.0.0/16"}],[{"subnet":"10.80.128.0/17"}]])", "overlap"},
      {R"([[{"subnet":"10.80.0.0/24","blockSize":22}]])", "larger than the range"},
      {R"([[{"subnet":"10.80.0.5/24"}]])", "host bits set"},
      {R"([[{"subnet":"10.80.0.0/16","blockSize":18}]])", "from 20 to 32"},
      {R"([[{"subnet":"fd00:80::/64","blockSize":64}]])", "from 116 to 128"},
      {R"([[{"subnet":"10.80.0.0/24","rangeStart":"10.81.0.1"}]])", "not in network"},
      {R"([[{"subnet":"10.80.0.0/24"},{"subnet":"fd00:80::/64"}]])", "mixed address families"},
      {R"([])", "no IP ranges"},
  };
  for (const auto& [ranges, says] : pools) {
    ExpectRefused("ADD", Conf(*etcd_, {.network = "badpool", .ranges = ranges}), 7, says);
  }
  // A pool already stored differently: every node must carve the same blocks.
  ASSERT_EQ(Cni("ADD", Conf(*etcd_, {.network = "stored"}), "first").exit_code, 0);
  ExpectRefused("ADD",
                Conf(*etcd_, {.network = "stored",
                              .node = "node-2",
                              .ranges = R"([[{"subnet":"10.244.0.0/16","blockSize":24}]])"}),
                7, "differs from this configuration");
  ExpectRefused("ADD", Conf(*etcd_, {.network = "badpool", .ranges = R"("10.80.0.0/16")"}), 6);
}

TEST_F(HostileTest, EndpointsAndCertificatesThatAreWrong) {
  auto conf = [&](ConfOptions o) {
    o.network = "badetcd";
    o.timeout = "1s";
    return Conf(*etcd_, o);
  };
  ExpectRefused("ADD", conf({.endpoints = {"127.0.0.1:2379"}}), 7, "scheme");
  ExpectRefused("ADD", conf({.endpoints = {"https://127.0.0.1:99999"}}), 7, "port");
  ExpectRefused("ADD", conf({.endpoints = {"https://127.0.0.1:1"}}), 11, "no endpoint answered");
  ExpectRefused("DEL", conf({.endpoints = {"https://127.0.0.1:1"}}), 11, "no endpoint answered");
  // Something that speaks TLS and HTTP but is not the gateway: a member's peer port.
  const std::string args =
      nodegate::testing::RunCommand("cat " + etcd_->dir() + "/m1.ports").output;
  const std::string peer = "https://127.0.0.1:" + args.substr(args.find(' ') + 1, 5);
  const auto odd =
      Cni("ADD", conf({.endpoints = {peer.substr(0, peer.find_last_not_of("\n ") + 1)}}), "c9");
  EXPECT_EQ(odd.exit_code, 1) << odd.out;
  EXPECT_GT(ErrorCode(odd), 0) << odd.out;

  // Certificates: another CA, a missing file, a key of another certificate, not PEM at all.
  const std::string other = etcd_->dir() + "/other";
  ASSERT_EQ(nodegate::testing::RunCommand(
                "mkdir -p " + other + " && cd " + other +
                " && openssl ecparam -name prime256v1 -genkey -noout -out ca.key 2>/dev/null"
                " && openssl req -x509 -new -key ca.key -subj /CN=other -days 1 -out ca.crt"
                " 2>/dev/null && echo garbage > junk.pem")
                .exit_code,
            0);
  auto with_files = [&](const std::string& ca, const std::string& cert, const std::string& key) {
    Json j = Json::parse(conf({}));
    j["ipam"]["etcd"]["caFile"] = ca;
    j["ipam"]["etcd"]["certFile"] = cert;
    j["ipam"]["etcd"]["keyFile"] = key;
    return j.dump();
  };
  ExpectRefused("ADD", with_files(other + "/ca.crt", etcd_->cert(), etcd_->key()), 7,
                "does not verify");
  ExpectRefused("ADD", with_files(other + "/missing.crt", etcd_->cert(), etcd_->key()), 5,
                "not found");
  ExpectRefused("ADD", with_files(etcd_->ca(), etcd_->cert(), other + "/ca.key"), 7,
                "does not match");
  ExpectRefused("ADD", with_files(other + "/junk.pem", etcd_->cert(), etcd_->key()), 7,
                "no PEM certificate");
  ExpectRefused("ADD", with_files(etcd_->ca(), etcd_->cert(), other + "/junk.pem"), 7,
                "no unencrypted PEM private key");
  // No client certificate: etcd (--client-cert-auth) refuses the handshake.
  const auto anonymous = Cni("ADD", with_files(etcd_->ca(), "", ""), "c9");
  EXPECT_EQ(anonymous.exit_code, 1);
  EXPECT_GT(ErrorCode(anonymous), 0) << anonymous.out;
}

TEST_F(HostileTest, ValuesInEtcdThatAreNotOurs) {
  const std::string conf = Conf(*etcd_, {.network = "junk", .node = "j1"});
  const auto added = Cni("ADD", conf, "c1");
  ASSERT_EQ(added.exit_code, 0) << added.out;
  std::string block_key;
  for (const auto& [key, value] : etcd_->Dump("/nodegate/ipam/junk/nodes/j1/blocks/"))
    block_key = key;
  ASSERT_FALSE(block_key.empty());
  const std::string handle_key = "/nodegate/ipam/junk/handles/c1/eth0";
  const std::string pool_key = "/nodegate/ipam/junk/pool";
  const std::string deep(200000, '[');
  const std::vector<std::string> values = {
      "",
      "not json",
      "[]",
      R"({"format":2})",
      R"({"format":1,"block":"10.244.0.0/26","node":"j1","next":0,"allocations":{"999":{}}})",
      deep,
      std::string("\xff\xfe\x00\x01", 4),
  };
  for (const auto& value : values) {
    SCOPED_TRACE(value.substr(0, 40));
    auto put = [&](const std::string& key) {
      const std::string file = etcd_->dir() + "/value";
      FILE* f = std::fopen(file.c_str(), "wb");
      std::fwrite(value.data(), 1, value.size(), f);
      std::fclose(f);
      int code = 1;
      // etcdctl reads a value from stdin when the command line gives none.
      etcd_->Ctl("put '" + key + "'" + (value.empty() ? " ''" : " < '" + file + "'"), &code);
      ASSERT_EQ(code, 0);
    };
    const auto good = etcd_->Dump("/nodegate/ipam/junk/");
    put(block_key);
    ExpectRefused("ADD", conf, 104, "not a value cluster-ipam writes", "c2");
    etcd_->Ctl("put '" + block_key + "' '" + good.at(block_key) + "'");
    put(handle_key);
    ExpectRefused("ADD", conf, 104, "", "c1");
    ExpectRefused("DEL", conf, 104, "", "c1");
    Json check = Json::parse(conf);
    check["prevResult"] = Json::parse(added.out);
    ExpectRefused("CHECK", check.dump(), 104, "", "c1");
    etcd_->Ctl("put '" + handle_key + "' '" + good.at(handle_key) + "'");
    put(pool_key);
    ExpectRefused("ADD", conf, 104, "", "c3");
    ExpectRefused("STATUS", conf, 50, "");
    etcd_->Ctl("put '" + pool_key + "' '" + good.at(pool_key) + "'");
    EXPECT_EQ(etcd_->Dump("/nodegate/ipam/junk/"), good);
  }
  // `nodegate ipam check` names what it cannot read, and does not stop at it.
  etcd_->Ctl("put /nodegate/ipam/junk/handles/zz/eth0 garbage");
  etcd_->Ctl("put /nodegate/ipam/junk/strange-key x");
  const auto kinds = ProblemKinds(conf);
  ASSERT_EQ(kinds.size(), 2u) << ::testing::PrintToString(kinds);
  EXPECT_EQ(kinds[0].rfind("unreadable /nodegate/ipam/junk/handles/zz/eth0", 0), 0u) << kinds[0];
  EXPECT_EQ(kinds[1].rfind("unreadable /nodegate/ipam/junk/strange-key", 0), 0u) << kinds[1];
  const auto show = NodegateIpam(conf, {"show"});
  EXPECT_EQ(show.exit_code, 0) << show.err;
  // The valid handle is still served, released and gone.
  EXPECT_EQ(Cni("ADD", conf, "c1").out, added.out);
  EXPECT_EQ(Cni("DEL", conf, "c1").exit_code, 0);
}

}  // namespace
}  // namespace nodegate::cluster_ipam::testing
