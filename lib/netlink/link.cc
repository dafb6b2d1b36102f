#include "lib/netlink/link.h"

#include <fcntl.h>
#include <linux/ethtool.h>
#include <linux/if.h>
#include <linux/sockios.h>
#include <linux/veth.h>
#include <netlink/addr.h>
#include <netlink/cache.h>
#include <netlink/errno.h>
#include <netlink/route/link.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "lib/base/scope_guard.h"
#include "lib/net/mac.h"
#include "lib/sys/fd.h"

namespace nodegate::netlink {
namespace {

struct LinkDeleter {
  void operator()(rtnl_link* link) const { rtnl_link_put(link); }
};
using LinkPtr = std::unique_ptr<rtnl_link, LinkDeleter>;

struct CacheDeleter {
  void operator()(nl_cache* cache) const { nl_cache_free(cache); }
};

LinkInfo ToInfo(rtnl_link* link) {
  LinkInfo info;
  info.index = rtnl_link_get_ifindex(link);
  if (const char* name = rtnl_link_get_name(link)) {
    info.name = name;
  }
  if (const char* kind = rtnl_link_get_type(link)) {
    info.kind = kind;
  }
  info.mtu = rtnl_link_get_mtu(link);
  info.txqlen = rtnl_link_get_txqlen(link);
  info.up = (rtnl_link_get_flags(link) & IFF_UP) != 0;
  if (const char* alias = rtnl_link_get_ifalias(link)) {
    info.alias = alias;
  }
  info.link = rtnl_link_get_link(link);
  info.master = rtnl_link_get_master(link);
  info.promisc = (rtnl_link_get_flags(link) & IFF_PROMISC) != 0;
  info.operstate = rtnl_link_get_operstate(link);
  if (nl_addr* addr = rtnl_link_get_addr(link); addr != nullptr && nl_addr_get_len(addr) > 0) {
    char buf[64];
    info.mac = nl_addr2str(addr, buf, sizeof(buf));
  }
  return info;
}

Result<std::optional<LinkInfo>> GetLink(Socket& sock, int index, const char* name,
                                        const std::string& what) {
  rtnl_link* raw = nullptr;
  const int r = rtnl_link_get_kernel(sock.get(), index, name, &raw);
  if (r == -NLE_OBJ_NOTFOUND || r == -NLE_NODEV) {
    return std::optional<LinkInfo>();
  }
  if (r < 0) {
    return LibnlError(r, what);
  }
  LinkPtr link(raw);
  return std::optional<LinkInfo>(ToInfo(link.get()));
}

// ethtool's per-driver statistics: find "peer_ifindex" among the veth driver's stat names.
Result<int> EthtoolPeerIndex(const std::string& name) {
  sys::UniqueFd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) {
    return Error(kErrKernel, std::string("ethtool socket: ") + std::strerror(errno));
  }
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, name.c_str(), IFNAMSIZ - 1);
  auto ioctl_call = [&](void* data) {
    ifr.ifr_data = static_cast<char*>(data);
    return ::ioctl(fd.get(), SIOCETHTOOL, &ifr);
  };
  // ethtool_sset_info ends in a flexible array holding one count per requested set.
  alignas(ethtool_sset_info) uint8_t sset_buf[sizeof(ethtool_sset_info) + sizeof(uint32_t)] = {};
  auto* sset = reinterpret_cast<ethtool_sset_info*>(sset_buf);
  sset->cmd = ETHTOOL_GSSET_INFO;
  sset->sset_mask = 1ULL << ETH_SS_STATS;
  if (ioctl_call(sset) != 0 || sset->sset_mask == 0) {
    return Error(kErrKernel, "ethtool: no statistics on " + name);
  }
  uint32_t count = 0;
  std::memcpy(&count, sset_buf + sizeof(ethtool_sset_info), sizeof(count));
  std::vector<uint8_t> strings_buf(sizeof(ethtool_gstrings) + count * ETH_GSTRING_LEN);
  auto* strings = reinterpret_cast<ethtool_gstrings*>(strings_buf.data());
  strings->cmd = ETHTOOL_GSTRINGS;
  strings->string_set = ETH_SS_STATS;
  strings->len = count;
  if (ioctl_call(strings) != 0) {
    return Error(kErrKernel, "ethtool: cannot read statistic names of " + name);
  }
  std::vector<uint8_t> stats_buf(sizeof(ethtool_stats) + count * sizeof(uint64_t));
  auto* stats = reinterpret_cast<ethtool_stats*>(stats_buf.data());
  stats->cmd = ETHTOOL_GSTATS;
  stats->n_stats = count;
  if (ioctl_call(stats) != 0) {
    return Error(kErrKernel, "ethtool: cannot read statistics of " + name);
  }
  for (uint32_t i = 0; i < count; ++i) {
    const char* stat_name = reinterpret_cast<const char*>(strings->data) + i * ETH_GSTRING_LEN;
    if (std::strncmp(stat_name, "peer_ifindex", ETH_GSTRING_LEN) == 0) {
      return static_cast<int>(stats->data[i]);
    }
  }
  return Error(kErrKernel, "ethtool: no peer_ifindex statistic on " + name);
}

}  // namespace

Result<std::optional<LinkInfo>> GetLinkByName(Socket& sock, const std::string& name) {
  return GetLink(sock, 0, name.c_str(), "get link " + name);
}

Result<std::optional<LinkInfo>> GetLinkByIndex(Socket& sock, int index) {
  return GetLink(sock, index, nullptr, "get link with index " + std::to_string(index));
}

Result<std::vector<LinkInfo>> ListLinks(Socket& sock) {
  nl_cache* raw = nullptr;
  if (int r = rtnl_link_alloc_cache(sock.get(), AF_UNSPEC, &raw); r < 0) {
    return LibnlError(r, "list links");
  }
  std::unique_ptr<nl_cache, CacheDeleter> cache(raw);
  std::vector<LinkInfo> out;
  for (nl_object* obj = nl_cache_get_first(cache.get()); obj != nullptr;
       obj = nl_cache_get_next(obj)) {
    out.push_back(ToInfo(reinterpret_cast<rtnl_link*>(obj)));
  }
  return out;
}

Result<std::optional<LinkInfo>> CreateIfb(
    Socket& sock, const IfbSpec& spec, const std::function<Status(const LinkInfo&)>& while_down) {
  LinkPtr link(rtnl_link_alloc());
  if (!link) {
    return Error(kErrKernel, "create ifb " + spec.name + ": out of memory");
  }
  rtnl_link_set_name(link.get(), spec.name.c_str());
  if (int r = rtnl_link_set_type(link.get(), "ifb"); r < 0) {
    return LibnlError(r, "create ifb " + spec.name);
  }
  if (spec.mtu != 0) {
    rtnl_link_set_mtu(link.get(), spec.mtu);
  }
  rtnl_link_set_txqlen(link.get(), spec.txqlen);
  // Created down, and brought up only after IPv6 is off on it: an ifb has no use for IPv6,
  // and every up or down of a device with IPv6 on walks the whole IPv6 routing table, which
  // on a node with hundreds of containers costs milliseconds (perf: addrconf_notify ->
  // fib6_clean_all).
  if (int r = rtnl_link_add(sock.get(), link.get(), NLM_F_CREATE | NLM_F_EXCL); r < 0) {
    if (r == -NLE_EXIST) return std::optional<LinkInfo>();
    return LibnlError(r, "create ifb " + spec.name);
  }
  // From here on the device exists: whatever fails deletes it again, so a caller's failed
  // creation never leaves a half-configured ifb behind.
  bool done = false;
  ScopeGuard undo([&] {
    if (!done) (void)DeleteLink(sock, spec.name);
  });
  DisableIpv6(spec.name);
  // The kernel applies IFLA_IFALIAS only when changing a link, not when creating one; the
  // same change brings the ifb up.
  NG_ASSIGN_OR_RETURN(std::optional<LinkInfo> created, GetLinkByName(sock, spec.name));
  if (!created) {
    return Error(kErrKernel, "create ifb " + spec.name + ": gone right after creation");
  }
  if (while_down) NG_RETURN_IF_ERROR(while_down(*created));
  NG_RETURN_IF_ERROR(UpdateLink(sock, *created, spec));
  created->up = true;
  created->alias = spec.alias;
  if (spec.mtu != 0) created->mtu = spec.mtu;
  done = true;
  return created;
}

void DisableIpv6(const std::string& name) {
  // Best effort: without IPv6 in the kernel there is nothing to turn off.
  const std::string path = "/proc/sys/net/ipv6/conf/" + name + "/disable_ipv6";
  sys::UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (fd.valid()) (void)!::write(fd.get(), "1", 1);
}

Status UpdateLink(Socket& sock, const LinkInfo& current, const IfbSpec& spec) {
  LinkPtr orig(rtnl_link_alloc());
  LinkPtr changes(rtnl_link_alloc());
  if (!orig || !changes) {
    return Error(kErrKernel, "update link " + current.name + ": out of memory");
  }
  rtnl_link_set_ifindex(orig.get(), current.index);
  rtnl_link_set_name(orig.get(), current.name.c_str());
  bool dirty = false;
  if (spec.mtu != 0 && spec.mtu != current.mtu) {
    rtnl_link_set_mtu(changes.get(), spec.mtu);
    dirty = true;
  }
  if (!current.up) {
    rtnl_link_set_flags(changes.get(), IFF_UP);
    dirty = true;
  }
  if (spec.alias != current.alias) {
    rtnl_link_set_ifalias(changes.get(), spec.alias.c_str());
    dirty = true;
  }
  if (!dirty) {
    return OkStatus();
  }
  if (int r = rtnl_link_change(sock.get(), orig.get(), changes.get(), 0); r < 0) {
    return LibnlError(r, "update link " + current.name);
  }
  return OkStatus();
}

Status DeleteLink(Socket& sock, const std::string& name) {
  LinkPtr link(rtnl_link_alloc());
  if (!link) {
    return Error(kErrKernel, "delete link " + name + ": out of memory");
  }
  rtnl_link_set_name(link.get(), name.c_str());
  const int r = rtnl_link_delete(sock.get(), link.get());
  if (r < 0 && r != -NLE_OBJ_NOTFOUND && r != -NLE_NODEV) {
    return LibnlError(r, "delete link " + name);
  }
  return OkStatus();
}

Status DeleteLinkByIndex(Socket& sock, int index) {
  LinkPtr link(rtnl_link_alloc());
  if (!link) {
    return Error(kErrKernel, "delete link " + std::to_string(index) + ": out of memory");
  }
  rtnl_link_set_ifindex(link.get(), index);
  const int r = rtnl_link_delete(sock.get(), link.get());
  if (r < 0 && r != -NLE_OBJ_NOTFOUND && r != -NLE_NODEV) {
    return LibnlError(r, "delete link " + std::to_string(index));
  }
  return OkStatus();
}

Status RetireLink(Socket& sock, const LinkInfo& link, const std::string& new_name) {
  LinkPtr orig(rtnl_link_alloc());
  LinkPtr down(rtnl_link_alloc());
  LinkPtr renamed(rtnl_link_alloc());
  if (!orig || !down || !renamed) {
    return Error(kErrKernel, "retire link " + link.name + ": out of memory");
  }
  rtnl_link_set_ifindex(orig.get(), link.index);
  rtnl_link_set_name(orig.get(), link.name.c_str());
  if (link.up) {
    rtnl_link_unset_flags(down.get(), IFF_UP);
    if (int r = rtnl_link_change(sock.get(), orig.get(), down.get(), 0); r < 0) {
      return LibnlError(r, "set link " + link.name + " down");
    }
  }
  rtnl_link_set_name(renamed.get(), new_name.c_str());
  if (int r = rtnl_link_change(sock.get(), orig.get(), renamed.get(), 0); r < 0) {
    return LibnlError(r, "rename link " + link.name + " to " + new_name);
  }
  return OkStatus();
}

Result<MsgPtr> NewLinkMessage(int type, int flags, int family, int index, const std::string& what) {
  MsgPtr msg = NewMessage(type, flags);
  ifinfomsg ifi{};
  ifi.ifi_family = static_cast<unsigned char>(family);
  ifi.ifi_index = index;
  if (!msg || nlmsg_append(msg.get(), &ifi, sizeof(ifi), NLMSG_ALIGNTO) < 0) {
    return Error(kErrKernel, what + ": out of memory");
  }
  return msg;
}

namespace {

Result<MsgPtr> LinkMessage(int type, int flags, int index, const std::string& what) {
  return NewLinkMessage(type, flags, AF_UNSPEC, index, what);
}

int PutQueues(nl_msg* msg, std::optional<uint32_t> queues) {
  if (!queues) return 0;
  return nla_put_u32(msg, IFLA_NUM_TX_QUEUES, *queues) |
         nla_put_u32(msg, IFLA_NUM_RX_QUEUES, *queues);
}

Status PutMac(nl_msg* msg, int attr, const std::string& text, const std::string& what) {
  auto mac = net::ParseMac(text);
  if (!mac) {
    return Error(kErrInvalidConfig, what + ": invalid MAC address " + text);
  }
  if (nla_put(msg, attr, static_cast<int>(mac->size()), mac->data()) < 0) {
    return Error(kErrKernel, what + ": message too large");
  }
  return OkStatus();
}

}  // namespace

Result<bool> CreateBridge(Socket& sock, const BridgeSpec& spec) {
  const std::string what = "create bridge " + spec.name;
  NG_ASSIGN_OR_RETURN(MsgPtr msg, LinkMessage(RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, 0, what));
  int r = nla_put_string(msg.get(), IFLA_IFNAME, spec.name.c_str());
  if (spec.mtu != 0) r |= nla_put_u32(msg.get(), IFLA_MTU, spec.mtu);
  nlattr* info = nla_nest_start(msg.get(), IFLA_LINKINFO);
  r |= info == nullptr ? -1 : nla_put_string(msg.get(), IFLA_INFO_KIND, "bridge");
  if (spec.vlan_filtering && info != nullptr) {
    nlattr* data = nla_nest_start(msg.get(), IFLA_INFO_DATA);
    r |= data == nullptr ? -1 : nla_put_u8(msg.get(), IFLA_BR_VLAN_FILTERING, 1);
    if (data != nullptr) nla_nest_end(msg.get(), data);
  }
  if (info != nullptr) nla_nest_end(msg.get(), info);
  if (r < 0) return Error(kErrKernel, what + ": message too large");
  NG_ASSIGN_OR_RETURN(const int answered, sock.RequestErrno(msg.get(), what, {EEXIST}));
  return answered == 0;
}

Result<bool> CreateVethPair(Socket& sock, const VethPairSpec& spec) {
  const std::string what = "create veth pair " + spec.name + "/" + spec.peer_name;
  NG_ASSIGN_OR_RETURN(MsgPtr msg, LinkMessage(RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, 0, what));
  nl_msg* m = msg.get();
  int r = nla_put_string(m, IFLA_IFNAME, spec.name.c_str());
  if (spec.mtu != 0) r |= nla_put_u32(m, IFLA_MTU, spec.mtu);
  if (spec.tx_queue_len) r |= nla_put_u32(m, IFLA_TXQLEN, *spec.tx_queue_len);
  r |= PutQueues(m, spec.queues);
  nlattr* info = nla_nest_start(m, IFLA_LINKINFO);
  r |= info == nullptr ? -1 : nla_put_string(m, IFLA_INFO_KIND, "veth");
  nlattr* data = info == nullptr ? nullptr : nla_nest_start(m, IFLA_INFO_DATA);
  nlattr* peer = data == nullptr ? nullptr : nla_nest_start(m, VETH_INFO_PEER);
  if (peer == nullptr) return Error(kErrKernel, what + ": message too large");
  // The peer's attributes follow an ifinfomsg of its own.
  ifinfomsg peer_ifi{};
  peer_ifi.ifi_family = AF_UNSPEC;
  r |= nlmsg_append(m, &peer_ifi, sizeof(peer_ifi), NLMSG_ALIGNTO);
  r |= nla_put_string(m, IFLA_IFNAME, spec.peer_name.c_str());
  if (spec.mtu != 0) r |= nla_put_u32(m, IFLA_MTU, spec.mtu);
  if (spec.tx_queue_len) r |= nla_put_u32(m, IFLA_TXQLEN, *spec.tx_queue_len);
  r |= PutQueues(m, spec.queues);
  if (!spec.peer_mac.empty()) NG_RETURN_IF_ERROR(PutMac(m, IFLA_ADDRESS, spec.peer_mac, what));
  if (spec.peer_netns_fd >= 0) r |= nla_put_u32(m, IFLA_NET_NS_FD, spec.peer_netns_fd);
  nla_nest_end(m, peer);
  nla_nest_end(m, data);
  nla_nest_end(m, info);
  if (r < 0) return Error(kErrKernel, what + ": message too large");
  NG_ASSIGN_OR_RETURN(const int answered, sock.RequestErrno(m, what, {EEXIST}));
  return answered == 0;
}

Status ChangeLink(Socket& sock, int index, const LinkChange& change, const std::string& what) {
  NG_ASSIGN_OR_RETURN(MsgPtr msg, LinkMessage(RTM_SETLINK, 0, index, what));
  auto* ifi = static_cast<ifinfomsg*>(nlmsg_data(nlmsg_hdr(msg.get())));
  if (change.up) {
    ifi->ifi_change |= IFF_UP;
    ifi->ifi_flags |= *change.up ? IFF_UP : 0;
  }
  if (change.promisc) {
    ifi->ifi_change |= IFF_PROMISC;
    ifi->ifi_flags |= *change.promisc ? IFF_PROMISC : 0;
  }
  int r = 0;
  if (change.master)
    r |= nla_put_u32(msg.get(), IFLA_MASTER, static_cast<uint32_t>(*change.master));
  if (!change.mac.empty()) NG_RETURN_IF_ERROR(PutMac(msg.get(), IFLA_ADDRESS, change.mac, what));
  if (change.mtu) r |= nla_put_u32(msg.get(), IFLA_MTU, *change.mtu);
  if (r < 0) return Error(kErrKernel, what + ": message too large");
  return sock.Request(msg.get(), what);
}

Result<int> VethPeerIndex(Socket& sock, const std::string& name) {
  NG_ASSIGN_OR_RETURN(std::optional<LinkInfo> link, GetLinkByName(sock, name));
  if (!link) {
    return Error(kErrKernel, "Link not found");
  }
  if (link->kind != "veth") {
    return Error(kErrInvalidConfig, "interface \"" + name + "\" was not a veth interface");
  }
  // A veth's IFLA_LINK is its peer's index, even when it equals its own (both ends are
  // index 2 in two fresh namespaces); kernels that leave it out get the ethtool answer.
  if (link->link > 0) {
    return link->link;
  }
  return EthtoolPeerIndex(name);
}

}  // namespace nodegate::netlink
