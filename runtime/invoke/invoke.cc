#include "runtime/invoke/invoke.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <iostream>
#include <thread>

#include "lib/cni/version.h"

extern char** environ;

namespace nodegate::runtime {
namespace {

// The child's environment: ours without any CNI_* variable, then the invocation's.
std::vector<std::string> BuildEnv(const CniEnv& env) {
  std::vector<std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    if (std::strncmp(*e, "CNI_", 4) != 0) {
      out.emplace_back(*e);
    }
  }
  for (std::string& variable : CniVariables(env)) out.push_back(std::move(variable));
  return out;
}

struct Pipe {
  int fds[2] = {-1, -1};
  ~Pipe() {
    for (int fd : fds) {
      if (fd >= 0) {
        ::close(fd);
      }
    }
  }
  void CloseEnd(int i) {
    if (fds[i] >= 0) {
      ::close(fds[i]);
      fds[i] = -1;
    }
  }
};

// In the forked child: stdio onto the pipes, then exec; a failed exec reports its errno on
// the status pipe (which exec's O_CLOEXEC closes when it succeeds).
[[noreturn]] void ExecChild(const std::string& binary, char** argv, char** envp, const Pipe& in,
                            const Pipe& out, const Pipe& err, const Pipe& status) {
  ::dup2(in.fds[0], 0);
  ::dup2(out.fds[1], 1);
  ::dup2(err.fds[1], 2);
  ::execve(binary.c_str(), argv, envp);
  const int e = errno;
  (void)!::write(status.fds[1], &e, sizeof(e));
  ::_exit(127);
}

// Writes stdin_data to the child and collects its stdout and stderr until all three close.
// Polls all pipes so a plugin that writes a lot before reading stdin cannot deadlock us.
void ExchangeWithChild(Pipe& in, Pipe& out, Pipe& err, const std::string& stdin_data,
                       ExecOutput& result) {
  size_t written = 0;
  while (in.fds[1] >= 0 || out.fds[0] >= 0 || err.fds[0] >= 0) {
    std::vector<pollfd> fds;
    if (in.fds[1] >= 0) fds.push_back({in.fds[1], POLLOUT, 0});
    if (out.fds[0] >= 0) fds.push_back({out.fds[0], POLLIN, 0});
    if (err.fds[0] >= 0) fds.push_back({err.fds[0], POLLIN, 0});
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) {
        continue;
      }
      break;
    }
    for (const auto& p : fds) {
      if (p.revents == 0) {
        continue;
      }
      if (p.fd == in.fds[1]) {
        const ssize_t n = ::write(p.fd, stdin_data.data() + written, stdin_data.size() - written);
        if (n > 0) {
          written += static_cast<size_t>(n);
        }
        if (n < 0 || written == stdin_data.size()) {
          in.CloseEnd(1);
        }
        continue;
      }
      char buf[8192];
      const ssize_t n = ::read(p.fd, buf, sizeof(buf));
      if (n <= 0) {
        if (p.fd == out.fds[0]) {
          out.CloseEnd(0);
        } else {
          err.CloseEnd(0);
        }
      } else if (p.fd == out.fds[0]) {
        result.out.append(buf, static_cast<size_t>(n));
      } else {
        result.err.append(buf, static_cast<size_t>(n));
      }
    }
  }
}

// One attempt. exec_errno gets the child's execve errno (0 when exec succeeded).
Result<ExecOutput> RunOnce(const std::string& binary, const std::vector<std::string>& env,
                           const std::string& stdin_data, int& exec_errno) {
  Pipe in, out, err, status;
  if (::pipe2(in.fds, O_CLOEXEC) != 0 || ::pipe2(out.fds, O_CLOEXEC) != 0 ||
      ::pipe2(err.fds, O_CLOEXEC) != 0 || ::pipe2(status.fds, O_CLOEXEC) != 0) {
    return Error(kErrIo, std::string("pipe: ") + std::strerror(errno));
  }
  std::vector<char*> envp;
  for (const auto& s : env) {
    envp.push_back(const_cast<char*>(s.c_str()));
  }
  envp.push_back(nullptr);
  char* argv[] = {const_cast<char*>(binary.c_str()), nullptr};
  const pid_t pid = ::fork();
  if (pid < 0) {
    return Error(kErrIo, std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    ExecChild(binary, argv, envp.data(), in, out, err, status);
  }
  in.CloseEnd(0);
  out.CloseEnd(1);
  err.CloseEnd(1);
  status.CloseEnd(1);

  ExecOutput result;
  if (stdin_data.empty()) {
    in.CloseEnd(1);
  }
  ExchangeWithChild(in, out, err, stdin_data, result);
  int wstatus = 0;
  while (::waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  exec_errno = 0;
  if (::read(status.fds[0], &exec_errno, sizeof(exec_errno)) != sizeof(exec_errno)) {
    exec_errno = 0;
  }
  result.exit_code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
  return result;
}

}  // namespace

std::vector<std::string> CniVariables(const CniEnv& env) {
  std::vector<std::string> out;
  const std::pair<const char*, const std::string*> variables[] = {
      {"CNI_COMMAND", &env.command}, {"CNI_CONTAINERID", &env.container_id},
      {"CNI_NETNS", &env.netns},     {"CNI_IFNAME", &env.ifname},
      {"CNI_ARGS", &env.args},       {"CNI_PATH", &env.path},
  };
  for (const auto& [name, value] : variables) {
    if (!value->empty()) out.push_back(std::string(name) + "=" + *value);
  }
  return out;
}

Result<std::string> Executor::FindInPath(const std::string& type,
                                         const std::vector<std::string>& dirs) {
  if (type.empty()) {
    return Error(kErrInvalidConfig, "no plugin name provided");
  }
  if (type.find('/') != std::string::npos) {
    return Error(kErrInvalidConfig, "invalid plugin name: " + type);
  }
  if (dirs.empty()) {
    return Error(kErrInvalidConfig, "no paths provided");
  }
  for (const auto& dir : dirs) {
    const std::string full = dir + "/" + type;
    struct stat st {};
    if (::stat(full.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      return full;
    }
  }
  std::string list;
  for (const auto& dir : dirs) {
    list += (list.empty() ? "" : " ") + dir;
  }
  return Error(kErrInvalidConfig, "failed to find plugin \"" + type + "\" in path [" + list + "]");
}

Result<ExecOutput> RealExecutor::Run(const std::string& binary, const CniEnv& env,
                                     const std::string& stdin_data) {
  // A plugin that exits before reading all of stdin must not kill us with SIGPIPE.
  ::signal(SIGPIPE, SIG_IGN);
  const auto envp = BuildEnv(env);
  for (int attempt = 0;; ++attempt) {
    int exec_errno = 0;
    NG_ASSIGN_OR_RETURN(ExecOutput out, RunOnce(binary, envp, stdin_data, exec_errno));
    if (exec_errno == ETXTBSY && attempt < 5) {
      std::this_thread::sleep_for(std::chrono::seconds(1));
      continue;
    }
    if (exec_errno != 0) {
      return Error(kErrIo, "exec " + binary + ": " + std::strerror(exec_errno));
    }
    if (!out.err.empty()) {
      std::cerr << out.err;
      if (out.err.back() != '\n') {
        std::cerr << '\n';
      }
    }
    return out;
  }
}

std::vector<std::string> SplitPath(const std::string& path) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    if (end == std::string::npos) {
      end = path.size();
    }
    if (end > start) {
      out.push_back(path.substr(start, end - start));
    }
    start = end + 1;
  }
  return out;
}

Result<std::string> ExecPlugin(Executor& exec, const std::string& binary, const CniEnv& env,
                               const std::string& stdin_data) {
  NG_ASSIGN_OR_RETURN(ExecOutput out, exec.Run(binary, env, stdin_data));
  if (out.exit_code == 0) {
    return std::move(out.out);
  }
  if (auto error = cni::DecodeError(out.out)) {
    return *error;
  }
  std::string err = out.err;
  while (!err.empty() && (err.back() == '\n' || err.back() == '\r')) {
    err.pop_back();
  }
  if (err.empty()) {
    return Error(kErrInternal, "netplugin failed with no error message: exit status " +
                                   std::to_string(out.exit_code));
  }
  return Error(kErrInternal, "netplugin failed: \"" + err + "\"");
}

Result<cni::CniResult> ExecPluginWithResult(Executor& exec, const std::string& binary,
                                            const CniEnv& env, const std::string& stdin_data,
                                            const std::string& config_version) {
  NG_ASSIGN_OR_RETURN(std::string out, ExecPlugin(exec, binary, env, stdin_data));
  // libcni: into a map, the exact key "cniVersion" filled in when missing, then (after a
  // marshal, so keys in sorted order) into the result struct of that version.
  auto decoded = cni::gojson::Decode(out, cni::gojson::Any());
  if (!decoded.ok() || !decoded->is_object()) {
    return Error(kErrDecode, "plugin " + binary + " printed a result that is not a JSON object");
  }
  cni::Json json = std::move(decoded).value();
  if (!json.contains("cniVersion") || !json["cniVersion"].is_string() ||
      json["cniVersion"].get<std::string>().empty()) {
    json["cniVersion"] = cni::EffectiveVersion(config_version);
  }
  auto result =
      cni::DecodeResult(cni::gojson::Refold(std::move(json), cni::ResultShape()), config_version);
  if (!result.ok()) {
    return result.error().WithContext("decoding the result of " + binary);
  }
  return result;
}

Status ExecPluginWithoutResult(Executor& exec, const std::string& binary, const CniEnv& env,
                               const std::string& stdin_data) {
  NG_RETURN_IF_ERROR(ExecPlugin(exec, binary, env, stdin_data));
  return OkStatus();
}

Result<std::vector<std::string>> GetVersionInfo(Executor& exec, const std::string& binary) {
  CniEnv env{.command = "VERSION"};
  auto out = ExecPlugin(exec, binary, env,
                        R"({"cniVersion":")" + std::string(cni::kSpecVersion) + R"("})");
  if (!out.ok()) {
    if (out.error().msg == "unknown CNI_COMMAND: VERSION") {
      return std::vector<std::string>{"0.1.0"};
    }
    return out.error().WithContext("VERSION of " + binary);
  }
  // Any binary in the plugin path answers here: decoded with Go's limits (depth, numbers).
  auto decoded = cni::gojson::Decode(*out, cni::gojson::Any());
  if (!decoded.ok() || !decoded->is_object()) {
    return Error(kErrDecode, "VERSION of " + binary + ": reply is not a JSON object");
  }
  const cni::Json& json = *decoded;
  if (auto it = json.find("supportedVersions"); it != json.end() && it->is_array()) {
    std::vector<std::string> versions;
    for (const auto& v : *it) {
      if (v.is_string()) {
        versions.push_back(v.get<std::string>());
      }
    }
    return versions;
  }
  // Any binary may answer: a non-string cniVersion is no version (value() would throw).
  if (auto v = json.find("cniVersion"); v != json.end() && v->is_string() && *v == "0.2.0") {
    return std::vector<std::string>{"0.1.0", "0.2.0"};
  }
  return Error(kErrDecode, "VERSION of " + binary + ": reply has no supportedVersions");
}

}  // namespace nodegate::runtime
