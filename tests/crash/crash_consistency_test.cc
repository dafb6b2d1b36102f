// Crash consistency of every plugin (issue 13, item 4): each plugin is killed with SIGKILL at
// random points of ADD and DEL while another container of the same node is being added and
// deleted (a concurrent writer), and the next call for the same container must converge:
//   - the next full ADD succeeds and CHECK (with that ADD's result as prevResult) passes;
//   - the next full DEL succeeds and the node's state is exactly what it was before the
//     container ever existed (so no leftovers, and other containers untouched).
// The kill points spread over the whole call: uniform in [0, 1.3 x a full call's median time].
//
// Cycles per plugin: NODEGATE_CRASH_CYCLES (default 30; `make fuzz` runs 500). The random
// seed is printed; NODEGATE_CRASH_SEED replays one run.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/bandwidth/support.h"
#include "tests/support/netns_fixture.h"
#include "tests/support/plugin_runner.h"

namespace nodegate::testing {
namespace {

// What the driver needs of one plugin set-up.
struct Subject {
  // The call of `command` for container `id`, complete but for kill_after_us.
  std::function<PluginCall(const std::string& command, const std::string& id)> call;
  // Everything the plugin manages on this node, as text; equal before and after a container's
  // life exactly when nothing of it is left.
  std::function<std::string()> state;
  // A plugin that makes the container's interface (bridge) gets a DEL after a failed or killed
  // ADD before the next ADD, as runtimes do (a second ADD of an existing eth0 is refused, by
  // the reference too).
  bool del_before_readd = false;
};

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : fallback;
}

// The conf of `call` with `result` (an ADD's output) as prevResult, for CHECK.
PluginCall CheckCall(PluginCall call, const std::string& add_output) {
  auto conf = nlohmann::json::parse(call.stdin_data);
  conf["prevResult"] = nlohmann::json::parse(add_output);
  call.command = "CHECK";
  call.stdin_data = conf.dump();
  return call;
}

// Adds and deletes another container in a loop while running, as a concurrent writer.
class Churn {
 public:
  explicit Churn(const Subject& subject) : subject_(subject) {}
  ~Churn() { Stop(); }
  void Start() {
    running_ = true;
    thread_ = std::thread([this] {
      for (int k = 0; running_; ++k) {
        RunPlugin(subject_.call("ADD", "churn"));
        RunPlugin(subject_.call("DEL", "churn"));
      }
    });
  }
  // Returns once the churning container is deleted.
  void Stop() {
    running_ = false;
    if (thread_.joinable()) thread_.join();
  }

 private:
  const Subject& subject_;
  std::atomic<bool> running_{false};
  std::thread thread_;
};

long MedianMicros(const Subject& subject, const std::string& command) {
  std::vector<long> samples;
  for (int i = 0; i < 5; ++i) {
    if (command == "DEL") RunPlugin(subject.call("ADD", "probe"));
    const auto t0 = std::chrono::steady_clock::now();
    RunPlugin(subject.call(command, "probe"));
    const auto t1 = std::chrono::steady_clock::now();
    samples.push_back(std::chrono::duration_cast<std::chrono::microseconds>(t1 - t0).count());
    if (command == "ADD") RunPlugin(subject.call("DEL", "probe"));
  }
  std::sort(samples.begin(), samples.end());
  return samples[2];
}

// The driver: bystanders first, then the cycles on container "crashx".
void KillAndConverge(const Subject& subject) {
  for (const char* id : {"keep1", "keep2"}) {
    const auto added = RunPlugin(subject.call("ADD", id));
    ASSERT_EQ(added.exit_code, 0) << added.out << added.err;
  }
  const std::string baseline = subject.state();
  const long add_us = MedianMicros(subject, "ADD");
  const long del_us = MedianMicros(subject, "DEL");
  ASSERT_EQ(subject.state(), baseline) << "ADD + DEL of a probe container left state behind";

  const int cycles = EnvInt("NODEGATE_CRASH_CYCLES", 30);
  const unsigned seed = static_cast<unsigned>(EnvInt("NODEGATE_CRASH_SEED", 0)) != 0
                            ? static_cast<unsigned>(EnvInt("NODEGATE_CRASH_SEED", 0))
                            : std::random_device{}();
  std::cout << "crash cycles " << cycles << ", seed " << seed << " (NODEGATE_CRASH_SEED), ADD "
            << add_us << " us, DEL " << del_us << " us" << std::endl;
  std::mt19937 random(seed);
  Churn churn(subject);
  int killed = 0;
  auto killed_call = [&](const std::string& command, long median_us) {
    PluginCall call = subject.call(command, "crashx");
    call.kill_after_us = std::uniform_int_distribution<long>(0, median_us * 13 / 10)(random);
    churn.Start();
    const auto out = RunPlugin(call);
    churn.Stop();
    killed += out.killed ? 1 : 0;
    return *call.kill_after_us;
  };
  auto converge_del = [&](long at_us) {
    const auto del = RunPlugin(subject.call("DEL", "crashx"));
    ASSERT_EQ(del.exit_code, 0) << "after a kill at " << at_us << " us: " << del.out << del.err;
    ASSERT_EQ(subject.state(), baseline) << "after a kill at " << at_us << " us";
  };
  for (int cycle = 0; cycle < cycles && !::testing::Test::HasFatalFailure(); ++cycle) {
    SCOPED_TRACE("cycle " + std::to_string(cycle));
    const long add_at = killed_call("ADD", add_us);
    if (cycle % 2 == 1) {  // straight to DEL after a killed ADD
      converge_del(add_at);
      continue;
    }
    if (subject.del_before_readd) converge_del(add_at);
    const auto add = RunPlugin(subject.call("ADD", "crashx"));
    ASSERT_EQ(add.exit_code, 0) << "after a kill at " << add_at << " us: " << add.out << add.err;
    const auto check = RunPlugin(CheckCall(subject.call("ADD", "crashx"), add.out));
    ASSERT_EQ(check.exit_code, 0) << "after a kill at " << add_at << " us: " << check.out
                                  << check.err;
    converge_del(killed_call("DEL", del_us));
  }
  std::cout << killed << " of the calls were killed before they finished" << std::endl;
  EXPECT_GT(killed, 0);
}

// ---- the plugins

constexpr char kSubnet[] = "10.77.0.0/16";

std::string PortmapConf(const std::string& extra, const std::string& id) {
  // Each container its own ports and address; both protocols, so UDP conntrack flushing runs.
  const std::map<std::string, int> numbers = {
      {"keep1", 1}, {"keep2", 2}, {"churn", 3}, {"crashx", 4}, {"probe", 5}};
  const int n = numbers.at(id);
  const std::string ip = "10.77.1." + std::to_string(n + 2);
  const std::string port = std::to_string(20000 + n * 2);
  return R"({"cniVersion":"1.0.0","name":"crashnet","type":"portmap")" + extra +
         R"(,"runtimeConfig":{"portMappings":[{"hostPort":)" + port +
         R"(,"containerPort":80,"protocol":"tcp"},{"hostPort":)" + port +
         R"(,"containerPort":53,"protocol":"udp"}]},)" +
         R"("prevResult":{"cniVersion":"1.0.0","interfaces":[{"name":"eth0","sandbox":"/x"}],)" +
         R"("ips":[{"interface":0,"address":")" + ip + R"(/16","gateway":"10.77.0.1"}]}})";
}

// `state` lists where the mode writes: nf_tables (nft list ruleset) or the legacy x_tables
// (reading those in another mode would load them, which the plugin would then notice).
void PortmapCrashes(const std::string& extra, const std::string& state) {
  NG_REQUIRE_ROOT();
  TestNetns node("ng-crpm");
  node.MustRun(
      "ip link set lo up && ip link add br0 type veth peer name br0p && ip link set br0p up && ip "
      "addr add 10.77.0.1/16 dev "
      "br0 && ip link set br0 up");
  Subject subject;
  subject.call = [&](const std::string& command, const std::string& id) {
    PluginCall call;
    call.binary = BinPath("portmap");
    call.command = command;
    call.container_id = id;
    call.netns = "/x";
    call.ifname = "eth0";
    call.stdin_data = PortmapConf(extra, id);
    call.run_in_netns = node.path();
    return call;
  };
  subject.state = [&] { return node.MustRun(state); };
  KillAndConverge(subject);
}

constexpr char kNftState[] = "nft list ruleset";
constexpr char kLegacyState[] =
    "iptables-legacy-save -t nat | grep -v '^#'; ip6tables-legacy-save -t nat | grep -v '^#'";

TEST(CrashConsistency, PortmapIptablesNft) {
  PortmapCrashes(R"(,"iptablesMode":"nft")", kNftState);
}
TEST(CrashConsistency, PortmapIptablesLegacy) {
  PortmapCrashes(R"(,"iptablesMode":"legacy")", kLegacyState);
}
TEST(CrashConsistency, PortmapNftables) { PortmapCrashes(R"(,"backend":"nftables")", kNftState); }

TEST(CrashConsistency, HostLocal) {
  NG_REQUIRE_ROOT();
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("ng-crash-ipam-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string conf =
      R"({"cniVersion":"1.0.0","name":"crashnet","ipam":{"type":"host-local",)"
      R"("dataDir":")" +
      dir.string() + R"(","ranges":[[{"subnet":"10.77.0.0/24"}],[{"subnet":"fd00:77::/120"}]]}})";
  Subject subject;
  subject.call = [&](const std::string& command, const std::string& id) {
    PluginCall call;
    call.binary = BinPath("host-local");
    call.command = command;
    call.container_id = id;
    call.netns = "/x";
    call.ifname = "eth0";
    call.stdin_data = conf;
    return call;
  };
  // The reservations (address -> owner); not last_reserved_ip.* (it moves on by design), the
  // lock, or our index (.nodegate, rebuilt whenever it cannot be trusted).
  subject.state = [&] {
    std::vector<std::string> lines;
    for (const auto& entry : std::filesystem::directory_iterator(dir / "crashnet")) {
      const std::string name = entry.path().filename().string();
      if (name == "lock" || name.rfind("last_reserved_ip", 0) == 0 || name[0] == '.') continue;
      lines.push_back(name + " " + RunCommand("cat " + entry.path().string()).output);
    }
    std::sort(lines.begin(), lines.end());
    std::string out;
    for (const auto& l : lines) out += l + "\n";
    return out;
  };
  KillAndConverge(subject);
  std::filesystem::remove_all(dir);
}

TEST(CrashConsistency, Bandwidth) {
  NG_REQUIRE_ROOT();
  using bandwidth::testing::AddContainer;
  using bandwidth::testing::BandwidthConf;
  TestNetns node("ng-crbw");
  std::map<std::string, bandwidth::testing::Container> containers;
  for (const char* id : {"keep1", "keep2", "churn", "crashx", "probe"}) {
    containers[id] = AddContainer(node);
  }
  const std::string rates =
      R"("ingressRate":8000000,"ingressBurst":80000,"egressRate":8000000,"egressBurst":80000)";
  Subject subject;
  subject.call = [&](const std::string& command, const std::string& id) {
    const auto& c = containers.at(id);
    PluginCall call;
    call.binary = BinPath("bandwidth");
    call.command = command;
    call.container_id = id;
    call.netns = c.ns->path();
    call.ifname = c.ifname;
    call.stdin_data = BandwidthConf(c.host_veth, c.ns->path(), rates);
    call.run_in_netns = node.path();
    return call;
  };
  subject.state = [&] {
    return bandwidth::testing::SettledIfbNames(node) + node.MustRun("tc qdisc show") +
           node.MustRun("tc filter show dev " + containers.at("crashx").host_veth + " ingress");
  };
  KillAndConverge(subject);
}

// bridge with host-local, ipMasq (iptables-nft) and macspoofchk, dual-stack: the containers'
// veths, the masquerade chains, the macspoofchk table, the reservations. The bridge itself,
// its addresses and forwarding belong to the node once the first container made them.
TEST(CrashConsistency, Bridge) {
  NG_REQUIRE_ROOT();
  TestNetns node("ng-crbr");
  std::map<std::string, std::unique_ptr<TestNetns>> containers;
  for (const char* id : {"keep1", "keep2", "churn", "crashx", "probe"}) {
    containers[id] = std::make_unique<TestNetns>("ng-crbrc");
  }
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("ng-crash-bridge-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string conf =
      R"({"cniVersion":"1.0.0","name":"crashnet","type":"bridge","bridge":"crbr0",)"
      R"("isGateway":true,"ipMasq":true,"macspoofchk":true,"ipam":{"type":"host-local",)"
      R"("dataDir":")" +
      dir.string() + R"(","ranges":[[{"subnet":"10.77.0.0/24"}],[{"subnet":"fd00:77::/120"}]]}})";
  const std::string ipam_path = std::filesystem::path(BinPath("host-local")).parent_path().string();
  Subject subject;
  subject.del_before_readd = true;
  subject.call = [&](const std::string& command, const std::string& id) {
    PluginCall call;
    call.binary = BinPath("bridge");
    call.command = command;
    call.container_id = id;
    call.netns = containers.at(id)->path();
    call.ifname = "eth0";
    call.path = ipam_path;
    call.stdin_data = conf;
    call.run_in_netns = node.path();
    call.extra_env["PATH"] = "/usr/sbin:/usr/bin:/sbin:/bin";  // iptables is iptables-nft
    return call;
  };
  subject.state = [&] {
    // A DEL leaves the deletion of the pair to a detached child, the interface renamed
    // ngdel<hash> meanwhile (plugins/bridge/links.h): wait (at most 5 s) until no such pair is
    // left, so the veths are counted once the children are done.
    for (int i = 0; i < 250; ++i) {
      bool retired = false;
      for (const auto& [id, ns] : containers) {
        retired = retired || CountListed(*ns, "ip -o link show", "ngdel") > 0;
      }
      if (!retired) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    // ip's stderr is left out: while a killed run's container namespace is being freed, the
    // listing may add "Peer netns reference is invalid" about a veth it still counts.
    std::string out = node.MustRun(
        "ip -o link show type veth 2>/dev/null | wc -l; iptables-nft-save -t nat | grep -v '^#'; "
        "ip6tables-nft-save -t nat | grep -v '^#'; nft list table bridge nat 2>/dev/null; true");
    for (const auto& entry : std::filesystem::directory_iterator(dir / "crashnet")) {
      const std::string name = entry.path().filename().string();
      if (name == "lock" || name.rfind("last_reserved_ip", 0) == 0 || name[0] == '.') continue;
      out += name + " " + RunCommand("cat " + entry.path().string()).output + "\n";
    }
    return out;
  };
  KillAndConverge(subject);
  for (const char* id : {"keep1", "keep2"}) RunPlugin(subject.call("DEL", id));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace nodegate::testing
