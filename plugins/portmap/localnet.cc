#include "plugins/portmap/localnet.h"

#include <fcntl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "lib/base/split.h"
#include "lib/sys/atomic_file.h"
#include "lib/sys/fd.h"
#include "lib/sys/io.h"

namespace nodegate::portmap {

Result<std::string> RouteOutputLink(const net::IpAddress& destination) {
  sys::UniqueFd fd(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE));
  if (!fd.valid()) {
    return Error(kErrKernel, std::string("route lookup: socket: ") + std::strerror(errno));
  }
  struct {
    nlmsghdr header;
    rtmsg route;
    char attrs[64];
  } request{};
  const int length = destination.byte_length();
  request.header.nlmsg_len = NLMSG_LENGTH(sizeof(rtmsg));
  request.header.nlmsg_type = RTM_GETROUTE;
  request.header.nlmsg_flags = NLM_F_REQUEST;
  request.header.nlmsg_seq = 1;
  request.route.rtm_family = destination.is_v4() ? AF_INET : AF_INET6;
  request.route.rtm_dst_len = static_cast<unsigned char>(destination.bit_length());
  auto* attr = reinterpret_cast<rtattr*>(reinterpret_cast<char*>(&request) +
                                         NLMSG_ALIGN(request.header.nlmsg_len));
  attr->rta_type = RTA_DST;
  attr->rta_len = static_cast<unsigned short>(RTA_LENGTH(length));
  std::memcpy(RTA_DATA(attr), destination.bytes().data(), static_cast<size_t>(length));
  request.header.nlmsg_len = NLMSG_ALIGN(request.header.nlmsg_len) + RTA_ALIGN(attr->rta_len);
  if (::send(fd.get(), &request, request.header.nlmsg_len, 0) < 0) {
    return Error(kErrKernel, std::string("route lookup: send: ") + std::strerror(errno));
  }
  char buffer[8192];
  const ssize_t received = ::recv(fd.get(), buffer, sizeof(buffer), 0);
  if (received < 0) {
    return Error(kErrKernel, std::string("route lookup: recv: ") + std::strerror(errno));
  }
  unsigned int n = static_cast<unsigned int>(received);
  for (auto* h = reinterpret_cast<nlmsghdr*>(buffer); NLMSG_OK(h, n); h = NLMSG_NEXT(h, n)) {
    if (h->nlmsg_type == NLMSG_ERROR) {
      const auto* err = static_cast<const nlmsgerr*>(NLMSG_DATA(h));
      return Error(kErrKernel, "route lookup for " + destination.ToString() + ": " +
                                   std::strerror(-err->error));
    }
    if (h->nlmsg_type != RTM_NEWROUTE) continue;
    auto* route = static_cast<rtmsg*>(NLMSG_DATA(h));
    int attr_len = static_cast<int>(RTM_PAYLOAD(h));
    for (rtattr* a = RTM_RTA(route); RTA_OK(a, attr_len); a = RTA_NEXT(a, attr_len)) {
      if (a->rta_type != RTA_OIF) continue;
      const int index = *static_cast<int*>(RTA_DATA(a));
      char name[IF_NAMESIZE] = {};
      if (::if_indextoname(static_cast<unsigned>(index), name) == nullptr) {
        return Error(kErrKernel, "route lookup: no name for link " + std::to_string(index));
      }
      return std::string(name);
    }
  }
  return Error(kErrKernel, "route lookup for " + destination.ToString() + ": no output link");
}

Status EnableRouteLocalnet(const net::IpAddress& container_ip) {
  NG_ASSIGN_OR_RETURN(const std::string link, RouteOutputLink(container_ip));
  const std::string path = "/proc/sys/net/ipv4/conf/" + link + "/route_localnet";
  // Writing the sysctl makes the kernel flush and notify; skip it when already set.
  if (const auto current = sys::ReadFile(path); current.ok()) {
    const auto words = Fields(*current);
    if (!words.empty() && words[0] == "1") return OkStatus();
  }
  sys::UniqueFd out(::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC));
  if (!out.valid() || !sys::WriteAll(out.get(), "1")) {
    return Error(kErrIo, "cannot write " + path + ": " + std::strerror(errno));
  }
  return OkStatus();
}

}  // namespace nodegate::portmap
