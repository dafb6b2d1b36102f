#include "lib/netlink/address.h"

#include <linux/if_addr.h>
#include <linux/rtnetlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <sys/socket.h>

#include <cerrno>
#include <string>

namespace nodegate::netlink {
namespace {

int AfOf(net::Family family) { return family == net::Family::kV4 ? AF_INET : AF_INET6; }

Result<MsgPtr> AddressMessage(int type, int flags, int index, const net::IpPrefix& prefix,
                              const std::string& what) {
  MsgPtr msg = NewMessage(type, flags);
  ifaddrmsg ifa{};
  ifa.ifa_family = static_cast<uint8_t>(AfOf(prefix.family()));
  ifa.ifa_prefixlen = static_cast<uint8_t>(prefix.length());
  ifa.ifa_scope = RT_SCOPE_UNIVERSE;
  ifa.ifa_index = static_cast<uint32_t>(index);
  if (!msg || nlmsg_append(msg.get(), &ifa, sizeof(ifa), NLMSG_ALIGNTO) < 0) {
    return Error(kErrKernel, what + ": out of memory");
  }
  const auto& bytes = prefix.address().bytes();
  const int len = prefix.address().byte_length();
  int r = nla_put(msg.get(), IFA_LOCAL, len, bytes.data());
  r |= nla_put(msg.get(), IFA_ADDRESS, len, bytes.data());
  if (prefix.family() == net::Family::kV4 && prefix.length() < 31 && type == RTM_NEWADDR) {
    const auto broadcast = prefix.LastAddress().bytes();
    r |= nla_put(msg.get(), IFA_BROADCAST, 4, broadcast.data());
  }
  if (r < 0) return Error(kErrKernel, what + ": message too large");
  return msg;
}

}  // namespace

Result<bool> AddAddress(Socket& sock, int index, const net::IpPrefix& prefix) {
  const std::string what = "add address " + prefix.ToString() + " to link " + std::to_string(index);
  NG_ASSIGN_OR_RETURN(MsgPtr msg,
                      AddressMessage(RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL, index, prefix, what));
  NG_ASSIGN_OR_RETURN(const int answered, sock.RequestErrno(msg.get(), what, {EEXIST}));
  return answered == 0;
}

Status DeleteAddress(Socket& sock, int index, const net::IpPrefix& prefix) {
  const std::string what =
      "delete address " + prefix.ToString() + " from link " + std::to_string(index);
  NG_ASSIGN_OR_RETURN(MsgPtr msg, AddressMessage(RTM_DELADDR, 0, index, prefix, what));
  return sock.Request(msg.get(), what, {EADDRNOTAVAIL, ENOENT, ENODEV});
}

Result<std::vector<Address>> ListAddresses(Socket& sock, int index,
                                           std::optional<net::Family> family) {
  const std::string what = "list addresses of link " + std::to_string(index);
  MsgPtr msg = NewMessage(RTM_GETADDR, NLM_F_DUMP);
  ifaddrmsg ifa{};
  ifa.ifa_family = static_cast<uint8_t>(family ? AfOf(*family) : AF_UNSPEC);
  ifa.ifa_index = static_cast<uint32_t>(index);  // the kernel filters with strict checking only
  if (!msg || nlmsg_append(msg.get(), &ifa, sizeof(ifa), NLMSG_ALIGNTO) < 0) {
    return Error(kErrKernel, what + ": out of memory");
  }
  std::vector<Address> out;
  NG_RETURN_IF_ERROR(sock.Dump(msg.get(), what, [&](const nlmsghdr* hdr) {
    if (hdr->nlmsg_type != RTM_NEWADDR) return;
    auto* h = const_cast<nlmsghdr*>(hdr);
    const auto* a = static_cast<const ifaddrmsg*>(nlmsg_data(h));
    if (static_cast<int>(a->ifa_index) != index) return;
    if (a->ifa_family != AF_INET && a->ifa_family != AF_INET6) return;
    nlattr* tb[IFA_MAX + 1] = {};
    if (nlmsg_parse(h, sizeof(ifaddrmsg), tb, IFA_MAX, nullptr) < 0) return;
    // IFA_LOCAL is the address itself; IFA_ADDRESS the peer's on point-to-point links.
    nlattr* addr = tb[IFA_LOCAL] != nullptr ? tb[IFA_LOCAL] : tb[IFA_ADDRESS];
    const net::Family f = a->ifa_family == AF_INET ? net::Family::kV4 : net::Family::kV6;
    const int len = f == net::Family::kV4 ? 4 : 16;
    if (addr == nullptr || nla_len(addr) != len) return;
    Address out_addr;
    out_addr.prefix =
        net::IpPrefix(net::IpAddress::FromBytes(f, static_cast<const uint8_t*>(nla_data(addr))),
                      a->ifa_prefixlen);
    out_addr.flags = tb[IFA_FLAGS] != nullptr ? nla_get_u32(tb[IFA_FLAGS]) : a->ifa_flags;
    out_addr.scope = a->ifa_scope;
    out.push_back(out_addr);
  }));
  return out;
}

}  // namespace nodegate::netlink
