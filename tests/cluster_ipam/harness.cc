#include "tests/cluster_ipam/harness.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

namespace nodegate::cluster_ipam::testing {
namespace {

using Clock = std::chrono::steady_clock;
using Json = nlohmann::json;

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream out;
  out << in.rdbuf();
  return out.str();
}

// fork/exec of argv with stdout and stderr to files of `dir`.
IpamRun RunArgv(const std::vector<std::string>& args, const std::string& dir) {
  IpamRun run;
  const std::string out = dir + "/stdout", err = dir + "/stderr";
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int in = ::open("/dev/null", O_RDONLY);
    ::dup2(in, 0);
    ::dup2(o, 1);
    ::dup2(e, 2);
    std::vector<std::string> copy = args;
    std::vector<char*> argv;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  run.out = Slurp(out);
  run.err = Slurp(err);
  return run;
}

std::string JoinQuoted(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "\"" : ",\"") + i + "\"";
  return out;
}

}  // namespace

bool Agent::Start() {
  pid_ = ::fork();
  if (pid_ == 0) {
    const int err = ::open(log_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    const int null = ::open("/dev/null", O_RDWR);
    ::dup2(null, 0);
    ::dup2(null, 1);
    ::dup2(err, 2);
    ::setenv("NODEGATE_LOG_LEVEL", "debug", 1);
    const std::string bin = nodegate::testing::BinPath("cluster-ipam");
    ::execl(bin.c_str(), bin.c_str(), "agent", "--socket", socket_.c_str(), nullptr);
    ::_exit(127);
  }
  // Serving once it says so (a socket that answers may be another agent's).
  const std::string serving = "serving on " + socket_ + " (pid " + std::to_string(pid_) + ")";
  for (auto until = Clock::now() + std::chrono::seconds(10); Clock::now() < until;) {
    if (log().find(serving) != std::string::npos && Connectable()) return true;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

bool Agent::Connectable() const {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof address.sun_path, "%s", socket_.c_str());
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
  ::close(fd);
  return ok;
}

std::string Agent::log() const { return Slurp(log_); }

int Agent::Signal(int sig) {
  if (pid_ <= 0) return -1;
  ::kill(pid_, SIGCONT);
  ::kill(pid_, sig);
  int status = 0;
  for (auto until = Clock::now() + std::chrono::seconds(15); Clock::now() < until;) {
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return -1;
}

std::string Conf(const EtcdCluster& etcd, const ConfOptions& o) {
  const auto& endpoints = o.endpoints.empty() ? etcd.endpoints() : o.endpoints;
  return R"({"cniVersion":")" + o.version + R"(","name":")" + o.network + R"(","type":"ptp",)" +
         o.extra_top + R"("ipam":{"type":"cluster-ipam",)" + o.extra_ipam + R"("agentSocket":")" +
         o.agent_socket + R"(","lockDir":")" +
         (o.lock_dir.empty() ? etcd.dir() + "/locks" : o.lock_dir) + R"(","ranges":)" + o.ranges +
         R"(,"nodeName":")" + o.node + R"(","strictAffinity":)" +
         (o.strict_affinity ? "true" : "false") + R"(,"etcd":{)" + o.extra_etcd +
         R"("endpoints":[)" + JoinQuoted(endpoints) + R"(],"caFile":")" + etcd.ca() +
         R"(","certFile":")" + etcd.cert() + R"(","keyFile":")" + etcd.key() + R"(","timeout":")" +
         o.timeout + R"("}}})";
}

PluginOutput Cni(const std::string& command, const std::string& conf, const std::string& id,
                 const std::string& ifname, std::optional<long> kill_after_us,
                 const std::string& cni_args) {
  nodegate::testing::PluginCall call;
  call.binary = nodegate::testing::BinPath("cluster-ipam");
  call.command = command;
  call.container_id = id;
  call.netns = command == "DEL" || command == "GC" || command == "STATUS" ? "" : kNoNetns;
  call.ifname = command == "GC" || command == "STATUS" ? "" : ifname;
  call.args = cni_args;
  call.stdin_data = conf;
  call.kill_after_us = kill_after_us;
  return nodegate::testing::RunPlugin(call);
}

std::vector<std::string> AddressesOf(const std::string& result) {
  std::vector<std::string> out;
  const Json j = Json::parse(result, nullptr, false);
  if (!j.is_object()) return out;
  auto strip = [](std::string cidr) { return cidr.substr(0, cidr.find('/')); };
  if (j.contains("ips")) {
    for (const auto& ip : j["ips"]) out.push_back(strip(ip.value("address", "")));
  }
  for (const char* family : {"ip4", "ip6"}) {
    if (j.contains(family)) out.push_back(strip(j[family].value("ip", "")));
  }
  return out;
}

int ErrorCode(const PluginOutput& out) {
  const Json j = Json::parse(out.out, nullptr, false);
  if (!j.is_object() || !j.contains("code") || !j["code"].is_number_integer()) return -1;
  return j["code"].get<int>();
}

IpamRun NodegateIpam(const std::string& conf, const std::vector<std::string>& args) {
  char tmpl[] = "/tmp/ng-ipam-cli-XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  Json plugin = Json::parse(conf);
  Json list = {{"cniVersion", plugin["cniVersion"]}, {"name", plugin["name"]}};
  plugin.erase("cniVersion");
  plugin.erase("name");
  list["plugins"] = Json::array({plugin});
  std::ofstream(dir + "/10-test.conflist") << list.dump();
  std::vector<std::string> argv = {nodegate::testing::BinPath("nodegate"), "ipam", "--conf",
                                   dir + "/10-test.conflist"};
  argv.insert(argv.end(), args.begin(), args.end());
  IpamRun run = RunArgv(argv, dir);
  std::filesystem::remove_all(dir);
  return run;
}

std::vector<std::string> ProblemKinds(const std::string& conf,
                                      const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"-o", "json", "check"};
  args.insert(args.end(), extra.begin(), extra.end());
  const IpamRun run = NodegateIpam(conf, args);
  std::vector<std::string> kinds;
  const Json j = Json::parse(run.out, nullptr, false);
  if (!j.is_object()) return {"check failed: " + run.err};
  for (const auto& p : j["problems"]) {
    kinds.push_back(p.value("kind", "") + " " + p.value("subject", "") + ": " +
                    p.value("detail", ""));
  }
  return kinds;
}

std::vector<PluginOutput> InParallel(int count, int threads,
                                     const std::function<PluginOutput(int)>& fn) {
  std::vector<PluginOutput> out(count);
  std::atomic<int> next{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      for (int i = next++; i < count; i = next++) out[i] = fn(i);
    });
  }
  for (auto& t : pool) t.join();
  return out;
}

}  // namespace nodegate::cluster_ipam::testing
