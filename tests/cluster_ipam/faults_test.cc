// cluster-ipam while etcd fails under it, each test on three members of its own: a member
// killed (kill -9) and restarted during a storm of 1,000 ADDs from 10 nodes, the leader stopped
// (SIGSTOP) for 5 s, every member gone and then back. A failed ADD is retried as a runtime
// retries it (the spec: ADD may be repeated, and our ADD is idempotent); afterwards nothing is
// lost or doubled, and `nodegate ipam check` finds nothing.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "tests/cluster_ipam/harness.h"

namespace nodegate::cluster_ipam::testing {
namespace {

using Clock = std::chrono::steady_clock;
using Json = nlohmann::json;

class FaultsTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(etcd_.ok()) << etcd_.failure(); }

  std::string NodeConf(int node) {
    return Conf(etcd_, {.network = "faults",
                        .node = "node-" + std::to_string(node),
                        .ranges = R"([[{"subnet":"10.60.0.0/16","blockSize":27}]])",
                        .timeout = "5s",
                        .extra_etcd = R"("dialTimeout":"500ms","requestTimeout":"1s",)"});
  }

  // ADD until it succeeds, as a runtime does; the attempts it took.
  int AddUntilDone(int node, const std::string& id, std::string& address) {
    for (int attempt = 1; attempt <= 30; ++attempt) {
      const auto out = Cni("ADD", NodeConf(node), id);
      if (out.exit_code == 0) {
        address = AddressesOf(out.out).at(0);
        return attempt;
      }
      // Only "try again later" is acceptable while etcd is failing.
      EXPECT_EQ(ErrorCode(out), 11) << id << ": " << out.out;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    ADD_FAILURE() << id << " never succeeded";
    return -1;
  }

  size_t Handles() {
    size_t n = 0;
    for (const auto& [key, value] : etcd_.Dump("/nodegate/ipam/faults/handles/")) {
      (void)key;
      (void)value;
      ++n;
    }
    return n;
  }

  EtcdCluster etcd_;
};

TEST_F(FaultsTest, MemberKilledAndRestartedDuringAStormOfAThousandAdds) {
  constexpr int kNodes = 10, kPerNode = 100;
  std::atomic<int> done{0};
  std::atomic<int> retried{0};
  std::mutex mu;
  std::set<std::string> addresses;
  int duplicates = 0;
  // The member is killed once a quarter of the storm is through, restarted a second later.
  std::thread saboteur([&] {
    while (done < kNodes * kPerNode / 4) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const int victim = etcd_.Leader() ? etcd_.Leader() : 2;
    etcd_.Kill(victim);
    std::this_thread::sleep_for(std::chrono::seconds(1));
    EXPECT_TRUE(etcd_.Restart(victim)) << "member " << victim << " did not come back";
  });
  std::vector<std::thread> nodes;
  for (int n = 0; n < kNodes; ++n) {
    nodes.emplace_back([&, n] {
      for (int i = 0; i < kPerNode; ++i) {
        std::string address;
        const int attempts =
            AddUntilDone(n, "s" + std::to_string(n) + "-" + std::to_string(i), address);
        if (attempts > 1) retried += attempts - 1;
        std::lock_guard lock(mu);
        if (!address.empty() && !addresses.insert(address).second) ++duplicates;
        ++done;
      }
    });
  }
  for (auto& t : nodes) t.join();
  saboteur.join();
  EXPECT_EQ(duplicates, 0);
  EXPECT_EQ(addresses.size(), size_t{kNodes * kPerNode});
  EXPECT_EQ(Handles(), size_t{kNodes * kPerNode});
  EXPECT_EQ(ProblemKinds(NodeConf(0)), std::vector<std::string>{});
  std::cout << "storm: 1000 ADDs from 10 nodes, " << retried
            << " retried while the member was down\n";
}

TEST_F(FaultsTest, LeaderStoppedForFiveSeconds) {
  // Warm the pool up first, so that every node has its block.
  for (int n = 0; n < 3; ++n) {
    std::string ignored;
    ASSERT_EQ(AddUntilDone(n, "warm" + std::to_string(n), ignored), 1);
  }
  const int leader = etcd_.Leader();
  ASSERT_NE(leader, 0);
  etcd_.Pause(leader);
  const auto stopped_at = Clock::now();
  std::atomic<int> succeeded{0}, failed{0};
  std::vector<std::thread> nodes;
  std::mutex mu;
  std::vector<std::pair<int, std::string>> failed_ids;
  for (int n = 0; n < 3; ++n) {
    nodes.emplace_back([&, n] {
      for (int i = 0; Clock::now() - stopped_at < std::chrono::milliseconds(4500); ++i) {
        const std::string id = "p" + std::to_string(n) + "-" + std::to_string(i);
        const auto out = Cni("ADD", NodeConf(n), id);
        if (out.exit_code == 0) {
          ++succeeded;
        } else {
          EXPECT_EQ(ErrorCode(out), 11) << out.out;
          ++failed;
          std::lock_guard lock(mu);
          failed_ids.emplace_back(n, id);
        }
      }
    });
  }
  for (auto& t : nodes) t.join();
  std::this_thread::sleep_for(std::chrono::milliseconds(5000) - (Clock::now() - stopped_at));
  etcd_.Resume(leader);
  ASSERT_TRUE(etcd_.WaitHealthy(30));
  // The other two members elect a leader and serve; each ADD waits at most its timeout.
  EXPECT_GT(succeeded, 0) << failed << " failed";
  // An ADD that failed may have been applied before its answer was lost: repeated, it gets
  // the addresses it was given (or new ones), never another's.
  for (const auto& [n, id] : failed_ids) {
    std::string ignored;
    EXPECT_GE(AddUntilDone(n, id, ignored), 1);
  }
  EXPECT_EQ(ProblemKinds(NodeConf(0)), std::vector<std::string>{});
  std::cout << "leader stopped 5 s: " << succeeded << " ADDs succeeded meanwhile, " << failed
            << " answered 'try again later'\n";
}

TEST_F(FaultsTest, EveryMemberGoneThenBack) {
  const std::string conf = Conf(
      etcd_, {.network = "faults", .timeout = "2s", .extra_etcd = R"("dialTimeout":"500ms",)"});
  ASSERT_EQ(Cni("ADD", conf, "before").exit_code, 0);
  const auto before = etcd_.Dump("/nodegate/ipam/");
  for (int m = 1; m <= 3; ++m) etcd_.Kill(m);
  const auto started = Clock::now();
  const auto add = Cni("ADD", conf, "during");
  EXPECT_EQ(add.exit_code, 1);
  EXPECT_EQ(ErrorCode(add), 11) << add.out;
  EXPECT_NE(add.out.find("no endpoint answered"), std::string::npos) << add.out;
  EXPECT_LT(Clock::now() - started, std::chrono::seconds(4));  // its 2 s timeout, not more
  EXPECT_EQ(ErrorCode(Cni("DEL", conf, "before")), 11);
  EXPECT_EQ(ErrorCode(Cni("STATUS", conf, "")), 50);
  for (int m = 1; m <= 3; ++m) ASSERT_TRUE(etcd_.Relaunch(m));
  ASSERT_TRUE(etcd_.WaitHealthy(30));
  EXPECT_EQ(etcd_.Dump("/nodegate/ipam/"), before);  // nothing was written while they were gone
  const auto after = Cni("ADD", conf, "during");
  EXPECT_EQ(after.exit_code, 0) << after.out;
  EXPECT_EQ(Cni("DEL", conf, "before").exit_code, 0);
  EXPECT_EQ(Cni("DEL", conf, "during").exit_code, 0);
  EXPECT_EQ(ProblemKinds(conf), std::vector<std::string>{});
}

// etcd's own authentication (etcd.username, etcd.password) on top of client certificates: the
// token from /v3/auth/authenticate is sent with every request; wrong credentials and a user
// without rights on the prefix are configuration errors (code 7) that change nothing.
TEST_F(FaultsTest, UsernameAndPassword) {
  const std::string root = " --user root:rootpw ";
  for (const char* command :
       {"user add root:rootpw --interactive=false", "user add ipam:secret --interactive=false",
        "user add other:secret --interactive=false", "role add ipam-rw",
        "role grant-permission ipam-rw readwrite --prefix=true /nodegate/ipam/",
        "user grant-role ipam ipam-rw", "auth enable"}) {
    int code = 1;
    const std::string out = etcd_.Ctl(command, &code);
    ASSERT_EQ(code, 0) << command << ": " << out;
  }
  // etcd 3.4 refuses, once authentication is on, gateway requests whose client certificate has
  // a CommonName ("CommonName of client sending a request against gateway will be ignored"):
  // a certificate without one, as ipam/cluster/README.md says.
  auto conf = [&](const std::string& user, const std::string& password) {
    Json j = Json::parse(Conf(etcd_, {.network = "auth",
                                      .timeout = "3s",
                                      .extra_etcd = R"("username":")" + user + R"(","password":")" +
                                                    password + R"(",)"}));
    j["ipam"]["etcd"]["certFile"] = etcd_.dir() + "/pki/client-nocn.crt";
    j["ipam"]["etcd"]["keyFile"] = etcd_.dir() + "/pki/client-nocn.key";
    return j.dump();
  };
  const auto with_cn = Cni("ADD",
                           Conf(etcd_, {.network = "auth",
                                        .timeout = "3s",
                                        .extra_etcd = R"("username":"ipam","password":"secret",)"}),
                           "a0");
  EXPECT_EQ(ErrorCode(with_cn), 7) << with_cn.out;
  EXPECT_NE(with_cn.out.find("CommonName"), std::string::npos) << with_cn.out;
  const auto add = Cni("ADD", conf("ipam", "secret"), "a1");
  ASSERT_EQ(add.exit_code, 0) << add.out << add.err;
  EXPECT_EQ(Cni("ADD", conf("ipam", "secret"), "a1").out, add.out);
  const auto wrong = Cni("ADD", conf("ipam", "wrong"), "a2");
  EXPECT_EQ(ErrorCode(wrong), 7) << wrong.out;
  EXPECT_NE(wrong.out.find("invalid user ID or password"), std::string::npos) << wrong.out;
  const auto denied = Cni("ADD", conf("other", "secret"), "a3");
  EXPECT_EQ(ErrorCode(denied), 7) << denied.out;
  EXPECT_NE(denied.out.find("permission denied"), std::string::npos) << denied.out;
  EXPECT_EQ(Cni("DEL", conf("ipam", "secret"), "a1").exit_code, 0);
  int code = 1;
  const std::string left =
      etcd_.Ctl(root + "get --prefix /nodegate/ipam/auth/handles/ --keys-only", &code);
  EXPECT_EQ(code, 0);
  EXPECT_EQ(left.find("/handles/"), std::string::npos) << left;
  etcd_.Ctl(root + "auth disable");
}

}  // namespace
}  // namespace nodegate::cluster_ipam::testing
