// cluster-ipam's node-local agent (`cluster-ipam agent`, ipam/cluster/agent.h) against three
// real etcd members started by this test: the plugin forwarded through the agent answers byte
// for byte as the plugin working alone; an agent killed during a run, stopped (no answer), or
// gone leaves the plugin working directly, and a restarted agent takes over again; concurrent
// ADDs through the agent, and straight to etcd, are serialized per node (no conflicting
// transactions) and never share an address; an etcd member lost under the agent is failed over
// as the plugin fails over; hostile bytes on the socket leave it serving.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "tests/cluster_ipam/harness.h"

namespace nodegate::cluster_ipam::testing {
namespace {

using Clock = std::chrono::steady_clock;
using Json = nlohmann::json;
using nodegate::testing::BinPath;
using nodegate::testing::PluginCall;
using nodegate::testing::RunPlugin;

// Which way a call went, from the plugin's own log line (stderr at debug).
enum class Way { kAgent, kDirectNoAgent, kDirectAfterFailure, kUnknown };
Way WayOf(const nodegate::testing::PluginOutput& out) {
  if (out.err.find("answered by the agent") != std::string::npos) return Way::kAgent;
  if (out.err.find("did not answer") != std::string::npos) return Way::kDirectAfterFailure;
  if (out.err.find("no agent at") != std::string::npos) return Way::kDirectNoAgent;
  return Way::kUnknown;
}

class AgentTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { etcd_ = new EtcdCluster(); }
  static void TearDownTestSuite() {
    delete etcd_;
    etcd_ = nullptr;
  }
  void SetUp() override {
    ASSERT_TRUE(etcd_->ok()) << etcd_->failure();
    dir_ = etcd_->dir() + "/" + ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::create_directories(dir_);
  }

  std::unique_ptr<Agent> StartAgent(const std::string& name) {
    auto agent = std::make_unique<Agent>(dir_ + "/" + name + ".sock", dir_ + "/" + name + ".log");
    EXPECT_TRUE(agent->Start()) << agent->log();
    return agent;
  }

  static std::string C(ConfOptions o) { return Conf(*etcd_, o); }

  // The plugin as a runtime runs it, its log at debug on stderr.
  static nodegate::testing::PluginOutput Call(const std::string& command, const std::string& conf,
                                              const std::string& id,
                                              const std::string& ifname = "eth0") {
    PluginCall call;
    call.binary = BinPath("cluster-ipam");
    call.command = command;
    call.container_id = id;
    call.netns = command == "ADD" || command == "CHECK" ? kNoNetns : "";
    call.ifname = command == "GC" || command == "STATUS" ? "" : ifname;
    call.stdin_data = conf;
    call.extra_env = {{"NODEGATE_LOG_LEVEL", "debug"}};
    return RunPlugin(call);
  }

  // Sum of "N requests" (etcd requests of one verb) over the verbs logged in `log`.
  static int Requests(const std::string& log) {
    static const std::regex counters(R"((\d+) requests, \d+ transactions)");
    int requests = 0;
    for (std::sregex_iterator it(log.begin(), log.end(), counters), end; it != end; ++it) {
      requests += std::stoi((*it)[1]);
    }
    return requests;
  }

  // Sum of "N transactions (M conflicts)" over the verbs logged in `log`.
  static std::pair<int, int> Transactions(const std::string& log) {
    static const std::regex counters(R"((\d+) transactions \((\d+) conflicts\))");
    int transactions = 0, conflicts = 0;
    for (std::sregex_iterator it(log.begin(), log.end(), counters), end; it != end; ++it) {
      transactions += std::stoi((*it)[1]);
      conflicts += std::stoi((*it)[2]);
    }
    return {transactions, conflicts};
  }

  static EtcdCluster* etcd_;
  std::string dir_;
};
EtcdCluster* AgentTest::etcd_ = nullptr;

TEST_F(AgentTest, AnswersByteForByteAsThePluginAlone) {
  auto agent = StartAgent("agent");
  // Two networks of the same shape, one straight to etcd and one through the agent: the same
  // node claims the same first block in each, so every answer must be the same bytes.
  // Networks <name>-a and <name>-d: an error naming a key names its network.
  auto conf = [&](bool via_agent, const std::string& version, const std::string& ranges,
                  const std::string& network = "same") {
    return C({.version = version,
              .network = network + (via_agent ? "-a" : "-d"),
              .ranges = ranges,
              .agent_socket = via_agent ? agent->socket() : ""});
  };
  const std::string pool = R"([[{"subnet":"10.70.0.0/24","blockSize":28}]])";
  const std::string tiny = R"([[{"subnet":"10.71.0.0/30"}]])";
  struct Step {
    std::string command, id, version, ranges, with_prev = "", network = "same";
    int code = 0;  // the CNI error expected, 0 for success
  };
  const std::vector<Step> steps = {
      {"ADD", "c1", "1.1.0", pool},
      {"ADD", "c1", "1.1.0", pool},  // idempotent
      {"ADD", "c2", "0.3.1", pool},
      {"ADD", "c3", "0.4.0", pool},
      {"ADD", "c4", "0.2.0", pool},
      {"ADD", "c5", "1.0.0", pool},
      {"CHECK", "c1", "1.1.0", pool, "c1"},
      {"CHECK", "c2", "1.1.0", pool, "c1", "same", 103},  // another's prevResult
      {"DEL", "c1", "1.1.0", pool},
      {"DEL", "c1", "1.1.0", pool},  // idempotent
      {"CHECK", "c1", "1.1.0", pool, "", "same", 103},
      {"STATUS", "", "1.1.0", pool},
      {"ADD", "t1", "1.1.0", tiny, "", "tiny"},
      {"ADD", "t2", "1.1.0", tiny, "", "tiny", 101},  // exhausted (.1 is the gateway)
      {"STATUS", "", "1.1.0", tiny, "", "tiny", 50},
      {"ADD", "bad", "1.1.0", R"([[{"subnet":"10.72.0.0/26","blockSize":24}]])", "", "same", 7},
      {"ADD", "bad", "9.9.9", pool, "", "same", 1},
  };
  std::map<std::string, std::string> first_result[2];
  for (const Step& step : steps) {
    std::string out[2];
    int exit_code[2];
    for (int via = 0; via < 2; ++via) {
      const bool via_agent = via == 1;
      std::string c = conf(via_agent, step.version, step.ranges, step.network);
      if (!step.with_prev.empty()) {
        Json j = Json::parse(c);
        j["prevResult"] = Json::parse(first_result[via][step.with_prev]);
        c = j.dump();
      }
      const auto result = Call(step.command, c, step.id);
      out[via] = result.out;
      exit_code[via] = result.exit_code;
      if (step.command == "ADD" && result.exit_code == 0 && !first_result[via].count(step.id)) {
        first_result[via][step.id] = result.out;
      }
      EXPECT_EQ(WayOf(result), via_agent ? Way::kAgent : Way::kUnknown)
          << step.command << " " << step.id << ": " << result.err;
    }
    std::string agent_out = out[1];
    for (size_t at; (at = agent_out.find(step.network + "-a")) != std::string::npos;) {
      agent_out.replace(at, step.network.size() + 2, step.network + "-d");
    }
    EXPECT_EQ(agent_out, out[0]) << step.command << " " << step.id << " " << step.version;
    EXPECT_EQ(exit_code[1], exit_code[0]) << step.command << " " << step.id;
    EXPECT_EQ(exit_code[0], step.code == 0 ? 0 : 1) << step.command << " " << step.id << out[0];
    if (step.code != 0) {
      EXPECT_EQ(ErrorCode({exit_code[0], out[0]}), step.code) << step.command << " " << step.id;
    }
  }
  // GC through the agent releases what the runtime no longer has, as GC alone does.
  for (int via = 0; via < 2; ++via) {
    Json j = Json::parse(conf(via == 1, "1.1.0", pool));
    j["cni.dev/valid-attachments"] = Json::array({{{"containerID", "c2"}, {"ifname", "eth0"}}});
    const auto gc = Call("GC", j.dump(), "");
    EXPECT_EQ(gc.exit_code, 0) << gc.out << gc.err;
    const auto handles =
        etcd_->Dump(std::string("/nodegate/ipam/") + (via ? "same-a" : "same-d") + "/handles/");
    ASSERT_EQ(handles.size(), 1u);
    EXPECT_NE(handles.begin()->first.find("/handles/c2/eth0"), std::string::npos);
  }
  EXPECT_TRUE(agent->Alive());
}

TEST_F(AgentTest, KilledStoppedAndRestartedAgentLeavesThePluginWorking) {
  auto agent = StartAgent("agent");
  const std::string conf = C({.network = "fallback",
                              .ranges = R"([[{"subnet":"10.73.0.0/22","blockSize":26}]])",
                              .agent_socket = agent->socket()});
  std::atomic<int> done{0};
  std::thread killer([&] {
    while (done < 40) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    agent->Kill();  // during a run of ADDs, 4 at a time: some calls are cut mid-verb
  });
  const auto adds = InParallel(160, 4, [&](int i) {
    auto out = Call("ADD", conf, "k" + std::to_string(i));
    ++done;
    return out;
  });
  killer.join();
  std::map<Way, int> ways;
  std::set<std::string> addresses;
  for (const auto& add : adds) {
    ASSERT_EQ(add.exit_code, 0) << add.out << add.err;
    ++ways[WayOf(add)];
    for (const auto& ip : AddressesOf(add.out)) {
      EXPECT_TRUE(addresses.insert(ip).second) << "duplicate " << ip;
    }
  }
  EXPECT_GE(ways[Way::kAgent], 40);
  EXPECT_GE(ways[Way::kDirectNoAgent] + ways[Way::kDirectAfterFailure], 1);
  EXPECT_EQ(ways[Way::kUnknown], 0);
  // Every ADD cut inside the agent was done again directly, with the same handle: nothing doubled.
  EXPECT_EQ(etcd_->Dump("/nodegate/ipam/fallback/handles/").size(), 160u);

  // A stopped agent accepts connections (the kernel does) but never says "accepted": the
  // plugin waits its short bound and works directly.
  auto stopped = StartAgent("stopped");
  const std::string stopped_conf = C({.network = "fallback",
                                      .ranges = R"([[{"subnet":"10.73.0.0/22","blockSize":26}]])",
                                      .agent_socket = stopped->socket()});
  stopped->Stop();
  const auto start = Clock::now();
  const auto add = Call("ADD", stopped_conf, "while-stopped");
  EXPECT_EQ(add.exit_code, 0) << add.out << add.err;
  EXPECT_EQ(WayOf(add), Way::kDirectAfterFailure) << add.err;
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(4));
  stopped->Continue();
  // Now serving again: the call it held finds the plugin gone and is dropped or answered
  // (ADD is idempotent either way); the next call is the agent's.
  const auto again = Call("ADD", stopped_conf, "while-stopped");
  EXPECT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_EQ(WayOf(again), Way::kAgent) << again.err;
  EXPECT_EQ(AddressesOf(again.out), AddressesOf(add.out));

  // Restarted on the killed agent's socket (a stale file, no listener): the agent serves again.
  auto restarted = std::make_unique<Agent>(agent->socket(), dir_ + "/restarted.log");
  ASSERT_TRUE(restarted->Start()) << restarted->log();
  for (int i = 0; i < 10; ++i) {
    const auto out = Call("ADD", conf, "after-restart-" + std::to_string(i));
    ASSERT_EQ(out.exit_code, 0) << out.out << out.err;
    EXPECT_EQ(WayOf(out), Way::kAgent) << out.err;
    for (const auto& ip : AddressesOf(out.out)) {
      EXPECT_TRUE(addresses.insert(ip).second) << "duplicate " << ip;
    }
  }
  // A second agent on a socket that is served is refused.
  Agent second(agent->socket(), dir_ + "/second.log");
  EXPECT_FALSE(second.Start());
  EXPECT_NE(second.log().find("another agent is serving"), std::string::npos) << second.log();

  // SIGTERM: exits 0 and removes its socket; the plugin then says there is no agent.
  EXPECT_EQ(restarted->Terminate(), 0) << restarted->log();
  struct stat st {};
  EXPECT_NE(::lstat(agent->socket().c_str(), &st), 0);
  const auto after = Call("DEL", conf, "after-restart-0");
  EXPECT_EQ(after.exit_code, 0) << after.out << after.err;
  EXPECT_EQ(WayOf(after), Way::kDirectNoAgent) << after.err;
  EXPECT_TRUE(ProblemKinds(conf).empty());
}

TEST_F(AgentTest, ConcurrentAddsOfANodeAreSerializedAndNeverShareAnAddress) {
  // Three nodes, each with its agent; 150 ADDs, 10 at a time, 5 per node at once.
  std::vector<std::unique_ptr<Agent>> agents;
  for (int n = 0; n < 3; ++n) agents.push_back(StartAgent("node-" + std::to_string(n)));
  // Blocks of 64: after each node's first ADD (one at a time: the network's first claims meet
  // on the pool key), the 50 ADDs of a node stay in its block, so a conflict could only be
  // two ADDs of one node meeting.
  const std::string ranges = R"([[{"subnet":"10.74.0.0/22","blockSize":26}]])";
  auto conf = [&](int node, bool via_agent) {
    return C({.network = "serialized",
              .node = "node-" + std::to_string(node),
              .ranges = ranges,
              .agent_socket = via_agent ? agents[node]->socket() : ""});
  };
  for (int n = 0; n < 3; ++n) {
    const auto first = Call("ADD", conf(n, true), "w" + std::to_string(n));
    ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  }
  const std::size_t logged[3] = {agents[0]->log().size(), agents[1]->log().size(),
                                 agents[2]->log().size()};
  const auto adds = InParallel(
      150, 10, [&](int i) { return Call("ADD", conf(i % 3, true), "a" + std::to_string(i)); });
  std::set<std::string> addresses;
  for (const auto& add : adds) {
    ASSERT_EQ(add.exit_code, 0) << add.out << add.err;
    EXPECT_EQ(WayOf(add), Way::kAgent) << add.err;
    for (const auto& ip : AddressesOf(add.out)) {
      EXPECT_TRUE(addresses.insert(ip).second) << "duplicate " << ip;
    }
  }
  // One verb of a node at a time: no transaction of an agent lost a compare to its own node.
  int transactions = 0;
  int requests = 0;
  for (int n = 0; n < 3; ++n) {
    const std::string storm_log = agents[n]->log().substr(logged[n]);
    const auto [t, conflicts] = Transactions(storm_log);
    EXPECT_EQ(conflicts, 0) << agents[n]->log();
    transactions += t;
    requests += Requests(storm_log);
  }
  EXPECT_EQ(transactions, 150);
  // Each ADD after a node's first starts from the view the agent kept: its transaction alone.
  EXPECT_EQ(requests, 150);

  // The exec'd plugin alone takes the node lock too: 40 ADDs of one node, 10 at a time (it
  // claims a second block on the way, alone).
  const auto direct = InParallel(
      40, 10, [&](int i) { return Call("ADD", conf(0, false), "d" + std::to_string(i)); });
  int conflicts = 0;
  for (const auto& add : direct) {
    ASSERT_EQ(add.exit_code, 0) << add.out << add.err;
    conflicts += Transactions(add.err).second;
    for (const auto& ip : AddressesOf(add.out)) {
      EXPECT_TRUE(addresses.insert(ip).second) << "duplicate " << ip;
    }
  }
  EXPECT_EQ(conflicts, 0);
  EXPECT_EQ(etcd_->Dump("/nodegate/ipam/serialized/handles/").size(), 193u);
  EXPECT_TRUE(ProblemKinds(conf(0, false)).empty());
}

TEST_F(AgentTest, AnEtcdMemberLostUnderTheAgentIsFailedOver) {
  auto agent = StartAgent("agent");
  const std::string conf = C({.network = "members",
                              .ranges = R"([[{"subnet":"10.75.0.0/22","blockSize":26}]])",
                              .timeout = "8s",
                              .extra_etcd = R"("dialTimeout":"500ms","requestTimeout":"1s",)",
                              .agent_socket = agent->socket()});
  int n = 0;
  // Each member in turn killed (the agent's warm connection is to one of them), 10 ADDs
  // through the agent, the member restarted.
  for (int member = 1; member <= etcd_->members(); ++member) {
    etcd_->Kill(member);
    for (int i = 0; i < 10; ++i, ++n) {
      const auto out = Call("ADD", conf, "m" + std::to_string(n));
      ASSERT_EQ(out.exit_code, 0) << "member " << member << " down: " << out.out << out.err;
      EXPECT_EQ(WayOf(out), Way::kAgent) << out.err;
    }
    ASSERT_TRUE(etcd_->Restart(member)) << "member " << member << " did not come back";
  }
  EXPECT_EQ(etcd_->Dump("/nodegate/ipam/members/handles/").size(), size_t(n));
  EXPECT_TRUE(agent->Alive());
}

// Connects to `socket`, writes `bytes` (shutting the write side when `close_write`), and
// returns what the agent wrote before closing (at most 2 s).
std::string Poke(const std::string& socket, const std::string& bytes, bool close_write = true) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof address.sun_path, "%s", socket.c_str());
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd);
    return "<connect failed>";
  }
  timeval timeout{.tv_sec = 3, .tv_usec = 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  (void)::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  if (close_write) ::shutdown(fd, SHUT_WR);
  std::string answer;
  char buffer[4096];
  for (ssize_t r; (r = ::recv(fd, buffer, sizeof buffer, 0)) > 0;) answer.append(buffer, r);
  ::close(fd);
  return answer;
}

TEST_F(AgentTest, HostileBytesOnTheSocketLeaveItServing) {
  auto agent = StartAgent("agent");
  const std::string conf = C({.network = "hostile-agent",
                              .ranges = R"([[{"subnet":"10.76.0.0/24"}]])",
                              .agent_socket = agent->socket()});
  const std::string good_env =
      R"({"CNI_COMMAND":"ADD","CNI_CONTAINERID":"x","CNI_IFNAME":"eth0","CNI_NETNS":"/x"})";
  // Each refused without "accepted", or (a valid request with a bad config) answered with a
  // CNI error: never a crash.
  const std::vector<std::string> refused = {
      "",
      "not json",
      "[1,2,3]",
      "{}",
      R"({"agent":2,"env":)" + good_env + R"(,"stdin":"{}"})",
      R"({"agent":1,"env":{"LD_PRELOAD":"/x.so"},"stdin":"{}"})",
      R"({"agent":1,"env":{"CNI_COMMAND":"VERSION"},"stdin":"{}"})",
      R"({"agent":1,"env":)" + good_env + R"(,"stdin":7})",
      R"({"agent":1,"env":)" + good_env + R"(,"stdin":"{}","more":1})",
      R"({"agent":1,"env":{"CNI_COMMAND":1},"stdin":"{}"})",
      std::string(2 << 20, '{'),  // larger than 1 MiB
      std::string("{\"agent\":1,\0\xff\xfe", 14),
  };
  for (const auto& bytes : refused) {
    EXPECT_EQ(Poke(agent->socket(), bytes), "") << bytes.substr(0, 80);
  }
  std::mt19937 random(49);
  for (int i = 0; i < 200; ++i) {
    std::string bytes(random() % 512, '\0');
    for (auto& b : bytes) b = static_cast<char>(random());
    EXPECT_EQ(Poke(agent->socket(), bytes), "");
  }
  // A valid request whose config is not valid: a CNI error from the dispatcher, as the plugin.
  const std::string answer =
      Poke(agent->socket(), R"({"agent":1,"env":)" + good_env + R"(,"stdin":"{\"cniVersion\":"})");
  ASSERT_EQ(answer.rfind("accepted\n", 0), 0u) << answer;
  const Json reply = Json::parse(answer.substr(9), nullptr, false);
  ASSERT_TRUE(reply.is_object()) << answer;
  EXPECT_EQ(reply["exit"], 1);
  EXPECT_TRUE(Json::parse(reply["stdout"].get<std::string>(), nullptr, false).contains("code"));
  // A request never finished (no EOF) is dropped after the agent's read bound.
  EXPECT_EQ(Poke(agent->socket(), R"({"agent":1,)", false), "");
  // 80 idle connections at once (the agent serves 64): the plugin still gets its address.
  std::vector<int> idle;
  for (int i = 0; i < 80; ++i) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::snprintf(address.sun_path, sizeof address.sun_path, "%s", agent->socket().c_str());
    if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0) {
      idle.push_back(fd);
    } else {
      ::close(fd);
    }
  }
  const auto during = Call("ADD", conf, "during-flood");
  EXPECT_EQ(during.exit_code, 0) << during.out << during.err;
  for (int fd : idle) ::close(fd);
  ASSERT_TRUE(agent->Alive()) << agent->log();
  const auto after = Call("ADD", conf, "after");
  EXPECT_EQ(after.exit_code, 0) << after.out << after.err;
  EXPECT_EQ(WayOf(after), Way::kAgent) << after.err;
  EXPECT_NE(agent->log().find("refused a request"), std::string::npos);
}

}  // namespace
}  // namespace nodegate::cluster_ipam::testing
