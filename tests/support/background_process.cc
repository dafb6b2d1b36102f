#include "tests/support/background_process.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <thread>

#include "lib/sys/netns.h"
#include "ports/sock_diag.h"

namespace nodegate::testing {
namespace {

constexpr auto kPollInterval = std::chrono::milliseconds(20);

// The listening sockets of the namespace at `path`, read by a thread that enters it (setns
// changes only the calling thread's namespace; the test's own stays as it was).
Result<std::vector<ports::BoundSocket>> BoundSocketsIn(const std::string& path) {
  Result<std::vector<ports::BoundSocket>> out = Error(kErrIo, "not read");
  std::thread reader([&] {
    auto inside = sys::NetnsScope::Enter(path);
    if (!inside.ok()) {
      out = inside.error();
      return;
    }
    out = ports::ListBoundSockets();
  });
  reader.join();
  return out;
}

std::string DescribeStatus(int status) {
  if (WIFEXITED(status)) {
    return "exited with status " + std::to_string(WEXITSTATUS(status));
  }
  if (WIFSIGNALED(status)) {
    return "killed by signal " + std::to_string(WTERMSIG(status));
  }
  return "ended (wait status " + std::to_string(status) + ")";
}

}  // namespace

BackgroundProcess::BackgroundProcess(const TestNetns& ns, std::vector<std::string> argv) {
  for (const auto& arg : argv) {
    command_ += (command_.empty() ? "" : " ") + arg;
  }
  char output_template[] = "/tmp/ng-background-XXXXXX";
  const int output_fd = ::mkstemp(output_template);
  if (output_fd < 0) {
    ADD_FAILURE() << "mkstemp for the output of " << command_;
    return;
  }
  output_path_ = output_template;
  const std::string netns = ns.path();
  std::vector<char*> args;
  for (auto& arg : argv) {
    args.push_back(arg.data());
  }
  args.push_back(nullptr);

  pid_ = ::fork();
  if (pid_ == 0) {
    // Its own process group, so that the destructor stops whatever it started too.
    ::setpgid(0, 0);
    const int netns_fd = ::open(netns.c_str(), O_RDONLY | O_CLOEXEC);
    const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (netns_fd < 0 || ::setns(netns_fd, CLONE_NEWNET) != 0 || null_fd < 0 ||
        ::dup2(null_fd, 0) < 0 || ::dup2(output_fd, 1) < 0 || ::dup2(output_fd, 2) < 0) {
      ::_exit(126);
    }
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  ::close(output_fd);
  if (pid_ < 0) {
    ADD_FAILURE() << "fork for " << command_;
    return;
  }
  ::setpgid(pid_, pid_);  // also here: the child may not have run yet when we signal it
}

BackgroundProcess::~BackgroundProcess() {
  if (pid_ > 0 && !exited_) {
    // The group exists as long as its leader is not reaped, so this reaches only our processes.
    ::kill(-pid_, SIGTERM);
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (Running() && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(kPollInterval);
    }
    if (!exited_) {
      ::kill(-pid_, SIGKILL);
      ::waitpid(pid_, &wait_status_, 0);
    }
  }
  if (!output_path_.empty()) {
    ::unlink(output_path_.c_str());
  }
}

bool BackgroundProcess::Running() {
  if (pid_ <= 0 || exited_) {
    return false;
  }
  if (::waitpid(pid_, &wait_status_, WNOHANG) == pid_) {
    exited_ = true;
  }
  return !exited_;
}

std::string BackgroundProcess::Describe() {
  std::ifstream in(output_path_, std::ios::binary);
  const std::string output{std::istreambuf_iterator<char>(in), {}};
  const std::string state = Running() ? "still running" : DescribeStatus(wait_status_);
  return "`" + command_ + "` " + state + ", output: " + (output.empty() ? "(none)" : output);
}

::testing::AssertionResult WaitForListener(const TestNetns& ns, const std::string& protocol,
                                           int port, BackgroundProcess* server,
                                           std::chrono::seconds limit) {
  const auto give_up = std::chrono::steady_clock::now() + limit;
  std::string last_error;
  for (;;) {
    auto sockets = BoundSocketsIn(ns.path());
    if (sockets.ok()) {
      for (const auto& socket : *sockets) {
        if (socket.key.protocol == protocol && socket.key.port == port) {
          return ::testing::AssertionSuccess();
        }
      }
    } else {
      last_error = sockets.error().msg;
    }
    if (server != nullptr && !server->Running()) {
      return ::testing::AssertionFailure() << "nothing listens on " << protocol << " port " << port
                                           << " in " << ns.name() << ": " << server->Describe();
    }
    if (std::chrono::steady_clock::now() >= give_up) {
      auto failure = ::testing::AssertionFailure()
                     << "nothing listened on " << protocol << " port " << port << " in "
                     << ns.name() << " within " << limit.count() << " s";
      if (!last_error.empty()) {
        failure << " (sock_diag: " << last_error << ")";
      }
      if (server != nullptr) {
        failure << ": " << server->Describe();
      }
      return failure;
    }
    std::this_thread::sleep_for(kPollInterval);
  }
}

}  // namespace nodegate::testing
