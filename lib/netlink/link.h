#pragma once
// Network links as values, read and changed through libnl-route (`rtnl_link`). Every call works
// in the namespace the Socket was opened in.
//
//   NG_ASSIGN_OR_RETURN(std::optional<LinkInfo> ifb, CreateIfb(sock, {.name = ..., .mtu = 1500}));
//   if (!ifb) { NG_ASSIGN_OR_RETURN(ifb, GetLinkByName(sock, "bwp6ef8579d92ac")); }

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "lib/base/result.h"
#include "lib/netlink/socket.h"

namespace nodegate::netlink {

struct LinkInfo {
  int index = 0;
  std::string name;
  std::string kind;  // IFLA_INFO_KIND: "veth", "ifb", "" for devices without one
  uint32_t mtu = 0;
  uint32_t txqlen = 0;
  bool up = false;        // IFF_UP
  std::string alias;      // IFLA_IFALIAS
  int link = 0;           // IFLA_LINK: for a veth, the peer's ifindex (in the peer's namespace)
  std::string mac;        // "aa:bb:cc:dd:ee:ff"
  int master = 0;         // IFLA_MASTER: the bridge a port is enslaved to
  bool promisc = false;   // IFF_PROMISC as set by the user (not by the bridge's own count)
  uint8_t operstate = 0;  // IF_OPER_*
};

// Not-found is a state: these return std::nullopt, not an error.
Result<std::optional<LinkInfo>> GetLinkByName(Socket& sock, const std::string& name);
Result<std::optional<LinkInfo>> GetLinkByIndex(Socket& sock, int index);
Result<std::vector<LinkInfo>> ListLinks(Socket& sock);

struct IfbSpec {
  std::string name;
  uint32_t mtu = 0;     // 0 keeps the kernel default
  uint32_t txqlen = 0;  // the reference creates its ifbs with txqueuelen 0
  std::string alias;    // empty: none
};

// Creates an ifb device, admin up, and returns it as it is then; std::nullopt when a device of
// that name exists already (left as it is). Creating first and looking only when the name is
// taken saves a round trip on the common path, where there is no such device.
// `while_down` runs on the new device before it goes up: a root qdisc grafted then needs no
// RCU grace period (on an up device the kernel first deactivates its queues and waits,
// synchronize_rcu_expedited in dev_deactivate). If it fails, the device is deleted again.
Result<std::optional<LinkInfo>> CreateIfb(
    Socket& sock, const IfbSpec& spec,
    const std::function<Status(const LinkInfo&)>& while_down = nullptr);
// Turns IPv6 off on a device of the current namespace (its disable_ipv6 sysctl); best effort.
void DisableIpv6(const std::string& name);

// Brings `index` to the spec's MTU, up state and alias, changing only what differs.
Status UpdateLink(Socket& sock, const LinkInfo& current, const IfbSpec& spec);

// Deletes a link; a link that is already gone is success.
Status DeleteLink(Socket& sock, const std::string& name);
// Deletes the link with this index; already gone is success.
Status DeleteLinkByIndex(Socket& sock, int index);
// Takes a link out of service under another name: down, then renamed (the kernel renames only
// links that are down). Both are quick, unlike deleting a link, which waits for an RCU barrier.
Status RetireLink(Socket& sock, const LinkInfo& link, const std::string& new_name);

// A bridge as the reference's bridge plugin creates it: name, MTU (0: the kernel's default)
// and VLAN filtering (IFLA_BR_VLAN_FILTERING, sent only when on).
struct BridgeSpec {
  std::string name;
  uint32_t mtu = 0;
  bool vlan_filtering = false;
};
// Creates the bridge; false (nothing changed) when a link of that name exists already, whatever
// its kind: the caller looks it up and judges.
Result<bool> CreateBridge(Socket& sock, const BridgeSpec& spec);

// A veth pair whose first end is created in the socket's namespace and whose peer is created
// directly in the namespace `peer_netns_fd` names (neither end moves afterwards). Both ends get
// `mtu` (0: the kernel's default); `peer_mac`, when given, is the peer's address.
// An RTM_*LINK message of `type` with its ifinfomsg: `family` AF_UNSPEC for the link itself,
// AF_BRIDGE for its attributes as a bridge port; `index` names the link (0: none, as in a dump
// or a request by name).
Result<MsgPtr> NewLinkMessage(int type, int flags, int family, int index, const std::string& what);

struct VethPairSpec {
  std::string name;
  std::string peer_name;
  int peer_netns_fd = -1;  // -1: the socket's namespace
  uint32_t mtu = 0;
  std::string peer_mac;  // "aa:bb:cc:dd:ee:ff" or empty
  // IFLA_TXQLEN of both ends when set (the reference bridge's pairs have 0; the kernel's
  // default is 1000).
  std::optional<uint32_t> tx_queue_len;
  // IFLA_NUM_TX_QUEUES and IFLA_NUM_RX_QUEUES of both ends when set. Unset, the kernel gives a
  // veth one queue per possible CPU and, once it is registered, cuts the queues in use to one:
  // each cut waits for an RCU grace period under the RTNL (synchronize_net in
  // netif_set_real_num_tx_queues), two per pair. Asking for one queue skips both.
  std::optional<uint32_t> queues;
};
// False (nothing created) when either name is taken in its namespace (EEXIST).
Result<bool> CreateVethPair(Socket& sock, const VethPairSpec& spec);

// Several attributes of one link in one RTM_SETLINK: the kernel applies the master first and
// the flags last, so a port is enslaved before it goes up.
struct LinkChange {
  std::optional<int> master;    // 0 releases the link from its master
  std::optional<bool> up;       // IFF_UP
  std::optional<bool> promisc;  // IFF_PROMISC
  std::string mac;              // IFLA_ADDRESS, "" keeps it
  // IFLA_MTU. On a bridge this also marks the MTU as the user's: the kernel stops moving it
  // to its ports' smallest (and to 1500 once it has none).
  std::optional<uint32_t> mtu;
};
Status ChangeLink(Socket& sock, int index, const LinkChange& change, const std::string& what);

// The veth peer's ifindex of `name`: IFLA_LINK, else ethtool's "peer_ifindex" statistic
// (what the reference's ip.GetVethPeerIfindex does). Errors name what is wrong: no such
// link, not a veth, no peer index.
Result<int> VethPeerIndex(Socket& sock, const std::string& name);

}  // namespace nodegate::netlink
