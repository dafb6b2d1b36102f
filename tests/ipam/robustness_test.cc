// Process-level robustness of build/bin/host-local: parallel ADD/DEL (also mixed with the
// reference, which shares our flock), kill -9 at random points followed by GC, malformed
// configs (right code, nothing written), and the GC/STATUS verbs.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <future>
#include <random>
#include <set>
#include <thread>

#include "tests/ipam/process_util.h"

namespace nodegate::ipam::testing {
namespace {

const char* kWide = R"("ranges":[[{"subnet":"10.20.0.0/16"}]])";
const char* kDual = R"("ranges":[[{"subnet":"10.21.0.0/24"}],[{"subnet":"2001:db8:21::/120"}]])";

using RobustnessTest = IpamProcessTest;

// Runs fn(i) for i in [0, n) all at once, one thread each.
template <typename F>
std::vector<PluginOutput> Parallel(int n, F fn) {
  std::vector<std::future<PluginOutput>> futures;
  for (int i = 0; i < n; ++i) futures.push_back(std::async(std::launch::async, fn, i));
  std::vector<PluginOutput> out;
  for (auto& f : futures) out.push_back(f.get());
  return out;
}

std::string FirstAddress(const std::string& result) {
  auto j = cni::Json::parse(result, nullptr, false);
  if (j.is_discarded() || !j.contains("ips")) return "";
  return j["ips"][0]["address"].get<std::string>();
}

TEST_F(RobustnessTest, HundredParallelAddsNeverShareAnAddressAndDelsLeaveNothing) {
  const std::string dir = root_ + "/par";
  const std::string conf = MakeConf(dir, kWide);
  auto adds =
      Parallel(100, [&](int i) { return Run(Ours(), "ADD", "p" + std::to_string(i), conf); });
  std::set<std::string> addresses;
  for (const auto& out : adds) {
    ASSERT_EQ(out.exit_code, 0) << out.out << out.err;
    addresses.insert(FirstAddress(out.out));
  }
  EXPECT_EQ(addresses.size(), 100u);
  auto files = Reservations(dir + "/net1");
  EXPECT_EQ(files.size(), 100u);
  auto dels =
      Parallel(100, [&](int i) { return Run(Ours(), "DEL", "p" + std::to_string(i), conf); });
  for (const auto& out : dels) EXPECT_EQ(out.exit_code, 0) << out.out;
  EXPECT_TRUE(Reservations(dir + "/net1").empty());
}

TEST_F(RobustnessTest, ParallelWithTheReferenceSharesTheLock) {
  const std::string dir = root_ + "/mix";
  const std::string conf = MakeConf(dir, kWide);
  auto adds = Parallel(
      60, [&](int i) { return Run(i % 2 ? Ours() : Ref(), "ADD", "m" + std::to_string(i), conf); });
  std::set<std::string> addresses;
  for (const auto& out : adds) {
    ASSERT_EQ(out.exit_code, 0) << out.out << out.err;
    addresses.insert(FirstAddress(out.out));
  }
  EXPECT_EQ(addresses.size(), 60u);
  EXPECT_EQ(Reservations(dir + "/net1").size(), 60u);
  auto dels = Parallel(
      60, [&](int i) { return Run(i % 2 ? Ref() : Ours(), "DEL", "m" + std::to_string(i), conf); });
  for (const auto& out : dels) EXPECT_EQ(out.exit_code, 0) << out.out;
  EXPECT_TRUE(Reservations(dir + "/net1").empty());
}

// Starts the plugin with stdin from a file, stdout/stderr discarded, inside the test netns.
pid_t Spawn(const std::string& bin, const std::vector<std::string>& env_vars,
            const std::string& stdin_path, int netns_fd) {
  std::vector<std::string> env = env_vars;
  std::vector<char*> envp;
  for (auto& s : env) envp.push_back(s.data());
  envp.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::setns(netns_fd, CLONE_NEWNET) != 0) ::_exit(126);
    const int in = ::open(stdin_path.c_str(), O_RDONLY);
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(in, 0);
    ::dup2(null, 1);
    ::dup2(null, 2);
    char* argv[] = {const_cast<char*>(bin.c_str()), nullptr};
    ::execve(bin.c_str(), argv, envp.data());
    ::_exit(127);
  }
  return pid;
}

TEST_F(RobustnessTest, KillNineAtRandomPointsThenGcRestoresTheLiveSet) {
  const std::string dir = root_ + "/crash";
  const std::string net_dir = dir + "/net1";
  const std::string conf = MakeConf(dir, kDual);
  const std::string conf_path = root_ + "/crash.json";
  std::ofstream(conf_path) << conf;
  const int netns_fd = ::open(ns_->path().c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(netns_fd, 0);

  std::mt19937 rng(12345);
  const int kPool = 16;
  int killed_running = 0;
  for (int iter = 0; iter < 160; ++iter) {
    const std::string id = "k" + std::to_string(rng() % kPool);
    const bool add = rng() % 3 != 0;
    const pid_t pid =
        Spawn(Ours(),
              {std::string("CNI_COMMAND=") + (add ? "ADD" : "DEL"), "CNI_CONTAINERID=" + id,
               "CNI_NETNS=" + ns_->path(), "CNI_IFNAME=eth0", "CNI_PATH=/usr/lib/cni"},
              conf_path, netns_fd);
    ASSERT_GT(pid, 0);
    // Sometimes let it finish, mostly cut it somewhere between exec and exit (a call takes
    // about 2 ms on an idle machine).
    if (rng() % 5 != 0) {
      ::usleep(rng() % 1500);
      ::kill(pid, SIGKILL);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (WIFSIGNALED(status)) ++killed_running;
  }
  ::close(netns_fd);
  EXPECT_GT(killed_running, 20) << "the loop should really kill running plugins";

  // Whatever the kills left, the live containers' valid reservations are what GC must keep.
  std::set<std::string> live_ids;
  for (int i = 0; i < kPool; i += 2) live_ids.insert("k" + std::to_string(i));
  std::map<std::string, std::string> expected;
  for (const auto& [name, content] : Reservations(net_dir)) {
    const auto crlf = content.find("\r\n");
    if (crlf != std::string::npos && live_ids.count(content.substr(0, crlf)) &&
        content.substr(crlf + 2) == "eth0") {
      expected[name] = content;
    }
  }
  cni::Json gc = cni::Json::parse(MakeConf(dir, kDual, "1.1.0"));
  gc["cni.dev/valid-attachments"] = cni::Json::array();
  for (const auto& id : live_ids)
    gc["cni.dev/valid-attachments"].push_back({{"containerID", id}, {"ifname", "eth0"}});
  PluginCall call;
  call.binary = Ours();
  call.command = "GC";
  call.stdin_data = gc.dump();
  call.run_in_netns = ns_->path();
  auto out = RunPlugin(call);
  ASSERT_EQ(out.exit_code, 0) << out.out << out.err;
  EXPECT_EQ(Reservations(net_dir), expected);
  for (const auto& e : fs::directory_iterator(net_dir)) {
    EXPECT_NE(e.path().filename().string().rfind(".tmp-", 0), 0u) << e.path();
  }

  // The survivors complete idempotently: one address per range set each, no address shared.
  std::set<std::string> addresses;
  for (const auto& id : live_ids) {
    auto add = Run(Ours(), "ADD", id, conf);
    ASSERT_EQ(add.exit_code, 0) << id << ": " << add.out;
    auto j = cni::Json::parse(add.out);
    ASSERT_EQ(j["ips"].size(), 2u);
    for (const auto& ip : j["ips"]) {
      std::string a = ip["address"];
      EXPECT_TRUE(addresses.insert(a.substr(0, a.find('/'))).second) << a;
    }
  }
  auto files = Reservations(net_dir);
  EXPECT_EQ(files.size(), addresses.size());
  for (const auto& a : addresses) EXPECT_TRUE(files.count(a)) << a;
  // The reference agrees with every reservation, and ours releases all of them.
  for (const auto& id : live_ids) EXPECT_EQ(Run(Ref(), "CHECK", id, conf).exit_code, 0) << id;
  for (const auto& id : live_ids) ASSERT_EQ(Run(Ours(), "DEL", id, conf).exit_code, 0);
  EXPECT_TRUE(Reservations(net_dir).empty());
}

struct BadInput {
  const char* name;
  std::string conf;  // "DATADIR" is replaced
  std::string args;
  int code;
};

// A runtime stops tearing down a chain at the first failing DEL, so DEL releases the
// container's reservation whatever else in its config or CNI_ARGS cannot be read.
TEST_F(RobustnessTest, DelWithAnUnreadableConfigReleasesTheReservation) {
  const std::string data_dir = root_ + "/unreadable";
  const std::string good = MakeConf(data_dir, R"("ranges":[[{"subnet":"10.31.0.0/24"}]])");
  const std::vector<std::pair<std::string, std::string>> unreadable = {
      {MakeConf(data_dir, R"("ranges":[[{"subnet":"banana"}]])"), ""},
      {MakeConf(data_dir, R"("ranges":"10.31.0.0/24")"), ""},
      {MakeConf(data_dir, R"("ranges":[[{"subnet":"10.31.0.0/24"}]])", "1.0.0",
                R"("args":{"cni":{"ips":[7]}},"runtimeConfig":[],)"),
       ""},
      {good, "IP"},  // CNI_ARGS that are not pairs
      {good, "IP=10.31.0.50/99;FOO=1"},
  };
  ASSERT_EQ(Run(Ours(), "ADD", "other", good).exit_code, 0);
  for (const auto& [conf, args] : unreadable) {
    SCOPED_TRACE(conf + " CNI_ARGS=" + args);
    const auto add = Run(Ours(), "ADD", "c1", good);
    ASSERT_EQ(add.exit_code, 0) << add.out;
    ASSERT_EQ(Reservations(data_dir + "/net1").size(), 2u);
    const auto del = Run(Ours(), "DEL", "c1", conf, args);
    EXPECT_EQ(del.exit_code, 0) << del.out << del.err;
    const auto left = Reservations(data_dir + "/net1");
    ASSERT_EQ(left.size(), 1u);
    EXPECT_EQ(left.begin()->second.rfind("other", 0), 0u);
  }
}

TEST_F(RobustnessTest, MalformedConfigsGiveTheRightCodeAndWriteNothing) {
  const std::string ok_ranges = R"("ranges":[[{"subnet":"10.30.0.0/24"}]])";
  const BadInput cases[] = {
      {"not json", "{", "", 6},
      {"no ipam", R"({"cniVersion":"1.0.0","name":"n"})", "", 7},
      {"no ranges", MakeConf("DATADIR", R"("routes":[])"), "", 7},
      {"network name with slash", MakeConf("DATADIR", ok_ranges, "1.0.0", "", "a/b"), "", 7},
      {"network name ..", MakeConf("DATADIR", ok_ranges, "1.0.0", "", ".."), "", 7},
      {"dataDir escapes", MakeConf("DATADIR/../../etc", ok_ranges), "", 7},
      {"ranges wrong type", MakeConf("DATADIR", R"("ranges":"10.30.0.0/24")"), "", 6},
      {"subnet /31", MakeConf("DATADIR", R"("ranges":[[{"subnet":"10.30.0.0/31"}]])"), "", 7},
      {"host bits", MakeConf("DATADIR", R"("ranges":[[{"subnet":"10.30.0.1/24"}]])"), "", 7},
      {"bad subnet", MakeConf("DATADIR", R"("ranges":[[{"subnet":"banana"}]])"), "", 7},
      {"end before start",
       MakeConf(
           "DATADIR",
           R"("ranges":[[{"subnet":"10.30.0.0/24","rangeStart":"10.30.0.9","rangeEnd":"10.30.0.2"}]])"),
       "", 7},
      {"mixed families",
       MakeConf("DATADIR", R"("ranges":[[{"subnet":"10.30.0.0/24"},{"subnet":"2001:db8::/64"}]])"),
       "", 7},
      {"overlapping sets",
       MakeConf("DATADIR", R"("ranges":[[{"subnet":"10.30.0.0/24"}],[{"subnet":"10.30.0.0/16"}]])"),
       "", 7},
      {"route without dst",
       MakeConf("DATADIR", std::string(R"("routes":[{"gw":"10.30.0.1"}],)") + ok_ranges), "", 7},
      {"bad requested ip",
       MakeConf("DATADIR", ok_ranges, "1.0.0", R"("args":{"cni":{"ips":["x"]}},)"), "", 7},
      {"unknown CNI_ARGS", MakeConf("DATADIR", ok_ranges), "FOO=1", 4},
      {"CNI_ARGS not pairs", MakeConf("DATADIR", ok_ranges), "IP", 4},
      {"missing resolvConf",
       MakeConf("DATADIR", std::string(R"("resolvConf":"/nonexistent/r.conf",)") + ok_ranges), "",
       5},
      {"resolvConf /dev/zero",
       MakeConf("DATADIR", std::string(R"("resolvConf":"/dev/zero",)") + ok_ranges), "", 5},
      {"unsupported version", MakeConf("DATADIR", ok_ranges, "9.9.9"), "", 1},
  };
  // DEL needs only what locates the attachment's reservations: JSON, version, name, dataDir.
  // Anything else unreadable is logged, and a DEL with nothing to release writes nothing.
  const std::set<std::string> del_fails = {
      "not json",        "no ipam",         "network name with slash",
      "network name ..", "dataDir escapes", "unsupported version"};
  int n = 0;
  for (const auto& c : cases) {
    for (const char* verb : {"ADD", "DEL"}) {
      // A DEL reads no resolvConf: that config is a fine one for DEL.
      if (std::string(verb) == "DEL" && std::string(c.name).find("resolvConf") != std::string::npos)
        continue;
      if (std::string(verb) == "DEL" && del_fails.count(c.name) == 0) {
        const std::string data_dir = root_ + "/bad" + std::to_string(n++) + "/data";
        std::string conf = c.conf;
        for (size_t p; (p = conf.find("DATADIR")) != std::string::npos;)
          conf.replace(p, 7, data_dir);
        auto out = Run(Ours(), verb, "c1", conf, c.args);
        EXPECT_EQ(out.exit_code, 0) << c.name << " DEL: " << out.out;
        EXPECT_FALSE(fs::exists(fs::path(data_dir).parent_path())) << c.name << " wrote state";
        continue;
      }
      const std::string data_dir = root_ + "/bad" + std::to_string(n++) + "/data";
      std::string conf = c.conf;
      for (size_t p; (p = conf.find("DATADIR")) != std::string::npos;) conf.replace(p, 7, data_dir);
      auto out = Run(Ours(), verb, "c1", conf, c.args);
      EXPECT_EQ(out.exit_code, 1) << c.name << " " << verb;
      auto j = ErrorJson(out);
      ASSERT_FALSE(j.is_discarded()) << c.name << " " << verb << ": " << out.out;
      EXPECT_EQ(j.value("code", -1), c.code) << c.name << " " << verb << ": " << out.out;
      EXPECT_FALSE(j.value("msg", "").empty()) << c.name;
      EXPECT_FALSE(fs::exists(fs::path(data_dir).parent_path())) << c.name << " wrote state";
    }
  }
  EXPECT_FALSE(fs::exists("/etc/net1")) << "dataDir traversal must never create this";
}

TEST_F(RobustnessTest, StatusReportsFullRangeSetAndGcReleasesTheDead) {
  const std::string dir = root_ + "/gc";
  const std::string body =
      R"("ranges":[[{"subnet":"10.40.0.0/29","rangeStart":"10.40.0.2","rangeEnd":"10.40.0.3"}]])";
  const std::string conf = MakeConf(dir, body, "1.1.0");
  auto status_of = [&](const std::string& stdin_data) {
    PluginCall call;
    call.binary = Ours();
    call.command = "STATUS";
    call.stdin_data = stdin_data;
    call.run_in_netns = ns_->path();
    return RunPlugin(call);
  };
  EXPECT_EQ(status_of(conf).exit_code, 0);
  ASSERT_EQ(Run(Ours(), "ADD", "a", conf).exit_code, 0);
  ASSERT_EQ(Run(Ours(), "ADD", "b", conf).exit_code, 0);
  auto full = status_of(conf);
  EXPECT_EQ(full.exit_code, 1);
  EXPECT_EQ(ErrorJson(full).value("code", 0), 50) << full.out;
  auto exhausted = Run(Ours(), "ADD", "c", conf);
  EXPECT_EQ(ErrorJson(exhausted).value("code", 0), 101) << exhausted.out;

  auto gc = [&](const char* key, cni::Json list) {
    cni::Json j = cni::Json::parse(conf);
    j[key] = list;
    PluginCall call;
    call.binary = Ours();
    call.command = "GC";
    call.stdin_data = j.dump();
    call.run_in_netns = ns_->path();
    return RunPlugin(call);
  };
  auto first = gc("cni.dev/valid-attachments",
                  cni::Json::array({{{"containerID", "a"}, {"ifname", "eth0"}}}));
  ASSERT_EQ(first.exit_code, 0) << first.out;
  EXPECT_EQ(Reservations(dir + "/net1"),
            (std::map<std::string, std::string>{{"10.40.0.2", "a\r\neth0"}}));
  EXPECT_EQ(status_of(conf).exit_code, 0);
  // The spec tag's key, and an empty list: release everything.
  ASSERT_EQ(gc("cni.dev/attachments", cni::Json::array()).exit_code, 0);
  EXPECT_TRUE(Reservations(dir + "/net1").empty());
  // STATUS of a config whose ranges come only from the runtime: nothing to judge, success.
  EXPECT_EQ(status_of(MakeConf(dir, R"("routes":[])", "1.1.0")).exit_code, 0);
}

}  // namespace
}  // namespace nodegate::ipam::testing
