#include "tests/portmap/harness.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <mutex>
#include <set>
#include <sstream>

namespace nodegate::portmap::testing {
namespace {

bool EnterNetns(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::setns(fd, CLONE_NEWNET) == 0;
  ::close(fd);
  return ok;
}

// The folders ModeBinDir made, removed when the test process exits (not by a forked child
// that happens to exit through exit()).
struct ModeBinDirs {
  std::set<std::string> made;
  pid_t owner = ::getpid();
  ~ModeBinDirs() {
    if (::getpid() != owner) return;
    std::error_code ec;
    for (const auto& dir : made) std::filesystem::remove_all(dir, ec);
  }
};

// A folder where iptables/ip6tables(-save/-restore) are the tools of `mode`, first on PATH for
// both plugins, so the mode under test does not depend on the machine's alternatives. One per
// test process: tests run in parallel, and a shared folder being remade by one of them made
// another's plugin find no iptables.
std::string ModeBinDir(IptablesMode mode) {
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  const std::string variant(IptablesModeName(mode));
  const std::string dir =
      "/tmp/ng-portmap-" + variant + "-bin-" + std::to_string(static_cast<long>(::getpid()));
  static ModeBinDirs dirs;
  if (dirs.made.insert(dir).second) {
    ::mkdir(dir.c_str(), 0755);
    for (const char* tool : {"iptables", "ip6tables"}) {
      for (const char* suffix : {"", "-save", "-restore"}) {
        const std::string link = dir + "/" + tool + suffix;
        const std::string target = std::string("/usr/sbin/") + tool + "-" + variant + suffix;
        ::unlink(link.c_str());
        if (::symlink(target.c_str(), link.c_str()) != 0) {
          ADD_FAILURE() << "symlink " << link;
        }
      }
    }
  }
  return dir;
}

// Runs `body` in a forked child inside `netns`; the child's stdout pipe carries the result.
std::optional<std::string> InNetns(const std::string& netns_path,
                                   const std::function<std::optional<std::string>()>& body,
                                   int timeout_ms) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return std::nullopt;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    if (!EnterNetns(netns_path)) ::_exit(2);
    auto result = body();
    if (!result) ::_exit(1);
    (void)!::write(fds[1], result->data(), result->size());
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string out;
  char buf[512];
  pollfd p{fds[0], POLLIN, 0};
  while (::poll(&p, 1, timeout_ms + 2000) > 0) {
    const ssize_t n = ::read(fds[0], buf, sizeof(buf));
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
  return out;
}

bool ToSockaddr(const std::string& ip, int port, sockaddr_storage& ss, socklen_t& len) {
  std::memset(&ss, 0, sizeof(ss));
  auto* v4 = reinterpret_cast<sockaddr_in*>(&ss);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&ss);
  if (::inet_pton(AF_INET, ip.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<uint16_t>(port));
    len = sizeof(sockaddr_in);
    return true;
  }
  if (::inet_pton(AF_INET6, ip.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(static_cast<uint16_t>(port));
    len = sizeof(sockaddr_in6);
    return true;
  }
  return false;
}

}  // namespace

Topology::Topology() {
  const std::string veth =
      "vc" + std::to_string(::getpid() % 100000) + client.name().substr(client.name().size() - 2);
  node.MustRun("ip link add " + veth + " type veth peer name eth0 netns " + client.name());
  node.MustRun("ip addr add " + node_client_ip4 + "/24 dev " + veth + " && ip -6 addr add " +
               node_client_ip6 + "/64 dev " + veth + " nodad && ip link set " + veth + " up");
  node.MustRun("sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1");
  client.MustRun("ip addr add " + client_ip4 + "/24 dev eth0 && ip -6 addr add " + client_ip6 +
                 "/64 dev eth0 nodad && ip link set eth0 up && ip route add default via " +
                 node_client_ip4 + " && ip -6 route add default via " + node_client_ip6);
  // IPv6 neighbour discovery needs the link-local addresses out of duplicate address
  // detection; traffic tests would otherwise race it.
  for (const TestNetns* ns : {&node, &container, &client}) {
    ns->Run(
        "for i in $(seq 1 50); do [ -z \"$(ip -6 addr show tentative)\" ] && break; "
        "sleep 0.1; done");
  }
}

std::string PrevResult(const std::string& v4_cidr, const std::string& v6_cidr) {
  std::string ips;
  if (!v4_cidr.empty()) ips += R"({"interface":0,"address":")" + v4_cidr + R"("})";
  if (!v6_cidr.empty()) {
    ips +=
        std::string(ips.empty() ? "" : ",") + R"({"interface":0,"address":")" + v6_cidr + R"("})";
  }
  return R"({"cniVersion":"1.0.0","interfaces":[{"name":"eth0","sandbox":"/run/netns/ctr"}],"ips":[)" +
         ips + "]}";
}

std::string Conf(const std::string& backend, const std::string& mappings,
                 const std::string& prev_result, const std::string& extra,
                 const std::string& network, const std::string& version) {
  std::string conf =
      R"({"cniVersion":")" + version + R"(","name":")" + network + R"(","type":"portmap")";
  if (!backend.empty()) conf += R"(,"backend":")" + backend + "\"";
  conf += extra;
  if (!mappings.empty()) conf += R"(,"runtimeConfig":{"portMappings":)" + mappings + "}";
  if (!prev_result.empty()) conf += R"(,"prevResult":)" + prev_result;
  return conf + "}";
}

PluginOutput Portmap(const TestNetns& node, const std::string& command,
                     const std::string& container_id, const std::string& conf, bool reference) {
  return Portmap(node, command, container_id, conf, reference, {});
}

namespace {
nodegate::testing::PluginCall PortmapCall(const TestNetns& node, const std::string& command,
                                          const std::string& container_id, const std::string& conf,
                                          bool reference,
                                          const std::map<std::string, std::string>& env) {
  nodegate::testing::PluginCall call;
  call.binary = reference ? nodegate::testing::ReferencePath("portmap")
                          : nodegate::testing::BinPath("portmap");
  call.command = command;
  call.container_id = container_id;
  call.netns = "/run/netns/ctr-" + container_id;
  call.ifname = "eth0";
  call.stdin_data = conf;
  call.run_in_netns = node.path();
  const char* path = std::getenv("PATH");
  call.extra_env["PATH"] = ModeBinDir(IptablesModeUnderTest()) + ":" +
                           (path != nullptr ? path : "/usr/sbin:/usr/bin:/sbin:/bin");
  for (const auto& [key, value] : env) call.extra_env[key] = value;
  return call;
}
}  // namespace

PluginOutput Portmap(const TestNetns& node, const std::string& command,
                     const std::string& container_id, const std::string& conf, bool reference,
                     const std::map<std::string, std::string>& env) {
  return nodegate::testing::RunPlugin(
      PortmapCall(node, command, container_id, conf, reference, env));
}

PluginOutput PortmapAndHelper(const TestNetns& node, const std::string& command,
                              const std::string& container_id, const std::string& conf) {
  auto call = PortmapCall(node, command, container_id, conf, /*reference=*/false, {});
  call.wait_for_detached = true;
  return nodegate::testing::RunPlugin(call);
}

namespace {
IptablesMode g_mode = IptablesMode::kNft;
}  // namespace

void UseIptablesMode(IptablesMode mode) { g_mode = mode; }
IptablesMode IptablesModeUnderTest() { return g_mode; }

std::string IptablesTool(bool v6) {
  return std::string(v6 ? "ip6tables-" : "iptables-") + std::string(IptablesModeName(g_mode));
}

std::string ModeParamName(const ::testing::TestParamInfo<IptablesMode>& info) {
  return std::string(IptablesModeName(info.param));
}

namespace {
std::string WithoutComments(const std::string& save) {
  std::istringstream in(save);
  std::string line, out;
  while (std::getline(in, line)) {
    if (!line.empty() && line[0] != '#') out += line + "\n";
  }
  return out;
}
}  // namespace

std::string SaveNat(const TestNetns& node, bool v6) {
  return WithoutComments(node.Run(IptablesTool(v6) + "-save -t nat 2>/dev/null").output);
}

std::string SaveNatBothFamilies(const TestNetns& node) {
  return WithoutComments(node.Run(IptablesTool(false) + "-save -t nat 2>/dev/null; " +
                                  IptablesTool(true) + "-save -t nat 2>/dev/null")
                             .output);
}

std::string NftRuleset(const TestNetns& node) { return node.Run("nft list ruleset").output; }

void ExpectEachRefusedAsInvalid(const TestNetns& node, const std::vector<std::string>& confs) {
  for (const auto& conf : confs) {
    const auto out = Portmap(node, "ADD", "bad", conf);
    EXPECT_EQ(out.exit_code, 1) << conf;
    EXPECT_NE(out.out.find("\"code\": 7"), std::string::npos) << conf << "\n" << out.out;
  }
}

EchoServer::EchoServer(const std::string& netns_path, int port, const std::string& tag) {
  int ready[2];
  if (::pipe2(ready, O_CLOEXEC) != 0) return;
  pid_ = ::fork();
  if (pid_ == 0) {
    ::close(ready[0]);
    if (!EnterNetns(netns_path)) ::_exit(2);
    const int tcp = ::socket(AF_INET6, SOCK_STREAM, 0);
    const int udp = ::socket(AF_INET6, SOCK_DGRAM, 0);
    const int off = 0, on = 1;
    for (int s : {tcp, udp}) {
      ::setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off));
      ::setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
      sockaddr_in6 addr{};
      addr.sin6_family = AF_INET6;
      addr.sin6_port = htons(static_cast<uint16_t>(port));
      addr.sin6_addr = in6addr_any;
      if (::bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) ::_exit(3);
    }
    ::listen(tcp, 64);
    (void)!::write(ready[1], "r", 1);
    ::close(ready[1]);
    pollfd fds[2] = {{tcp, POLLIN, 0}, {udp, POLLIN, 0}};
    for (;;) {
      if (::poll(fds, 2, -1) <= 0) continue;
      if (fds[0].revents & POLLIN) {
        const int c = ::accept(tcp, nullptr, nullptr);
        if (c >= 0) {
          char buf[256];
          pollfd p{c, POLLIN, 0};
          if (::poll(&p, 1, 1000) > 0) (void)!::read(c, buf, sizeof(buf));
          (void)!::write(c, tag.data(), tag.size());
          ::close(c);
        }
      }
      if (fds[1].revents & POLLIN) {
        char buf[256];
        sockaddr_storage from{};
        socklen_t len = sizeof(from);
        if (::recvfrom(udp, buf, sizeof(buf), 0, reinterpret_cast<sockaddr*>(&from), &len) >= 0) {
          ::sendto(udp, tag.data(), tag.size(), 0, reinterpret_cast<sockaddr*>(&from), len);
        }
      }
    }
  }
  ::close(ready[1]);
  char c;
  pollfd p{ready[0], POLLIN, 0};
  if (::poll(&p, 1, 5000) <= 0 || ::read(ready[0], &c, 1) != 1) {
    ADD_FAILURE() << "echo server did not start in " << netns_path;
  }
  ::close(ready[0]);
}

EchoServer::~EchoServer() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

std::optional<std::string> TcpRequest(const std::string& netns_path, const std::string& ip,
                                      int port, int timeout_ms) {
  return InNetns(
      netns_path,
      [&]() -> std::optional<std::string> {
        sockaddr_storage ss;
        socklen_t len;
        if (!ToSockaddr(ip, port, ss, len)) return std::nullopt;
        const int s = ::socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK, 0);
        if (::connect(s, reinterpret_cast<sockaddr*>(&ss), len) != 0 && errno != EINPROGRESS) {
          return std::nullopt;
        }
        pollfd p{s, POLLOUT, 0};
        if (::poll(&p, 1, timeout_ms) <= 0) return std::nullopt;
        int err = 0;
        socklen_t elen = sizeof(err);
        ::getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &elen);
        if (err != 0) return std::nullopt;
        if (::write(s, "ping\n", 5) != 5) return std::nullopt;
        std::string reply;
        char buf[256];
        p = {s, POLLIN, 0};
        while (::poll(&p, 1, timeout_ms) > 0) {
          const ssize_t n = ::read(s, buf, sizeof(buf));
          if (n <= 0) break;
          reply.append(buf, static_cast<size_t>(n));
        }
        if (reply.empty()) return std::nullopt;
        return reply;
      },
      timeout_ms * 2);
}

std::optional<std::string> UdpRequest(const std::string& netns_path, const std::string& ip,
                                      int port, int timeout_ms, int source_port) {
  return InNetns(
      netns_path,
      [&]() -> std::optional<std::string> {
        sockaddr_storage ss;
        socklen_t len;
        if (!ToSockaddr(ip, port, ss, len)) return std::nullopt;
        const int s = ::socket(ss.ss_family, SOCK_DGRAM, 0);
        if (source_port != 0) {
          sockaddr_storage local;
          socklen_t llen;
          ToSockaddr(ss.ss_family == AF_INET ? "0.0.0.0" : "::", source_port, local, llen);
          const int on = 1;
          ::setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
          if (::bind(s, reinterpret_cast<sockaddr*>(&local), llen) != 0) return std::nullopt;
        }
        if (::connect(s, reinterpret_cast<sockaddr*>(&ss), len) != 0) return std::nullopt;
        if (::send(s, "ping", 4, 0) != 4) return std::nullopt;
        pollfd p{s, POLLIN, 0};
        if (::poll(&p, 1, timeout_ms) <= 0) return std::nullopt;
        char buf[256];
        const ssize_t n = ::recv(s, buf, sizeof(buf), 0);
        if (n <= 0) return std::nullopt;
        return std::string(buf, static_cast<size_t>(n));
      },
      timeout_ms);
}

void RunTrafficScenario(const std::string& backend) {
  Topology topo;
  EchoServer server(topo.container.path(), 80, "from-container");
  const std::string mappings =
      R"([{"hostPort":8080,"containerPort":80,"protocol":"tcp"},)"
      R"({"hostPort":8053,"containerPort":80,"protocol":"udp"},)"
      R"({"hostPort":8081,"containerPort":80,"protocol":"tcp","hostIP":"198.51.100.1"}])";
  const std::string conf =
      Conf(backend, mappings, PrevResult(topo.container_ip4 + "/24", topo.container_ip6 + "/64"));
  const std::string client = topo.client.path();
  const std::string reply = "from-container";

  EXPECT_FALSE(TcpRequest(client, topo.node_client_ip4, 8080, 500)) << "mapped before ADD?";

  const auto add = Portmap(topo.node, "ADD", "ctr-traffic", conf);
  ASSERT_EQ(add.exit_code, 0) << add.out << add.err;
  EXPECT_NE(add.out.find("192.0.2.2/24"), std::string::npos) << add.out;

  EXPECT_EQ(TcpRequest(client, topo.node_client_ip4, 8080), reply) << "TCP over IPv4";
  EXPECT_EQ(UdpRequest(client, topo.node_client_ip4, 8053), reply) << "UDP over IPv4";
  EXPECT_EQ(TcpRequest(client, topo.node_client_ip6, 8080), reply) << "TCP over IPv6";
  EXPECT_EQ(UdpRequest(client, topo.node_client_ip6, 8053), reply) << "UDP over IPv6";
  // A mapping reaches the container through any local address of the node...
  EXPECT_EQ(TcpRequest(client, topo.node_ip4, 8080), reply) << "other node address";
  // ...from the node itself through localhost (route_localnet + masquerade)...
  EXPECT_EQ(TcpRequest(topo.node.path(), "127.0.0.1", 8080), reply) << "localhost";
  EXPECT_EQ(
      topo.node.Run("cat /proc/sys/net/ipv4/conf/" + topo.host_veth + "/route_localnet").output,
      "1\n");
  // ...and from the container to its own host port (hairpin, masqueraded).
  EXPECT_EQ(TcpRequest(topo.container.path(), topo.node_ip4, 8080), reply) << "hairpin v4";
  EXPECT_EQ(TcpRequest(topo.container.path(), topo.node_ip6, 8080), reply) << "hairpin v6";
  // hostIP: only that address.
  EXPECT_EQ(TcpRequest(client, topo.node_client_ip4, 8081), reply) << "hostIP address";
  EXPECT_FALSE(TcpRequest(client, topo.node_ip4, 8081, 500)) << "hostIP on another address";
  EXPECT_FALSE(TcpRequest(client, topo.node_client_ip6, 8081, 500)) << "IPv4 hostIP over IPv6";
  // Traffic to an address that is not the node's is not redirected.
  EXPECT_FALSE(TcpRequest(client, "203.0.113.9", 8080, 500)) << "non-local destination";

  const auto check = Portmap(topo.node, "CHECK", "ctr-traffic", conf);
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;

  const auto del = Portmap(topo.node, "DEL", "ctr-traffic", conf);
  ASSERT_EQ(del.exit_code, 0) << del.out << del.err;
  EXPECT_FALSE(TcpRequest(client, topo.node_client_ip4, 8080, 500)) << "mapped after DEL";
  EXPECT_FALSE(UdpRequest(client, topo.node_client_ip4, 8053, 500)) << "mapped after DEL";
  const auto again = Portmap(topo.node, "DEL", "ctr-traffic", conf);
  EXPECT_EQ(again.exit_code, 0) << again.out << again.err;
  const auto check_after = Portmap(topo.node, "CHECK", "ctr-traffic", conf);
  EXPECT_NE(check_after.exit_code, 0) << "CHECK after DEL must fail";
}

int CountLines(const std::string& text, const std::string& needle) {
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) n += line.find(needle) != std::string::npos ? 1 : 0;
  return n;
}

}  // namespace nodegate::portmap::testing
