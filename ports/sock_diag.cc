#include "ports/sock_diag.h"

#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "lib/net/ip.h"
#include "lib/sys/fd.h"
#include "lib/sys/io.h"

namespace nodegate::ports {
namespace {

// Socket states as the kernel numbers them (include/net/tcp_states.h).
constexpr uint32_t kStateListen = 10;
constexpr uint32_t kStateClose = 7;  // an unconnected UDP socket

struct DumpSpec {
  int family;
  int protocol;
  const char* protocol_name;
  uint32_t state;
};

Status SendDumpRequest(int fd, const DumpSpec& spec) {
  struct {
    nlmsghdr header;
    inet_diag_req_v2 request;
  } message{};
  message.header.nlmsg_len = sizeof(message);
  message.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  message.header.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  message.request.sdiag_family = static_cast<uint8_t>(spec.family);
  message.request.sdiag_protocol = static_cast<uint8_t>(spec.protocol);
  message.request.idiag_states = 1U << spec.state;
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (::sendto(fd, &message, sizeof(message), 0, reinterpret_cast<sockaddr*>(&kernel),
               sizeof(kernel)) < 0) {
    return Error(kErrKernel, std::string("sock_diag request: ") + std::strerror(errno));
  }
  return OkStatus();
}

BoundSocket ToBoundSocket(const inet_diag_msg& msg, const DumpSpec& spec) {
  const net::Family family = msg.idiag_family == AF_INET6 ? net::Family::kV6 : net::Family::kV4;
  const auto address =
      net::IpAddress::FromBytes(family, reinterpret_cast<const uint8_t*>(msg.id.idiag_src));
  BoundSocket socket;
  socket.key = {address.ToString(), spec.protocol_name, ntohs(msg.id.idiag_sport)};
  socket.inode = msg.idiag_inode;
  return socket;
}

// ReadDump: the replies to one dump request, until NLMSG_DONE. The kernel's error reply sets
// `kernel_errno` (the caller decides which errors matter).
Status ReadDump(int fd, const DumpSpec& spec, std::vector<BoundSocket>& out, int& kernel_errno) {
  std::array<char, 65536> buffer;
  for (;;) {
    const ssize_t n = ::recv(fd, buffer.data(), buffer.size(), 0);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      return Error(kErrKernel, std::string("sock_diag reply: ") + std::strerror(errno));
    }
    int remaining = static_cast<int>(n);
    for (auto* h = reinterpret_cast<nlmsghdr*>(buffer.data()); NLMSG_OK(h, remaining);
         h = NLMSG_NEXT(h, remaining)) {
      if (h->nlmsg_type == NLMSG_DONE) {
        return OkStatus();
      }
      if (h->nlmsg_type == NLMSG_ERROR) {
        kernel_errno = -static_cast<const nlmsgerr*>(NLMSG_DATA(h))->error;
        return OkStatus();
      }
      const auto* msg = static_cast<const inet_diag_msg*>(NLMSG_DATA(h));
      // A UDP socket that is bound but has port 0 has not claimed anything.
      if (msg->id.idiag_sport != 0 && msg->id.idiag_dport == 0) {
        out.push_back(ToBoundSocket(*msg, spec));
      }
    }
  }
}

Status Dump(const DumpSpec& spec, std::vector<BoundSocket>& out) {
  sys::UniqueFd fd(::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG));
  if (!fd.valid()) {
    return Error(kErrKernel, std::string("NETLINK_SOCK_DIAG socket: ") + std::strerror(errno));
  }
  NG_RETURN_IF_ERROR(SendDumpRequest(fd.get(), spec));
  int kernel_errno = 0;
  NG_RETURN_IF_ERROR(ReadDump(fd.get(), spec, out, kernel_errno));
  // No sctp_diag module: the kernel has no handler for the protocol.
  if (kernel_errno != 0 && !(spec.protocol == IPPROTO_SCTP && kernel_errno == ENOENT)) {
    return Error(kErrKernel, std::string("sock_diag dump of ") + spec.protocol_name + ": " +
                                 std::strerror(kernel_errno));
  }
  return OkStatus();
}

// SctpLoaded: SCTP is registered. A dump request for it would otherwise make the kernel load
// the sctp module, which many nodes blacklist on purpose; without it no SCTP socket exists.
bool SctpLoaded() {
  auto protocols = sys::ReadRegularFile("/proc/net/protocols", 1 << 20);
  return protocols.ok() && protocols->find("\nSCTP") != std::string::npos;
}

}  // namespace

Result<std::vector<BoundSocket>> ListBoundSockets() {
  static constexpr DumpSpec kDumps[] = {
      {AF_INET, IPPROTO_TCP, "TCP", kStateListen},   {AF_INET6, IPPROTO_TCP, "TCP", kStateListen},
      {AF_INET, IPPROTO_UDP, "UDP", kStateClose},    {AF_INET6, IPPROTO_UDP, "UDP", kStateClose},
      {AF_INET, IPPROTO_SCTP, "SCTP", kStateListen}, {AF_INET6, IPPROTO_SCTP, "SCTP", kStateListen},
  };
  std::vector<BoundSocket> sockets;
  const bool sctp = SctpLoaded();
  for (const DumpSpec& spec : kDumps) {
    if (spec.protocol == IPPROTO_SCTP && !sctp) {
      continue;
    }
    NG_RETURN_IF_ERROR(Dump(spec, sockets));
  }
  return sockets;
}

}  // namespace nodegate::ports
