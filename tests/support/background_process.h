#pragma once
// Servers a test starts inside a namespace (iperf3, httpd), and waiting until one listens.
//
//   BackgroundProcess server(peer, {"iperf3", "-s", "-p", "5201"});
//   ASSERT_TRUE(WaitForListener(peer, "TCP", 5201, &server));   // the socket, not a sleep
//   ... clients ...
//   // leaving the scope stops the server (SIGTERM to its process group) and reaps it
//
// The server is a child of the test, not a daemon: the test sees when it exits (a wait can
// give up at once instead of at its limit), and nothing of it outlives the test.

#include <gtest/gtest.h>
#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "tests/support/netns_fixture.h"

namespace nodegate::testing {

class BackgroundProcess {
 public:
  // Runs argv (argv[0] looked up in PATH) inside `ns`, in a process group of its own, with
  // stdout and stderr going to a temporary file (Output()).
  BackgroundProcess(const TestNetns& ns, std::vector<std::string> argv);
  ~BackgroundProcess();
  BackgroundProcess(const BackgroundProcess&) = delete;
  BackgroundProcess& operator=(const BackgroundProcess&) = delete;

  // The process (argv[0] itself: nothing runs in between), as /proc and sock_diag name it.
  pid_t pid() const { return pid_; }
  // False once the process has exited (or never started).
  bool Running();
  // What it printed so far, and how it ended: for failure messages.
  std::string Describe();

 private:
  std::string command_;  // argv joined, for messages
  std::string output_path_;
  pid_t pid_ = -1;
  int wait_status_ = 0;
  bool exited_ = false;
};

// Waits until a socket in `ns` listens on `port` (protocol "TCP": in LISTEN; "UDP": bound
// and unconnected), as the kernel reports it through sock_diag. Fails at once when `server`
// is given and has exited, else after `limit`: a generous bound for a loaded machine, not a
// timing expectation.
::testing::AssertionResult WaitForListener(const TestNetns& ns, const std::string& protocol,
                                           int port, BackgroundProcess* server = nullptr,
                                           std::chrono::seconds limit = std::chrono::seconds(60));

}  // namespace nodegate::testing
