#include "tests/cluster_ipam/etcd_cluster.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "lib/base/base64.h"
#include "tests/support/netns_fixture.h"
#include "tests/support/plugin_runner.h"

namespace nodegate::cluster_ipam::testing {
namespace {

std::string Script() {
  const char* source = std::getenv("NODEGATE_SOURCE_DIR");
  return std::string(source ? source : ".") + "/scripts/lib/etcd_cluster.sh";
}

std::vector<std::string> Lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) out.push_back(line);
  }
  return out;
}

std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

EtcdCluster::EtcdCluster(int members, const std::string& data_root) : data_root_(data_root) {
  char tmpl[] = "/tmp/ng-etcd-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) {
    failure_ = "mkdtemp failed";
    return;
  }
  dir_ = tmpl;
  for (int attempt = 0; attempt < 3; ++attempt) {
    const std::string env = data_root_.empty() ? "" : "ETCD_DATA_ROOT=" + Quote(data_root_) + " ";
    const auto planned = nodegate::testing::RunCommand(env + "bash " + Script() + " plan " +
                                                       Quote(dir_) + " " + std::to_string(members));
    if (planned.exit_code != 0) {
      failure_ = "etcd_cluster.sh plan: " + planned.output;
      return;
    }
    endpoints_ = Lines(dir_ + "/endpoints");
    pids_.assign(members, -1);
    bool started = true;
    for (int m = 1; m <= members; ++m) started = StartMember(m) && started;
    if (started && WaitHealthy(30)) {
      failure_.clear();
      return;
    }
    // A port picked free may have been taken before etcd bound it: plan again then.
    const auto taken = nodegate::testing::RunCommand(
        "grep -ls 'address already in use' " + Quote(dir_) + "/m*.out " + Quote(dir_) + "/m*.log");
    for (int m = 1; m <= members; ++m) Kill(m);
    failure_ = "etcd did not become healthy: " +
               nodegate::testing::RunCommand("tail -n 3 " + Quote(dir_) + "/m*.out").output;
    if (taken.exit_code != 0) return;
  }
}

EtcdCluster::~EtcdCluster() {
  for (int m = 1; m <= members(); ++m) Kill(m);
  if (!dir_.empty() && std::getenv("NODEGATE_KEEP_ETCD") == nullptr) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
}

bool EtcdCluster::StartMember(int member) {
  std::vector<std::string> args = Lines(dir_ + "/m" + std::to_string(member) + ".args");
  if (args.empty()) return false;
  const std::string out = dir_ + "/m" + std::to_string(member) + ".out";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setsid();
    const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    const int null = ::open("/dev/null", O_RDONLY);
    ::dup2(null, 0);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    ::_exit(127);
  }
  pids_[member - 1] = pid;
  return pid > 0;
}

void EtcdCluster::Kill(int member) {
  pid_t& pid = pids_.at(member - 1);
  if (pid <= 0) return;
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  pid = -1;
}

bool EtcdCluster::Relaunch(int member) {
  Kill(member);
  return StartMember(member);
}

bool EtcdCluster::Restart(int member) { return Relaunch(member) && WaitHealthy(30); }

void EtcdCluster::Pause(int member) { ::kill(Pid(member), SIGSTOP); }
void EtcdCluster::Resume(int member) { ::kill(Pid(member), SIGCONT); }

std::string EtcdCluster::Ctl(const std::string& args, int* exit_code) const {
  std::string endpoints;
  for (size_t i = 0; i < endpoints_.size(); ++i) {
    if (pids_[i] > 0) endpoints += (endpoints.empty() ? "" : ",") + endpoints_[i];
  }
  const auto r = nodegate::testing::RunCommand(
      "ETCDCTL_API=3 etcdctl --endpoints " + endpoints + " --cacert " + Quote(ca()) + " --cert " +
      Quote(cert()) + " --key " + Quote(key()) + " --dial-timeout 2s --command-timeout 5s " + args +
      " 2>/dev/null");
  if (exit_code) *exit_code = r.exit_code;
  return r.output;
}

bool EtcdCluster::WaitHealthy(int seconds) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < until) {
    int code = 1;
    Ctl("endpoint health", &code);
    if (code == 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return false;
}

int EtcdCluster::Leader() {
  for (int m = 1; m <= members(); ++m) {
    if (pids_[m - 1] <= 0) continue;
    const auto r = nodegate::testing::RunCommand(
        "ETCDCTL_API=3 etcdctl --endpoints " + endpoints_[m - 1] + " --cacert " + Quote(ca()) +
        " --cert " + Quote(cert()) + " --key " + Quote(key()) +
        " --dial-timeout 1s --command-timeout 2s endpoint status -w json 2>/dev/null");
    const auto j = nlohmann::json::parse(r.output, nullptr, false);
    if (!j.is_array() || j.empty()) continue;
    const auto& status = j[0]["Status"];
    if (status["header"]["member_id"] == status["leader"]) return m;
  }
  return 0;
}

std::map<std::string, std::string> EtcdCluster::Dump(const std::string& prefix) const {
  std::map<std::string, std::string> out;
  const auto j =
      nlohmann::json::parse(Ctl("get --prefix -w json " + Quote(prefix)), nullptr, false);
  if (!j.is_object() || !j.contains("kvs")) return out;
  for (const auto& kv : j["kvs"]) {
    const auto key = Base64Decode(kv.value("key", ""));
    const auto value = Base64Decode(kv.value("value", ""));
    if (key) out[*key] = value.value_or("");
  }
  return out;
}

}  // namespace nodegate::cluster_ipam::testing
