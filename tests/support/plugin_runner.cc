#include "tests/support/plugin_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <vector>

#include "runtime/invoke/invoke.h"

namespace nodegate::testing {

PluginOutput RunPlugin(const PluginCall& call) {
  PluginOutput result;
  // A plugin that exits before reading stdin must not kill the test with SIGPIPE.
  ::signal(SIGPIPE, SIG_IGN);
  int in_pipe[2], out_pipe[2], err_pipe[2];
  if (::pipe2(in_pipe, O_CLOEXEC) != 0 || ::pipe2(out_pipe, O_CLOEXEC) != 0 ||
      ::pipe2(err_pipe, O_CLOEXEC) != 0) {
    result.err = "pipe failed";
    return result;
  }
  std::vector<std::string> env_strings = runtime::CniVariables(
      {call.command, call.container_id, call.netns, call.ifname, call.args, call.path});
  if (call.extra_env.count("PATH") == 0) {  // a call may run with a PATH of its own
    const char* path = std::getenv("PATH");
    env_strings.push_back(std::string("PATH=") + (path ? path : "/usr/sbin:/usr/bin:/sbin:/bin"));
  }
  for (const auto& [k, v] : call.extra_env) {
    env_strings.push_back(k + "=" + v);
  }
  std::vector<char*> envp;
  for (auto& s : env_strings) {
    envp.push_back(s.data());
  }
  envp.push_back(nullptr);

  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(in_pipe[0], 0);
    ::dup2(out_pipe[1], 1);
    ::dup2(err_pipe[1], 2);
    if (!call.run_in_netns.empty()) {
      const int fd = ::open(call.run_in_netns.c_str(), O_RDONLY);
      if (fd < 0 || ::setns(fd, CLONE_NEWNET) != 0) {
        ::_exit(126);
      }
    }
    char* argv[] = {const_cast<char*>(call.binary.c_str()), nullptr};
    if (call.wait_for_detached) {
      // This child becomes the subreaper of what the plugin leaves behind, runs the plugin,
      // then waits for every descendant and exits with the plugin's status.
      ::prctl(PR_SET_CHILD_SUBREAPER, 1);
      const pid_t plugin = ::fork();
      if (plugin == 0) {
        ::execve(call.binary.c_str(), argv, envp.data());
        ::_exit(127);
      }
      // The pipes' other ends too (close-on-exec, and this child does not exec): EOF for the
      // plugin's stdin and for the test once the plugin's copies close.
      ::close_range(0, ~0U, 0);
      int plugin_status = 0;
      while (plugin > 0 && ::waitpid(plugin, &plugin_status, 0) < 0 && errno == EINTR) {
      }
      while (::wait(nullptr) > 0 || errno == EINTR) {
      }
      if (plugin < 0) ::_exit(126);
      ::_exit(WIFEXITED(plugin_status) ? WEXITSTATUS(plugin_status) : 128);
    }
    ::execve(call.binary.c_str(), argv, envp.data());
    ::_exit(127);
  }
  ::close(in_pipe[0]);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  // Write stdin then close; configs are small, but poll anyway to avoid a pipe deadlock.
  size_t written = 0;
  bool in_open = true;
  if (call.stdin_data.empty()) {
    ::close(in_pipe[1]);
    in_open = false;
  }
  bool out_open = true, err_open = true;
  using Clock = std::chrono::steady_clock;
  std::optional<Clock::time_point> kill_at;
  if (call.kill_after_us) kill_at = Clock::now() + std::chrono::microseconds(*call.kill_after_us);
  while (out_open || err_open || in_open) {
    // Microsecond resolution: a call may take only a few milliseconds.
    std::optional<timespec> timeout;
    if (kill_at) {
      const auto left =
          std::chrono::duration_cast<std::chrono::nanoseconds>(*kill_at - Clock::now());
      if (left.count() <= 0) {
        ::kill(pid, SIGKILL);
        kill_at.reset();
      } else {
        timeout = timespec{static_cast<time_t>(left.count() / 1000000000),
                           static_cast<long>(left.count() % 1000000000)};
      }
    }
    std::vector<pollfd> fds;
    if (in_open) fds.push_back({in_pipe[1], POLLOUT, 0});
    if (out_open) fds.push_back({out_pipe[0], POLLIN, 0});
    if (err_open) fds.push_back({err_pipe[0], POLLIN, 0});
    if (::ppoll(fds.data(), fds.size(), timeout ? &*timeout : nullptr, nullptr) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (const auto& p : fds) {
      if (p.revents == 0) continue;
      if (p.fd == in_pipe[1]) {
        const ssize_t n =
            ::write(in_pipe[1], call.stdin_data.data() + written, call.stdin_data.size() - written);
        if (n > 0) written += static_cast<size_t>(n);
        if (n < 0 || written == call.stdin_data.size()) {
          ::close(in_pipe[1]);
          in_open = false;
        }
        continue;
      }
      char buf[4096];
      const ssize_t n = ::read(p.fd, buf, sizeof(buf));
      if (n <= 0) {
        ::close(p.fd);
        (p.fd == out_pipe[0] ? out_open : err_open) = false;
      } else {
        (p.fd == out_pipe[0] ? result.out : result.err).append(buf, static_cast<size_t>(n));
      }
    }
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.killed = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
  return result;
}

std::string BinPath(const std::string& name) {
  const char* dir = std::getenv("NODEGATE_BIN_DIR_OVERRIDE");
  if (dir == nullptr || *dir == '\0') dir = std::getenv("NODEGATE_BIN_DIR");
  return std::string(dir ? dir : "build/bin") + "/" + name;
}

std::string ReferencePath(const std::string& name) { return "/usr/lib/cni/" + name; }

}  // namespace nodegate::testing
