#include "lib/cni/delegate.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <utility>
#include <vector>

#include "lib/cni/go_json.h"
#include "lib/cni/logging.h"
#include "lib/cni/sibling.h"
#include "lib/cni/version.h"
#include "lib/sys/io.h"

extern char** environ;

namespace nodegate::cni {
namespace {

struct PipePair {
  sys::UniqueFd read, write;
};

Result<PipePair> MakePipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    return Error(kErrIo, std::string("pipe: ") + std::strerror(errno));
  }
  return PipePair{sys::UniqueFd(fds[0]), sys::UniqueFd(fds[1])};
}

// This process's environment with CNI_COMMAND replaced.
std::vector<std::string> DelegateEnvironment(Command command) {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    if (std::strncmp(*e, "CNI_COMMAND=", 12) != 0) env.emplace_back(*e);
  }
  env.push_back("CNI_COMMAND=" + std::string(CommandName(command)));
  return env;
}

void SleepOneSecond() {
  timespec ts{1, 0};
  while (::nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

std::string TrimNewlines(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return text;
}

// A linked sibling's run as its exec would be: this process's environment with CNI_COMMAND
// replaced, the same stdin bytes, its stdout kept, its logs on our stderr under its own name
// (and in the log file its config names). Returns the exit status its process would have had.
int RunSibling(Plugin (*make_plugin)(), Command command, const CmdArgs& args, std::string& out) {
  const Plugin plugin = make_plugin();
  ScopedPluginLogging logging(plugin.name);
  ProcessIo io;
  io.getenv = [command](const std::string& name) -> std::optional<std::string> {
    if (name == "CNI_COMMAND") return std::string(CommandName(command));
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
  io.read_stdin = [&args]() -> std::optional<std::string> { return args.stdin_data; };
  io.write_stdout = [&out](std::string_view text) { out.append(text); };
  io.write_stderr = [](std::string_view text) { (void)sys::WriteAll(STDERR_FILENO, text); };
  return PluginMain(plugin, io);
}

// What a delegate's run comes to (points 4 and 5): its stdout on success, else its error.
Result<std::string> Outcome(int wait_status, std::string out, std::string err) {
  if (WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0) return out;
  if (auto error = DecodeError(out)) return *error;
  err = TrimNewlines(std::move(err));
  if (!err.empty()) return Error(kErrInternal, "netplugin failed: \"" + err + "\"");
  const std::string how = WIFEXITED(wait_status)
                              ? "exit status " + std::to_string(WEXITSTATUS(wait_status))
                              : "signal: " + std::string(strsignal(WTERMSIG(wait_status)));
  return Error(kErrInternal, "netplugin failed with no error message: " + how);
}

}  // namespace

Result<std::string> FindPluginInPath(const std::string& type, const std::string& cni_path) {
  std::vector<std::string> dirs;
  size_t start = 0;
  while (start <= cni_path.size()) {
    size_t end = cni_path.find(':', start);
    if (end == std::string::npos) end = cni_path.size();
    if (end > start) dirs.push_back(cni_path.substr(start, end - start));
    start = end + 1;
  }
  if (dirs.empty()) return Error(kErrInvalidConfig, "no paths provided");
  if (type.empty() || type.find('/') != std::string::npos) {
    return Error(kErrInvalidConfig, "invalid plugin name: \"" + type + "\"");
  }
  std::string list;
  for (const std::string& dir : dirs) {
    const std::string full = dir + "/" + type;
    struct stat st {};
    if (::stat(full.c_str(), &st) == 0 && S_ISREG(st.st_mode)) return full;
    list += (list.empty() ? "" : " ") + dir;
  }
  return Error(kErrInvalidConfig, "failed to find plugin \"" + type + "\" in path [" + list + "]");
}

Result<DelegateCall> DelegateCall::Start(const std::string& type, Command command,
                                         const CmdArgs& args) {
  DelegateCall call;
  NG_ASSIGN_OR_RETURN(call.binary_, FindPluginInPath(type, args.path));
  if (Plugin(*sibling)() = LinkedSibling(type);
      sibling != nullptr && IsSiblingBinary(call.binary_, type)) {
    LogDebug("delegate {}: {} is this build's, run in this process", type, call.binary_);
    // An exit status as waitpid reports it.
    call.in_process_status_ = RunSibling(sibling, command, args, call.in_process_out_) << 8;
    return call;
  }
  // A delegate that exits without reading all of its stdin must not kill us.
  ::signal(SIGPIPE, SIG_IGN);
  const std::vector<std::string> env = DelegateEnvironment(command);
  std::vector<char*> envp;
  for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  char* argv[] = {const_cast<char*>(call.binary_.c_str()), nullptr};

  for (int attempt = 0;; ++attempt) {
    NG_ASSIGN_OR_RETURN(PipePair in, MakePipe());
    NG_ASSIGN_OR_RETURN(PipePair out, MakePipe());
    NG_ASSIGN_OR_RETURN(PipePair err, MakePipe());
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in.read.get(), 0);
    posix_spawn_file_actions_adddup2(&actions, out.write.get(), 1);
    posix_spawn_file_actions_adddup2(&actions, err.write.get(), 2);
    // The child starts with default signal handling (SIGPIPE ignored here is ours alone).
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t defaults;
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGPIPE);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF);
    pid_t pid = -1;
    const int r = ::posix_spawn(&pid, call.binary_.c_str(), &actions, &attr, argv, envp.data());
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    if (r == ETXTBSY && attempt < 5) {
      SleepOneSecond();
      continue;
    }
    if (r != 0) {
      return Error(kErrIo, "exec " + call.binary_ + ": " + std::strerror(r));
    }
    call.pid_ = pid;
    call.stdin_ = std::move(in.write);
    call.stdout_ = std::move(out.read);
    call.stderr_ = std::move(err.read);
    break;
  }
  // Most configs fit in the pipe: written now, so the child never waits for us.
  call.input_ = args.stdin_data;
  (void)::fcntl(call.stdin_.get(), F_SETFL, O_NONBLOCK);
  while (call.written_ < call.input_.size()) {
    const ssize_t n = ::write(call.stdin_.get(), call.input_.data() + call.written_,
                              call.input_.size() - call.written_);
    if (n > 0) {
      call.written_ += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    break;  // full (the rest goes in Wait) or the child is gone
  }
  if (call.written_ == call.input_.size()) call.stdin_.Reset();
  return call;
}

DelegateCall::DelegateCall(DelegateCall&& other) noexcept
    : binary_(std::move(other.binary_)),
      pid_(std::exchange(other.pid_, -1)),
      stdin_(std::move(other.stdin_)),
      stdout_(std::move(other.stdout_)),
      stderr_(std::move(other.stderr_)),
      input_(std::move(other.input_)),
      written_(other.written_),
      in_process_status_(std::exchange(other.in_process_status_, std::nullopt)),
      in_process_out_(std::move(other.in_process_out_)) {}

DelegateCall::~DelegateCall() {
  if (pid_ > 0) (void)Wait();
}

Result<std::string> DelegateCall::Wait() {
  if (in_process_status_) {
    return Outcome(*std::exchange(in_process_status_, std::nullopt), std::move(in_process_out_),
                   "");
  }
  if (pid_ <= 0) return Error(kErrInternal, "delegate " + binary_ + " already collected");
  std::string out, err;
  while (stdin_.valid() || stdout_.valid() || stderr_.valid()) {
    pollfd fds[3];
    nfds_t n = 0;
    if (stdin_.valid()) fds[n++] = {stdin_.get(), POLLOUT, 0};
    if (stdout_.valid()) fds[n++] = {stdout_.get(), POLLIN, 0};
    if (stderr_.valid()) fds[n++] = {stderr_.get(), POLLIN, 0};
    if (::poll(fds, n, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (nfds_t i = 0; i < n; ++i) {
      if (fds[i].revents == 0) continue;
      if (stdin_.valid() && fds[i].fd == stdin_.get()) {
        const ssize_t w = ::write(fds[i].fd, input_.data() + written_, input_.size() - written_);
        if (w > 0) written_ += static_cast<size_t>(w);
        if ((w < 0 && errno != EINTR && errno != EAGAIN) || written_ == input_.size()) {
          stdin_.Reset();
        }
        continue;
      }
      char buf[8192];
      const ssize_t r = ::read(fds[i].fd, buf, sizeof(buf));
      const bool is_out = stdout_.valid() && fds[i].fd == stdout_.get();
      if (r > 0) {
        (is_out ? out : err).append(buf, static_cast<size_t>(r));
      } else if (r == 0 || errno != EINTR) {
        (is_out ? stdout_ : stderr_).Reset();
      }
    }
  }
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  if (!err.empty()) {
    (void)sys::WriteAll(STDERR_FILENO, err);
    if (err.back() != '\n') (void)sys::WriteAll(STDERR_FILENO, "\n");
  }
  return Outcome(status, std::move(out), std::move(err));
}

Result<CniResult> DelegateCall::WaitForResult(const std::string& config_version) {
  NG_ASSIGN_OR_RETURN(std::string out, Wait());
  // libcni: into a map, "cniVersion" filled in when missing or empty, then into the result
  // type of the result's own version.
  auto decoded = gojson::Decode(out, gojson::Any());
  if (!decoded.ok() || !decoded->is_object()) {
    return Error(kErrDecode, "decoding the result of " + binary_ + ": not a JSON object");
  }
  Json json = std::move(decoded).value();
  if (!json.contains("cniVersion") || !json["cniVersion"].is_string() ||
      json["cniVersion"].get<std::string>().empty()) {
    json["cniVersion"] = EffectiveVersion(config_version);
  }
  auto result = DecodeResult(gojson::Refold(std::move(json), ResultShape()), config_version);
  if (!result.ok()) return result.error().WithContext("decoding the result of " + binary_);
  return result;
}

Status DelegateWithoutResult(const std::string& type, Command command, const CmdArgs& args) {
  NG_ASSIGN_OR_RETURN(DelegateCall call, DelegateCall::Start(type, command, args));
  NG_RETURN_IF_ERROR(call.Wait());
  return OkStatus();
}

}  // namespace nodegate::cni
