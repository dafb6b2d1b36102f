#pragma once
// Three real members of Debian's etcd-server for one test: TLS with a test CA, free loopback
// ports, data in the test's own temporary folder. scripts/lib/etcd_cluster.sh makes the CA and
// plans each member's command line; this fixture runs the members as its own children, so it
// can kill -9, stop, continue and restart one by its PID, and stops all of them (by PID) when
// it goes out of scope.
//
//   EtcdCluster etcd;                  // started and healthy, or a failed test
//   ASSERT_TRUE(etcd.ok()) << etcd.failure();
//   etcd.Kill(2); ... etcd.Restart(2);
//   auto kvs = etcd.Dump("/nodegate/ipam/net1/");   // read with etcdctl, independently of us

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

namespace nodegate::cluster_ipam::testing {

class EtcdCluster {
 public:
  explicit EtcdCluster(int members = 3, const std::string& data_root = "");
  ~EtcdCluster();
  EtcdCluster(const EtcdCluster&) = delete;
  EtcdCluster& operator=(const EtcdCluster&) = delete;

  bool ok() const { return failure_.empty(); }
  const std::string& failure() const { return failure_; }

  const std::string& dir() const { return dir_; }
  const std::vector<std::string>& endpoints() const { return endpoints_; }
  std::string ca() const { return dir_ + "/pki/ca.crt"; }
  std::string cert() const { return dir_ + "/pki/client.crt"; }
  std::string key() const { return dir_ + "/pki/client.key"; }
  int members() const { return static_cast<int>(pids_.size()); }

  pid_t Pid(int member) const { return pids_.at(member - 1); }
  void Kill(int member);      // SIGKILL, reaped
  bool Restart(int member);   // on its ports and data; true once it answers again
  bool Relaunch(int member);  // the same, without waiting (for a cluster without quorum)
  void Pause(int member);     // SIGSTOP
  void Resume(int member);    // SIGCONT
  // The member (1-based) that leads, or 0 when none answers.
  int Leader();
  // Waits until every running member answers a health check (at most `seconds`).
  bool WaitHealthy(int seconds);

  // etcdctl against the running members; its stdout (and exit code).
  std::string Ctl(const std::string& args, int* exit_code = nullptr) const;
  // Every key under `prefix` and its value, read by etcdctl.
  std::map<std::string, std::string> Dump(const std::string& prefix) const;

 private:
  bool StartMember(int member);

  std::string dir_;
  std::string data_root_;
  std::vector<std::string> endpoints_;
  std::vector<pid_t> pids_;
  std::string failure_;
};

}  // namespace nodegate::cluster_ipam::testing
