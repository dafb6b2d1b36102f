#include "lib/conntrack/conntrack.h"

#include <arpa/inet.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_conntrack.h>
#include <netlink/attr.h>
#include <netlink/errno.h>
#include <netlink/netfilter/ct.h>
#include <netlink/netfilter/nfnl.h>
#include <netlink/netlink.h>

#include <memory>
#include <string>

#include "lib/netfilter/release.h"

namespace nodegate::conntrack {
namespace {

struct SockDeleter {
  void operator()(nl_sock* s) const {
    netfilter::HandOffBeforeClose(nl_socket_get_fd(s));  // see lib/netfilter/release.h
    nl_socket_free(s);
  }
};

Error NlError(const std::string& what, int err) {
  return Error(kErrKernel, "conntrack: " + what + ": " + nl_geterror(err));
}

// The ABI values of the kernel's tuple-filter flags (nf_internals.h; not in the uapi headers).
constexpr uint32_t kFilterProtoNum = 1u << 3;
constexpr uint32_t kFilterProtoDstPort = 1u << 5;

struct CtDeleter {
  void operator()(nfnl_ct* ct) const { nfnl_ct_put(ct); }
};
using CtPtr = std::unique_ptr<nfnl_ct, CtDeleter>;

int CollectEntry(nl_msg* msg, void* arg) {
  nfnl_ct* ct = nullptr;
  if (nfnlmsg_ct_parse(nlmsg_hdr(msg), &ct) >= 0 && ct != nullptr) {
    static_cast<std::vector<CtPtr>*>(arg)->emplace_back(ct);
  }
  return NL_OK;
}

// The entries of one (family, protocol, original destination port). The kernel filters the
// dump itself (CTA_FILTER, Linux 5.8+), so the cost follows the matches, not the table: a node
// with 20,000 entries took 120 ms per port when the whole table came to user space. Older
// kernels ignore the filter and send everything; the caller checks each entry anyway.
Result<std::vector<CtPtr>> DumpByDestinationPort(nl_sock* sock, int family, uint8_t protocol,
                                                 uint16_t port) {
  std::unique_ptr<nl_msg, void (*)(nl_msg*)> msg(
      nfnlmsg_alloc_simple(NFNL_SUBSYS_CTNETLINK, IPCTNL_MSG_CT_GET, NLM_F_DUMP,
                           static_cast<uint8_t>(family), 0),
      nlmsg_free);
  bool built = msg != nullptr;
  if (built) {
    nlattr* tuple = nla_nest_start(msg.get(), CTA_TUPLE_ORIG);
    nlattr* proto = nla_nest_start(msg.get(), CTA_TUPLE_PROTO);
    built = tuple && proto && nla_put_u8(msg.get(), CTA_PROTO_NUM, protocol) == 0 &&
            nla_put_u16(msg.get(), CTA_PROTO_DST_PORT, htons(port)) == 0;
    if (built) {
      nla_nest_end(msg.get(), proto);
      nla_nest_end(msg.get(), tuple);
      nlattr* filter = nla_nest_start(msg.get(), CTA_FILTER);
      built = filter &&
              nla_put_u32(msg.get(), CTA_FILTER_ORIG_FLAGS,
                          kFilterProtoNum | kFilterProtoDstPort) == 0 &&
              nla_put_u32(msg.get(), CTA_FILTER_REPLY_FLAGS, 0) == 0;
      if (built) nla_nest_end(msg.get(), filter);
    }
  }
  if (!built) return Error(kErrKernel, "conntrack: cannot build a dump request");
  std::vector<CtPtr> entries;
  if (int err = nl_send_auto(sock, msg.get()); err < 0) return NlError("dump", err);
  std::unique_ptr<nl_cb, void (*)(nl_cb*)> cb(nl_cb_alloc(NL_CB_DEFAULT), nl_cb_put);
  if (!cb) return Error(kErrKernel, "conntrack: cannot allocate netlink callbacks");
  nl_cb_set(cb.get(), NL_CB_VALID, NL_CB_CUSTOM, CollectEntry, &entries);
  if (int err = nl_recvmsgs(sock, cb.get()); err < 0) return NlError("dump", err);
  return entries;
}

}  // namespace

Result<int> DeleteByDestinationPort(int family, uint8_t protocol,
                                    const std::vector<uint16_t>& ports) {
  if (ports.empty()) return 0;
  std::unique_ptr<nl_sock, SockDeleter> sock(nl_socket_alloc());
  if (!sock) return Error(kErrKernel, "conntrack: cannot allocate a netlink socket");
  if (int err = nfnl_connect(sock.get()); err < 0) return NlError("connect", err);
  int deleted = 0;
  for (const uint16_t port : ports) {
    NG_ASSIGN_OR_RETURN(std::vector<CtPtr> entries,
                        DumpByDestinationPort(sock.get(), family, protocol, port));
    for (const CtPtr& ct : entries) {
      if (nfnl_ct_get_family(ct.get()) != family || nfnl_ct_get_proto(ct.get()) != protocol ||
          nfnl_ct_get_dst_port(ct.get(), 0) != port) {
        continue;
      }
      const int err = nfnl_ct_del(sock.get(), ct.get(), 0);
      if (err < 0 && err != -NLE_OBJ_NOTFOUND) return NlError("delete entry", err);
      if (err >= 0) ++deleted;
    }
  }
  return deleted;
}

}  // namespace nodegate::conntrack
