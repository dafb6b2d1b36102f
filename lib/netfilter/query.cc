#include "lib/netfilter/query.h"

// clang-format off
#include <netinet/in.h>  // before the kernel headers, which then skip their own copies
// clang-format on
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <net/if.h>
#include <netlink/attr.h>
#include <netlink/msg.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "lib/netfilter/release.h"
#include "lib/netlink/socket.h"

namespace nodegate::netfilter {

static_assert(kNfprotoInet == NFPROTO_INET);

std::vector<uint8_t> IfnameKey(const std::vector<std::string>& fields) {
  std::vector<uint8_t> key(fields.size() * IFNAMSIZ, 0);
  for (size_t i = 0; i < fields.size(); ++i) {
    const size_t n = std::min(fields[i].size(), static_cast<size_t>(IFNAMSIZ - 1));
    std::copy_n(fields[i].begin(), n, key.begin() + static_cast<std::ptrdiff_t>(i * IFNAMSIZ));
  }
  return key;
}

namespace {

// An nfnetlink socket whose release is handed off like libnftables' (see release.h).
struct NfnlSocket {
  explicit NfnlSocket(netlink::Socket s) : sock(std::move(s)) {}
  NfnlSocket(NfnlSocket&&) noexcept = default;
  ~NfnlSocket() {
    if (sock.get() != nullptr) HandOffBeforeClose(nl_socket_get_fd(sock.get()));
  }
  netlink::Socket sock;
};

Result<NfnlSocket> OpenNfnl() {
  NG_ASSIGN_OR_RETURN(netlink::Socket sock, netlink::Socket::Open(NETLINK_NETFILTER));
  return NfnlSocket(std::move(sock));
}

netlink::MsgPtr NewNftMessage(int type, uint8_t family) {
  netlink::MsgPtr msg = netlink::NewMessage((NFNL_SUBSYS_NFTABLES << 8) | type, 0);
  nfgenmsg header{};
  header.nfgen_family = family;
  header.version = NFNETLINK_V0;
  header.res_id = 0;
  if (msg && nlmsg_append(msg.get(), &header, sizeof(header), NLMSG_ALIGNTO) != 0) msg.reset();
  return msg;
}

}  // namespace

Result<bool> HasElement(const SetRef& set, const std::vector<uint8_t>& key) {
  NG_ASSIGN_OR_RETURN(NfnlSocket nfnl, OpenNfnl());
  netlink::MsgPtr msg = NewNftMessage(NFT_MSG_GETSETELEM, set.family);
  bool built = msg && nla_put_string(msg.get(), NFTA_SET_ELEM_LIST_TABLE, set.table.c_str()) == 0 &&
               nla_put_string(msg.get(), NFTA_SET_ELEM_LIST_SET, set.set.c_str()) == 0;
  if (built) {
    nlattr* elements = nla_nest_start(msg.get(), NFTA_SET_ELEM_LIST_ELEMENTS);
    nlattr* element = nla_nest_start(msg.get(), NFTA_LIST_ELEM);
    nlattr* key_attr = nla_nest_start(msg.get(), NFTA_SET_ELEM_KEY);
    built = elements && element && key_attr &&
            nla_put(msg.get(), NFTA_DATA_VALUE, static_cast<int>(key.size()), key.data()) == 0;
    if (built) {
      nla_nest_end(msg.get(), key_attr);
      nla_nest_end(msg.get(), element);
      nla_nest_end(msg.get(), elements);
    }
  }
  if (!built) return Error(kErrKernel, "nftables: cannot build a get-element request");

  bool found = false;
  const int reply_type = (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_NEWSETELEM;
  NG_RETURN_IF_ERROR(
      nfnl.sock.Dump(msg.get(), "nftables: get element of " + set.table + " " + set.set,
                     [&](const nlmsghdr* h) { found |= h->nlmsg_type == reply_type; }, {ENOENT}));
  return found;
}

Result<bool> HasChain(uint8_t family, const std::string& table, const std::string& chain) {
  NG_ASSIGN_OR_RETURN(NfnlSocket nfnl, OpenNfnl());
  netlink::MsgPtr msg = NewNftMessage(NFT_MSG_GETCHAIN, family);
  if (!msg || nla_put_string(msg.get(), NFTA_CHAIN_TABLE, table.c_str()) != 0 ||
      nla_put_string(msg.get(), NFTA_CHAIN_NAME, chain.c_str()) != 0) {
    return Error(kErrKernel, "nftables: cannot build a get-chain request");
  }
  bool found = false;
  const int reply_type = (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_NEWCHAIN;
  NG_RETURN_IF_ERROR(
      nfnl.sock.Dump(msg.get(), "nftables: get chain " + table + " " + chain,
                     [&](const nlmsghdr* h) { found |= h->nlmsg_type == reply_type; }, {ENOENT}));
  return found;
}

Result<bool> HasTable(uint8_t family, const std::string& table) {
  NG_ASSIGN_OR_RETURN(NfnlSocket nfnl, OpenNfnl());
  netlink::MsgPtr msg = NewNftMessage(NFT_MSG_GETTABLE, family);
  if (!msg || nla_put_string(msg.get(), NFTA_TABLE_NAME, table.c_str()) != 0) {
    return Error(kErrKernel, "nftables: cannot build a get-table request");
  }
  bool found = false;
  const int reply_type = (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_NEWTABLE;
  NG_RETURN_IF_ERROR(
      nfnl.sock.Dump(msg.get(), "nftables: get table " + table,
                     [&](const nlmsghdr* h) { found |= h->nlmsg_type == reply_type; }, {ENOENT}));
  return found;
}

Status ProbeNfTables() {
  NG_ASSIGN_OR_RETURN(NfnlSocket nfnl, OpenNfnl());
  netlink::MsgPtr msg = NewNftMessage(NFT_MSG_GETGEN, NFPROTO_UNSPEC);
  if (!msg) return Error(kErrKernel, "nftables: cannot build a request");
  return nfnl.sock.Dump(msg.get(), "nftables: get generation", [](const nlmsghdr*) {});
}

}  // namespace nodegate::netfilter
