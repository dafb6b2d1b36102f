#include "ipam/cluster/agent.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <variant>

#include "ipam/cluster/config.h"
#include "ipam/cluster/plugin.h"
#include "lib/base/duration.h"
#include "lib/cni/logging.h"
#include "lib/sys/dir_io.h"
#include "lib/sys/fd.h"
#include "lib/sys/io.h"

namespace nodegate::ipam::cluster {
namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;
constexpr std::string_view kAccepted = "accepted\n";

std::string FormatDuration(std::chrono::milliseconds d) {
  return d.count() % 1000 == 0 ? std::to_string(d.count() / 1000) + "s"
                               : std::to_string(d.count()) + "ms";
}

std::string Hostname() {
  utsname name{};
  return ::uname(&name) == 0 ? std::string(name.nodename) : std::string();
}

// --- socket I/O with deadlines --------------------------------------------------------------

bool WaitFor(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p{.fd = fd, .events = events, .revents = 0};
    const int n = ::poll(&p, 1, static_cast<int>(left));
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) return false;
  }
}

bool SendAll(int fd, std::string_view data, Clock::time_point deadline) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n > 0) {
      data.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && WaitFor(fd, POLLOUT, deadline)) {
      continue;
    }
    return false;
  }
  return true;
}

enum class ReadEnd { kEof, kTooLarge, kTimedOut, kFailed };

// Reads into `out` until EOF (or until `until` appears, when given), at most `cap` bytes.
ReadEnd ReceiveUntil(int fd, std::string& out, size_t cap, Clock::time_point deadline,
                     std::string_view until = {}) {
  char buffer[16384];
  for (;;) {
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, MSG_DONTWAIT);
    if (n == 0) return ReadEnd::kEof;
    if (n > 0) {
      out.append(buffer, static_cast<size_t>(n));
      if (out.size() > cap) return ReadEnd::kTooLarge;
      if (!until.empty() && out.find(until) != std::string::npos) return ReadEnd::kEof;
      continue;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return ReadEnd::kFailed;
    if (!WaitFor(fd, POLLIN, deadline)) return ReadEnd::kTimedOut;
  }
}

sockaddr_un SocketAddress(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.data(), std::min(path.size(), sizeof address.sun_path - 1));
  return address;
}

// --- the plugin's side ----------------------------------------------------------------------

// Why the plugin works directly. `absent` (no socket, no listener) is the normal case of a
// node without an agent: logged at info, the others as warnings.
struct Unanswered {
  bool absent = false;
  std::string why;
};

// The agent's answer, or why there is none.
std::variant<AgentAnswer, Unanswered> AskAgent(const std::string& socket_path,
                                               const std::string& request,
                                               std::chrono::milliseconds answer_timeout) {
  sys::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) return Unanswered{false, std::string("socket: ") + std::strerror(errno)};
  const sockaddr_un address = SocketAddress(socket_path);
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    const int error = errno;
    return Unanswered{error == ENOENT || error == ECONNREFUSED,
                      std::string("connect: ") + std::strerror(error)};
  }
  const auto accept_deadline = Clock::now() + kAcceptTimeout;
  if (!SendAll(fd.get(), request, accept_deadline)) {
    return Unanswered{false, "the request could not be sent"};
  }
  ::shutdown(fd.get(), SHUT_WR);
  std::string received;
  ReadEnd end =
      ReceiveUntil(fd.get(), received, kMaxAnswerBytes, accept_deadline, std::string(kAccepted));
  if (received.rfind(kAccepted, 0) != 0) {
    return Unanswered{false, end == ReadEnd::kTimedOut
                                 ? "not accepted within " + FormatDuration(kAcceptTimeout)
                                 : "closed without accepting the request"};
  }
  received.erase(0, kAccepted.size());
  end = ReceiveUntil(fd.get(), received, kMaxAnswerBytes, Clock::now() + answer_timeout);
  if (end != ReadEnd::kEof) {
    return Unanswered{false, end == ReadEnd::kTimedOut
                                 ? "no answer within " + FormatDuration(answer_timeout)
                                 : "the answer was cut or too large"};
  }
  auto answer = DecodeAgentAnswer(received);
  if (!answer.ok()) {
    return Unanswered{false, received.empty() ? "closed before answering (agent stopped?)"
                                              : "unreadable answer: " + answer.error().msg};
  }
  return *std::move(answer);
}

// What the plugin needs of the config before the dispatcher reads it: the socket, the verb's
// timeout, the log file. Anything unreadable: the defaults (the dispatcher reports the error).
struct ForwardSettings {
  std::string socket = std::string(kDefaultAgentSocket);
  std::chrono::milliseconds etcd_timeout{5000};
  std::string log_file;
  std::string log_level;
};

ForwardSettings ReadForwardSettings(const std::string& stdin_data) {
  ForwardSettings settings;
  const Json conf = Json::parse(stdin_data, nullptr, false);
  if (!conf.is_object()) return settings;
  if (auto it = conf.find("logFile"); it != conf.end() && it->is_string()) {
    settings.log_file = it->get<std::string>();
  }
  if (auto it = conf.find("logLevel"); it != conf.end() && it->is_string()) {
    settings.log_level = it->get<std::string>();
  }
  auto ipam = conf.find("ipam");
  if (ipam == conf.end() || !ipam->is_object()) return settings;
  if (auto it = ipam->find("agentSocket"); it != ipam->end() && it->is_string()) {
    settings.socket = it->get<std::string>();
  }
  if (auto etcd = ipam->find("etcd"); etcd != ipam->end() && etcd->is_object()) {
    if (auto t = etcd->find("timeout"); t != etcd->end() && t->is_string()) {
      if (auto parsed = ParseGoDuration(t->get<std::string>());
          parsed && *parsed > std::chrono::nanoseconds(0)) {
        settings.etcd_timeout = std::chrono::duration_cast<std::chrono::milliseconds>(*parsed);
      }
    }
  }
  return settings;
}

bool Forwarded(const std::string& command) {
  return command == "ADD" || command == "DEL" || command == "CHECK" || command == "GC" ||
         command == "STATUS";
}

// --- the agent's side -----------------------------------------------------------------------

// The agent's own lines, on stderr. Not spdlog: a verb's run re-creates spdlog's logger (each
// request's logFile) while connection threads may be writing.
template <typename... Args>
void AgentLog(fmt::format_string<Args...> format, Args&&... args) {
  std::string line = "cluster-ipam agent: " + fmt::format(format, std::forward<Args>(args)...);
  line += '\n';
  (void)sys::WriteAll(STDERR_FILENO, line);
}

// State the connection threads share; kept alive by each of them (a thread may outlive Serve
// when the drain times out).
struct Shared {
  std::timed_mutex run;  // one verb at a time: the node lock's in-process half
  ClientCache clients;   // guarded by `run`
  std::mutex mutex;
  std::condition_variable idle;
  int active = 0;  // guarded by `mutex`
  std::atomic<uint64_t> served{0}, refused{0};
};

constexpr int kMaxConnections = 64;

AgentAnswer Run(Shared& shared, const AgentRequest& request) {
  cni::ProcessIo io;
  io.getenv = [&request](const std::string& name) -> std::optional<std::string> {
    auto it = request.env.find(name);
    if (it == request.env.end()) return std::nullopt;
    return it->second;
  };
  io.read_stdin = [&request]() -> std::optional<std::string> { return request.stdin_data; };
  AgentAnswer answer;
  io.write_stdout = [&answer](std::string_view text) { answer.stdout_data.append(text); };
  io.write_stderr = [](std::string_view text) { (void)sys::WriteAll(STDERR_FILENO, text); };

  std::unique_lock run(shared.run, std::defer_lock);
  if (!run.try_lock_for(kQueueTimeout)) {
    const Json error = {{"cniVersion", "1.1.0"},
                        {"code", kErrTryAgainLater},
                        {"msg", "cluster-ipam agent: busy, this call waited " +
                                    FormatDuration(kQueueTimeout) + " behind others"}};
    answer.exit_status = 1;
    answer.stdout_data = error.dump();
    return answer;
  }
  PluginEnvironment environment;
  if (auto it = request.env.find("KUBERNETES_NODE_NAME"); it != request.env.end()) {
    environment.node_sources.environment = it->second;
  }
  environment.node_sources.hostname = request.hostname.empty() ? Hostname() : request.hostname;
  environment.clients = &shared.clients;
  // A fresh logger per call: the call's logFile, as the exec'd plugin would log it.
  cni::InitLogging("cluster-ipam");
  answer.exit_status = cni::PluginMain(MakePlugin(std::move(environment)), io);
  return answer;
}

bool PeerIsTrusted(int fd) {
  ucred peer{};
  socklen_t size = sizeof peer;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &size) != 0) return false;
  return peer.uid == 0 || peer.uid == ::geteuid();
}

void Serve(const std::shared_ptr<Shared>& shared, sys::UniqueFd fd) {
  const auto deadline = Clock::now() + kRequestReadTimeout;
  if (!PeerIsTrusted(fd.get())) {
    ++shared->refused;
    AgentLog("refused a connection from a peer that is neither root nor the agent's user");
    return;
  }
  std::string bytes;
  const ReadEnd end = ReceiveUntil(fd.get(), bytes, kMaxRequestBytes, deadline);
  if (end != ReadEnd::kEof) {
    ++shared->refused;
    AgentLog("refused a request: {}", end == ReadEnd::kTooLarge   ? "larger than 1 MiB"
                                      : end == ReadEnd::kTimedOut ? "not complete within 2s"
                                                                  : "read failed");
    return;
  }
  if (bytes.empty()) return;  // a probe (another agent's start, a health check): nothing asked
  auto request = DecodeAgentRequest(bytes);
  if (!request.ok()) {
    ++shared->refused;
    AgentLog("refused a request: {}", request.error().msg);
    return;
  }
  if (!SendAll(fd.get(), kAccepted, deadline)) return;
  const AgentAnswer answer = Run(*shared, *request);
  ++shared->served;
  // The plugin waits for this as long as the verb may take; a plugin gone meanwhile is fine.
  (void)SendAll(fd.get(), EncodeAgentAnswer(answer), Clock::now() + kRequestReadTimeout);
}

int stop_pipe_write = -1;

void OnStopSignal(int) {
  const char byte = 0;
  (void)!::write(stop_pipe_write, &byte, 1);
}

// Binds `path` (mode 0600), refusing when another agent answers on it; a stale socket file
// (no listener) is replaced.
Result<sys::UniqueFd> Listen(const std::string& path) {
  if (path.empty() || path.front() != '/' || path.size() >= sizeof(sockaddr_un::sun_path)) {
    return Error(kErrInvalidConfig, "agent socket \"" + path + "\": an absolute path of at most " +
                                        std::to_string(sizeof(sockaddr_un::sun_path) - 1) +
                                        " bytes");
  }
  NG_RETURN_IF_ERROR(sys::MkdirAll(path.substr(0, path.rfind('/')), 0700));
  const sockaddr_un address = SocketAddress(path);
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) return Error(kErrIo, path + " exists and is not a socket");
    sys::UniqueFd probe(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (probe.valid() &&
        ::connect(probe.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0) {
      return Error(kErrIo, "another agent is serving on " + path);
    }
    ::unlink(path.c_str());
  }
  sys::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) return Error(kErrIo, std::string("socket: ") + std::strerror(errno));
  const mode_t old_mask = ::umask(0177);  // the socket is created 0600: root's only
  const int bound = ::bind(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address);
  const int bind_errno = errno;
  ::umask(old_mask);
  if (bound != 0) return Error(kErrIo, "bind " + path + ": " + std::strerror(bind_errno));
  if (::chmod(path.c_str(), 0600) != 0 || ::listen(fd.get(), 128) != 0) {
    return Error(kErrIo, "listen " + path + ": " + std::strerror(errno));
  }
  return fd;
}

}  // namespace

const std::vector<std::string>& ForwardedEnvironment() {
  static const std::vector<std::string> names = {
      "CNI_COMMAND", "CNI_CONTAINERID", "CNI_NETNS",           "CNI_IFNAME",
      "CNI_ARGS",    "CNI_PATH",        "KUBERNETES_NODE_NAME"};
  return names;
}

std::string EncodeAgentRequest(const AgentRequest& request) {
  Json env = Json::object();
  for (const auto& [name, value] : request.env) env[name] = value;
  return Json{{"agent", kAgentProtocol},
              {"env", env},
              {"hostname", request.hostname},
              {"stdin", request.stdin_data}}
      .dump(-1, ' ', false, Json::error_handler_t::replace);
}

Result<AgentRequest> DecodeAgentRequest(std::string_view bytes) {
  const auto bad = [](const std::string& why) {
    return Error(kErrInvalidEnvironment, "agent request: " + why);
  };
  const Json json = Json::parse(bytes, nullptr, false);
  if (!json.is_object()) return bad("not a JSON object");
  for (const auto& [key, value] : json.items()) {
    if (key != "agent" && key != "env" && key != "hostname" && key != "stdin") {
      return bad("unknown key " + key);
    }
  }
  const auto version = json.find("agent");
  if (version == json.end() || !version->is_number_integer() ||
      version->get<int64_t>() != kAgentProtocol) {
    return bad("protocol version is not " + std::to_string(kAgentProtocol));
  }
  AgentRequest request;
  const auto env = json.find("env");
  if (env == json.end() || !env->is_object()) return bad("env must be an object");
  const auto& allowed = ForwardedEnvironment();
  for (const auto& [name, value] : env->items()) {
    if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
      return bad("env " + name + " is not forwarded");
    }
    if (!value.is_string()) return bad("env " + name + " must be a string");
    request.env[name] = value.get<std::string>();
  }
  const auto command = request.env.find("CNI_COMMAND");
  if (command == request.env.end() || !Forwarded(command->second)) {
    return bad("CNI_COMMAND must be ADD, DEL, CHECK, GC or STATUS");
  }
  const auto hostname = json.find("hostname");
  if (hostname != json.end()) {
    if (!hostname->is_string()) return bad("hostname must be a string");
    request.hostname = hostname->get<std::string>();
  }
  const auto stdin_data = json.find("stdin");
  if (stdin_data == json.end() || !stdin_data->is_string()) return bad("stdin must be a string");
  request.stdin_data = stdin_data->get<std::string>();
  return request;
}

std::string EncodeAgentAnswer(const AgentAnswer& answer) {
  return Json{{"exit", answer.exit_status}, {"stdout", answer.stdout_data}}.dump(
      -1, ' ', false, Json::error_handler_t::replace);
}

Result<AgentAnswer> DecodeAgentAnswer(std::string_view bytes) {
  const Json json = Json::parse(bytes, nullptr, false);
  const auto exit_status = json.is_object() ? json.find("exit") : json.end();
  const auto stdout_data = json.is_object() ? json.find("stdout") : json.end();
  if (!json.is_object() || exit_status == json.end() || !exit_status->is_number_integer() ||
      stdout_data == json.end() || !stdout_data->is_string() || json.size() != 2) {
    return Error(kErrDecode, "not {\"exit\": <int>, \"stdout\": <string>}");
  }
  const int64_t status = exit_status->get<int64_t>();
  if (status != 0 && status != 1) return Error(kErrDecode, "exit status not 0 or 1");
  return AgentAnswer{static_cast<int>(status), stdout_data->get<std::string>()};
}

int ClusterIpamMain(const cni::ProcessIo& process) {
  cni::InitLogging("cluster-ipam");
  const cni::Plugin plugin = MakePlugin();
  const std::string command = process.getenv("CNI_COMMAND").value_or("");
  if (!Forwarded(command)) return cni::PluginMain(plugin, process);

  // stdin is read once, here: the agent gets it, or the dispatcher below does.
  const std::optional<std::string> stdin_data = process.read_stdin();
  cni::ProcessIo io = process;
  io.read_stdin = [stdin_data]() { return stdin_data; };
  if (!stdin_data) return cni::PluginMain(plugin, io);

  const ForwardSettings settings = ReadForwardSettings(*stdin_data);
  if (!settings.socket.empty()) {
    AgentRequest request;
    for (const std::string& name : ForwardedEnvironment()) {
      if (auto value = process.getenv(name)) request.env[name] = *value;
    }
    request.hostname = Hostname();
    request.stdin_data = *stdin_data;
    // The agent may queue the call (kQueueTimeout), then runs it within etcd.timeout.
    const auto answer_timeout = kQueueTimeout + settings.etcd_timeout + std::chrono::seconds(2);
    auto outcome = AskAgent(settings.socket, EncodeAgentRequest(request), answer_timeout);
    cni::ConfigureFileLogging("cluster-ipam", settings.log_file, settings.log_level);
    const std::string container = process.getenv("CNI_CONTAINERID").value_or("");
    if (auto* answer = std::get_if<AgentAnswer>(&outcome)) {
      cni::LogInfo("cluster-ipam {} {}: answered by the agent at {}", command, container,
                   settings.socket);
      io.write_stdout(answer->stdout_data);
      return answer->exit_status;
    }
    const auto& unanswered = std::get<Unanswered>(outcome);
    if (unanswered.absent) {
      cni::LogInfo("cluster-ipam {} {}: no agent at {} ({}): working directly", command, container,
                   settings.socket, unanswered.why);
    } else {
      cni::LogWarn("cluster-ipam {} {}: the agent at {} did not answer ({}): working directly",
                   command, container, settings.socket, unanswered.why);
    }
    // The dispatcher below would add the log file again.
    cni::InitLogging("cluster-ipam");
  }
  return cni::PluginMain(plugin, io);
}

int AgentMain(int argc, char** argv) {
  std::string socket_path(kDefaultAgentSocket);
  for (int i = 2; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--socket" && i + 1 < argc) {
      socket_path = argv[++i];
    } else if (arg.rfind("--socket=", 0) == 0) {
      socket_path = std::string(arg.substr(9));
    } else {
      AgentLog("usage: cluster-ipam agent [--socket PATH] (default {})", kDefaultAgentSocket);
      return 2;
    }
  }
  cni::InitLogging("cluster-ipam");
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC | O_NONBLOCK) != 0) {
    AgentLog("pipe: {}", std::strerror(errno));
    return 1;
  }
  sys::UniqueFd stop_read(pipe_fds[0]);
  sys::UniqueFd stop_write(pipe_fds[1]);
  stop_pipe_write = stop_write.get();
  struct sigaction action {};
  action.sa_handler = OnStopSignal;
  ::sigaction(SIGTERM, &action, nullptr);
  ::sigaction(SIGINT, &action, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  auto listener = Listen(socket_path);
  if (!listener.ok()) {
    AgentLog("{}", listener.error().msg);
    return 1;
  }
  AgentLog("serving on {} (pid {})", socket_path, ::getpid());
  auto shared = std::make_shared<Shared>();
  for (;;) {
    pollfd fds[2] = {{.fd = listener->get(), .events = POLLIN, .revents = 0},
                     {.fd = stop_read.get(), .events = POLLIN, .revents = 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      AgentLog("poll: {}", std::strerror(errno));
      break;
    }
    if (fds[1].revents != 0) break;
    sys::UniqueFd connection(
        ::accept4(listener->get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (!connection.valid()) continue;  // EAGAIN, ECONNABORTED: the next one
    {
      std::lock_guard lock(shared->mutex);
      if (shared->active >= kMaxConnections) {
        ++shared->refused;
        continue;  // closed unanswered: that plugin works directly
      }
      ++shared->active;
    }
    std::thread([shared, fd = std::move(connection)]() mutable {
      Serve(shared, std::move(fd));
      std::lock_guard lock(shared->mutex);
      if (--shared->active == 0) shared->idle.notify_all();
    }).detach();
  }
  // Stop: no new connection finds the socket (plugins work directly), held requests finish.
  ::unlink(socket_path.c_str());
  listener->Reset();
  std::unique_lock lock(shared->mutex);
  const bool drained =
      shared->idle.wait_for(lock, kDrainTimeout, [&] { return shared->active == 0; });
  AgentLog("stopped: {} calls served, {} connections refused{}", shared->served.load(),
           shared->refused.load(), drained ? "" : ", some calls still running were cut");
  // Calls still running hold `shared`: leave without running static destructors under them.
  if (!drained) ::_exit(0);
  return 0;
}

}  // namespace nodegate::ipam::cluster
