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
#include <optional>
#include <string>
#include <unordered_set>

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
// Up to this many ports, one kernel-filtered dump per port; beyond, one dump for them all.
constexpr size_t kPortDumpsAtMost = 2;

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

// Builds a dump request for entries of (family, protocol) and, when `port` is given, that
// original destination port. The kernel filters the dump itself (CTA_FILTER, Linux 5.8+), so
// the cost follows the matches, not the table: a node with 20,000 entries took 120 ms per port
// when the whole table came to user space. Older kernels ignore the filter and send
// everything; the caller checks each entry anyway.
bool BuildDumpRequest(nl_msg* msg, uint8_t protocol, std::optional<uint16_t> port) {
  nlattr* tuple = nla_nest_start(msg, CTA_TUPLE_ORIG);
  nlattr* proto = tuple ? nla_nest_start(msg, CTA_TUPLE_PROTO) : nullptr;
  if (proto == nullptr || nla_put_u8(msg, CTA_PROTO_NUM, protocol) != 0) return false;
  if (port && nla_put_u16(msg, CTA_PROTO_DST_PORT, htons(*port)) != 0) return false;
  nla_nest_end(msg, proto);
  nla_nest_end(msg, tuple);
  nlattr* filter = nla_nest_start(msg, CTA_FILTER);
  const uint32_t fields = kFilterProtoNum | (port ? kFilterProtoDstPort : 0);
  if (filter == nullptr || nla_put_u32(msg, CTA_FILTER_ORIG_FLAGS, fields) != 0 ||
      nla_put_u32(msg, CTA_FILTER_REPLY_FLAGS, 0) != 0) {
    return false;
  }
  nla_nest_end(msg, filter);
  return true;
}

Result<std::vector<CtPtr>> Dump(nl_sock* sock, int family, uint8_t protocol,
                                std::optional<uint16_t> port) {
  std::unique_ptr<nl_msg, void (*)(nl_msg*)> msg(
      nfnlmsg_alloc_simple(NFNL_SUBSYS_CTNETLINK, IPCTNL_MSG_CT_GET, NLM_F_DUMP,
                           static_cast<uint8_t>(family), 0),
      nlmsg_free);
  if (!msg || !BuildDumpRequest(msg.get(), protocol, port)) {
    return Error(kErrKernel, "conntrack: cannot build a dump request");
  }
  std::vector<CtPtr> entries;
  if (int err = nl_send_auto(sock, msg.get()); err < 0) return NlError("dump", err);
  std::unique_ptr<nl_cb, void (*)(nl_cb*)> cb(nl_cb_alloc(NL_CB_DEFAULT), nl_cb_put);
  if (!cb) return Error(kErrKernel, "conntrack: cannot allocate netlink callbacks");
  nl_cb_set(cb.get(), NL_CB_VALID, NL_CB_CUSTOM, CollectEntry, &entries);
  if (int err = nl_recvmsgs(sock, cb.get()); err < 0) return NlError("dump", err);
  return entries;
}

int ReadEntryCount(nl_msg* msg, void* arg) {
  nlmsghdr* header = nlmsg_hdr(msg);
  nlattr* attrs[CTA_STATS_GLOBAL_MAX + 1] = {};
  if (nlmsg_parse(header, sizeof(nfgenmsg), attrs, CTA_STATS_GLOBAL_MAX, nullptr) == 0 &&
      attrs[CTA_STATS_GLOBAL_ENTRIES] != nullptr) {
    *static_cast<std::optional<uint32_t>*>(arg) =
        ntohl(nla_get_u32(attrs[CTA_STATS_GLOBAL_ENTRIES]));
  }
  return NL_OK;
}

int StopAtAck(nl_msg* /*msg*/, void* /*arg*/) { return NL_STOP; }

// How many entries the socket's network namespace holds (its nf_conntrack_count, from
// ctnetlink's global statistics: one message, no walk of the table); nullopt when the kernel
// does not say (then the caller dumps, as before the count existed). Counted are also entries
// not yet confirmed into the hash: zero means no packet of the namespace has an entry at all.
std::optional<uint32_t> EntriesInNamespace(nl_sock* sock) {
  std::unique_ptr<nl_msg, void (*)(nl_msg*)> msg(
      nfnlmsg_alloc_simple(NFNL_SUBSYS_CTNETLINK, IPCTNL_MSG_CT_GET_STATS, 0, AF_UNSPEC, 0),
      nlmsg_free);
  std::unique_ptr<nl_cb, void (*)(nl_cb*)> cb(nl_cb_alloc(NL_CB_DEFAULT), nl_cb_put);
  if (!msg || !cb || nl_send_auto(sock, msg.get()) < 0) return std::nullopt;
  std::optional<uint32_t> entries;
  nl_cb_set(cb.get(), NL_CB_VALID, NL_CB_CUSTOM, ReadEntryCount, &entries);
  // The kernel flags its answer NLM_F_MULTI without a NLMSG_DONE after it; the request asked
  // for an acknowledgement (libnl's default), and that ends the answer.
  nl_cb_set(cb.get(), NL_CB_ACK, NL_CB_CUSTOM, StopAtAck, nullptr);
  if (nl_recvmsgs(sock, cb.get()) < 0) return std::nullopt;
  return entries;
}

// Deletes the dumped entries whose original destination port is in `ports`.
Result<int> DeleteMatching(nl_sock* sock, const std::vector<CtPtr>& entries, int family,
                           uint8_t protocol, const std::unordered_set<uint16_t>& ports) {
  int deleted = 0;
  for (const CtPtr& ct : entries) {
    if (nfnl_ct_get_family(ct.get()) != family || nfnl_ct_get_proto(ct.get()) != protocol ||
        ports.count(nfnl_ct_get_dst_port(ct.get(), 0)) == 0) {
      continue;
    }
    const int err = nfnl_ct_del(sock, ct.get(), 0);
    if (err < 0 && err != -NLE_OBJ_NOTFOUND) return NlError("delete entry", err);
    if (err >= 0) ++deleted;
  }
  return deleted;
}

}  // namespace

Result<Flushed> DeleteByDestinationPort(int family, uint8_t protocol,
                                        const std::vector<uint16_t>& ports) {
  Flushed flushed;
  if (ports.empty()) return flushed;
  std::unique_ptr<nl_sock, SockDeleter> sock(nl_socket_alloc());
  if (!sock) return Error(kErrKernel, "conntrack: cannot allocate a netlink socket");
  if (int err = nfnl_connect(sock.get()); err < 0) return NlError("connect", err);
  // A dump walks the whole hash whatever the namespace holds (262,144 buckets here, 10 ms under
  // containerd): an empty namespace has nothing stale to find, and costs one message instead.
  if (EntriesInNamespace(sock.get()) == 0U) return flushed;
  const std::unordered_set<uint16_t> wanted(ports.begin(), ports.end());
  // Every dump walks the kernel's whole hash table (about 3 ms on an empty table of this
  // machine's size), so past a couple of ports one dump of the protocol's entries is cheaper
  // than a filtered dump per port: a pod with 2,000 UDP ports took 6.5 s the per-port way.
  if (wanted.size() > kPortDumpsAtMost) {
    ++flushed.dumps;
    NG_ASSIGN_OR_RETURN(auto entries, Dump(sock.get(), family, protocol, std::nullopt));
    NG_ASSIGN_OR_RETURN(flushed.deleted,
                        DeleteMatching(sock.get(), entries, family, protocol, wanted));
    return flushed;
  }
  for (const uint16_t port : wanted) {
    ++flushed.dumps;
    NG_ASSIGN_OR_RETURN(auto entries, Dump(sock.get(), family, protocol, port));
    NG_ASSIGN_OR_RETURN(const int n, DeleteMatching(sock.get(), entries, family, protocol, {port}));
    flushed.deleted += n;
  }
  return flushed;
}

}  // namespace nodegate::conntrack
