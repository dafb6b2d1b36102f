#include "lib/conntrack/conntrack.h"

#include <arpa/inet.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_conntrack.h>
#include <linux/netlink.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bitset>
#include <cerrno>
#include <cstring>
#include <optional>
#include <span>
#include <string>

#include "lib/netfilter/nfnl.h"
#include "lib/netfilter/nlattr.h"
#include "lib/netfilter/release.h"

namespace nodegate::conntrack {
namespace {

// The ABI values of the kernel's tuple-filter flags (nf_internals.h; not in the uapi headers).
constexpr uint32_t kFilterProtoNum = 1u << 3;
constexpr uint32_t kFilterProtoDstPort = 1u << 5;
// Up to this many ports, one kernel-filtered dump per port; beyond, one dump for them all.
constexpr size_t kPortDumpsAtMost = 2;
// A reply never waits longer than this (a helper must not stay behind for ever).
constexpr int kReplyTimeoutSeconds = 10;
// Receive buffers (ReadReplies).
constexpr size_t kDumpReply = 64 * 1024;
constexpr size_t kSmallReply = 8 * 1024;

constexpr uint16_t CtMessage(uint8_t type) {
  return static_cast<uint16_t>((NFNL_SUBSYS_CTNETLINK << 8) | type);
}

// A set of ports as a bitmap (no allocation), remembering the first few for per-port dumps.
class PortSet {
 public:
  void Add(uint16_t port) {
    if (bits_.test(port)) return;
    bits_.set(port);
    if (count_ < first_.size()) first_[count_] = port;
    ++count_;
  }
  bool Contains(uint16_t port) const { return bits_.test(port); }
  size_t size() const { return count_; }
  // The ports when there are at most kPortDumpsAtMost of them.
  std::span<const uint16_t> few() const { return {first_.data(), std::min(count_, first_.size())}; }

 private:
  std::bitset<65536> bits_;
  std::array<uint16_t, kPortDumpsAtMost> first_{};
  size_t count_ = 0;
};

// One request in a fixed buffer: header, nfgenmsg, attributes.
class Request {
 public:
  Request(uint16_t type, uint16_t flags, uint8_t family, uint32_t seq)
      : length_(netfilter::NfnlMessageLength(0)) {
    netfilter::WriteNfnlMessage(bytes_.data(), type, flags, seq, family, 0, {});
  }
  bool Put(uint16_t type, const void* data, size_t len) {
    const size_t total = NLA_ALIGN(NLA_HDRLEN + len);
    if (length_ + total > bytes_.size()) return (fits_ = false);
    const nlattr header{static_cast<uint16_t>(NLA_HDRLEN + len), type};
    std::memset(bytes_.data() + length_, 0, total);
    std::memcpy(bytes_.data() + length_, &header, sizeof(header));
    if (len > 0) std::memcpy(bytes_.data() + length_ + NLA_HDRLEN, data, len);
    length_ += total;
    return true;
  }
  // An attribute exactly as the kernel sent it, header and flags included (a dumped entry's
  // tuple).
  bool Copy(netfilter::ByteView raw) {
    const size_t total = NLA_ALIGN(raw.size());
    if (length_ + total > bytes_.size()) return (fits_ = false);
    std::memset(bytes_.data() + length_, 0, total);
    std::memcpy(bytes_.data() + length_, raw.data(), raw.size());
    length_ += total;
    return true;
  }
  // A nested attribute, flagged NLA_F_NESTED: the kernel parses CTA_FILTER strictly and
  // refuses it without the flag (EINVAL); the tuples are parsed either way.
  size_t Begin(uint16_t type) {
    const size_t start = length_;
    Put(static_cast<uint16_t>(type | NLA_F_NESTED), nullptr, 0);
    return start;
  }
  void End(size_t start) {
    const auto len = static_cast<uint16_t>(length_ - start);
    std::memcpy(bytes_.data() + start, &len, sizeof(len));
  }
  bool fits() const { return fits_; }

  // 0, or a negative errno.
  int SendTo(int fd) {
    auto* header = reinterpret_cast<nlmsghdr*>(bytes_.data());
    header->nlmsg_len = static_cast<uint32_t>(length_);
    sockaddr_nl kernel{};
    kernel.nl_family = AF_NETLINK;
    const ssize_t sent = ::sendto(fd, bytes_.data(), length_, 0,
                                  reinterpret_cast<const sockaddr*>(&kernel), sizeof(kernel));
    return sent == static_cast<ssize_t>(length_) ? 0 : (sent < 0 ? -errno : -EIO);
  }

 private:
  alignas(nlmsghdr) std::array<uint8_t, 512> bytes_{};
  size_t length_ = 0;
  bool fits_ = true;
};

// A parsed attribute with its header, as the kernel sent it (netfilter::ForEachAttr's `data`
// follows the header in the same buffer).
netfilter::ByteView WithHeader(const netfilter::Attr& attr) {
  return {attr.data.data() - NLA_HDRLEN, attr.data.size() + NLA_HDRLEN};
}

// Reads the replies to request `seq` until its end (NLMSG_DONE, or the acknowledgement
// NLMSG_ERROR) and hands every other message of it to `on_message`. 0, or a negative errno
// (the kernel's, or the socket's). `kBuffer` bytes on the stack: a dump's messages come in
// batches of up to 32 KiB (the kernel's netlink dump size), an answer or acknowledgement is small.
template <size_t kBuffer, typename OnMessage>
int ReadReplies(int fd, uint32_t seq, OnMessage&& on_message) {
  alignas(nlmsghdr) std::array<uint8_t, kBuffer> buffer;
  for (;;) {
    iovec io{buffer.data(), buffer.size()};
    sockaddr_nl from{};
    msghdr message{};
    message.msg_name = &from;
    message.msg_namelen = sizeof(from);
    message.msg_iov = &io;
    message.msg_iovlen = 1;
    const ssize_t n = ::recvmsg(fd, &message, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return -errno;
    }
    if ((message.msg_flags & MSG_TRUNC) != 0) return -EMSGSIZE;
    auto left = static_cast<unsigned>(n);
    for (auto* header = reinterpret_cast<const nlmsghdr*>(buffer.data()); NLMSG_OK(header, left);
         header = NLMSG_NEXT(header, left)) {
      if (header->nlmsg_seq != seq) continue;  // what an earlier request left unread
      if (header->nlmsg_type == NLMSG_DONE) return 0;
      if (header->nlmsg_type == NLMSG_ERROR) {
        if (header->nlmsg_len < NLMSG_LENGTH(sizeof(nlmsgerr))) return -EIO;
        return static_cast<const nlmsgerr*>(NLMSG_DATA(header))->error;
      }
      if (!netfilter::NfnlPayload(header)) continue;
      on_message(header);
    }
  }
}

// A socket of ours: NETLINK_NETFILTER, close-on-exec, with a bound wait for replies.
int OpenSocket() {
  const int fd = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_NETFILTER);
  if (fd < 0) return -errno;
  const timeval timeout{kReplyTimeoutSeconds, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  return fd;
}

// How many entries the socket's network namespace holds (its nf_conntrack_count, from
// ctnetlink's global statistics: one message, no walk of the table); nullopt when the kernel
// does not say (then the caller dumps, as before the count existed). Counted are also entries
// not yet confirmed into the hash: zero means no packet of the namespace has an entry at all.
std::optional<uint32_t> EntriesInNamespace(int fd, uint32_t seq) {
  Request request(CtMessage(IPCTNL_MSG_CT_GET_STATS), NLM_F_ACK, AF_UNSPEC, seq);
  if (request.SendTo(fd) != 0) return std::nullopt;
  std::optional<uint32_t> entries;
  // The kernel flags its answer NLM_F_MULTI without a NLMSG_DONE after it; the
  // acknowledgement asked for ends the answer.
  const int err = ReadReplies<kSmallReply>(fd, seq, [&](const nlmsghdr* header) {
    netfilter::ForEachAttr(*netfilter::NfnlPayload(header), [&](const netfilter::Attr& attr) {
      if (attr.type == CTA_STATS_GLOBAL_ENTRIES && attr.data.size() >= 4) entries = attr.Be32();
      return true;
    });
  });
  if (err != 0) return std::nullopt;
  return entries;
}

// What the flush needs of one dumped entry: where its tuple is, its L4 protocol and original
// destination port, and the attributes that name exactly it (zone, id).
struct DumpedEntry {
  netfilter::ByteView tuple;  // each with its attribute header; empty when not sent
  netfilter::ByteView zone;
  netfilter::ByteView id;
  std::optional<uint8_t> protocol;
  std::optional<uint16_t> destination_port;
};

// CTA_TUPLE_PROTO's protocol number and destination port.
void ReadProto(netfilter::ByteView proto, DumpedEntry& entry) {
  netfilter::ForEachAttr(proto, [&](const netfilter::Attr& attr) {
    if (attr.type == CTA_PROTO_NUM && !attr.data.empty()) entry.protocol = attr.U8();
    if (attr.type == CTA_PROTO_DST_PORT && attr.data.size() >= 2) {
      uint16_t be;
      std::memcpy(&be, attr.data.data(), sizeof(be));
      entry.destination_port = ntohs(be);
    }
    return true;
  });
}

DumpedEntry ReadEntry(const nlmsghdr* header) {
  DumpedEntry entry;
  netfilter::ForEachAttr(*netfilter::NfnlPayload(header), [&](const netfilter::Attr& attr) {
    if (attr.type == CTA_ZONE) entry.zone = WithHeader(attr);
    if (attr.type == CTA_ID) entry.id = WithHeader(attr);
    if (attr.type == CTA_TUPLE_ORIG) {
      entry.tuple = WithHeader(attr);
      netfilter::ForEachAttr(attr.data, [&](const netfilter::Attr& part) {
        if (part.type == CTA_TUPLE_PROTO) ReadProto(part.data, entry);
        return true;
      });
    }
    return true;
  });
  return entry;
}

// Deletes one dumped entry over `fd` (not the dumping socket, whose dump is still running):
// 1 when deleted, 0 when it was already gone, or a negative errno.
int DeleteEntry(int fd, uint8_t family, const DumpedEntry& entry, uint32_t seq) {
  Request request(CtMessage(IPCTNL_MSG_CT_DELETE), NLM_F_ACK, family, seq);
  request.Copy(entry.tuple);
  if (!entry.zone.empty()) request.Copy(entry.zone);
  if (!entry.id.empty()) request.Copy(entry.id);
  if (!request.fits()) return -EMSGSIZE;
  if (const int err = request.SendTo(fd); err != 0) return err;
  const int err = ReadReplies<kSmallReply>(fd, seq, [](const nlmsghdr*) {});
  if (err == -ENOENT) return 0;
  return err == 0 ? 1 : err;
}

// What a flush did, or where it failed.
struct Outcome {
  Flushed flushed;
  int error = 0;          // 0, or a negative errno
  const char* step = "";  // what failed
};

// Dumps (family, protocol) entries, the kernel filtering by `port` when given (CTA_FILTER,
// Linux 5.8+; older kernels ignore the filter and send everything, and every entry is checked
// here anyway), and deletes those whose destination port is in `ports`. The cost of a dump
// follows the matches, not the table: a node with 20,000 entries took 120 ms per port when
// the whole table came to user space. A dual-stack pod's port costs one dump per family: the
// kernel refuses a tuple filter without a family (an AF_UNSPEC dump with CTA_FILTER fails;
// tried on 6.18), and an unfiltered AF_UNSPEC dump would bring the whole table up again.
void DumpAndDelete(int dump_fd, int delete_fd, uint8_t family, uint8_t protocol,
                   std::optional<uint16_t> port, const PortSet& ports, uint32_t& seq,
                   Outcome& outcome) {
  Request request(CtMessage(IPCTNL_MSG_CT_GET), NLM_F_DUMP, family, ++seq);
  const size_t tuple = request.Begin(CTA_TUPLE_ORIG);
  const size_t proto = request.Begin(CTA_TUPLE_PROTO);
  request.Put(CTA_PROTO_NUM, &protocol, 1);
  if (port) {
    const uint16_t be = htons(*port);
    request.Put(CTA_PROTO_DST_PORT, &be, sizeof(be));
  }
  request.End(proto);
  request.End(tuple);
  const size_t filter = request.Begin(CTA_FILTER);
  const uint32_t orig_flags = kFilterProtoNum | (port ? kFilterProtoDstPort : 0);
  const uint32_t reply_flags = 0;
  request.Put(CTA_FILTER_ORIG_FLAGS, &orig_flags, sizeof(orig_flags));  // host order: NLA_U32
  request.Put(CTA_FILTER_REPLY_FLAGS, &reply_flags, sizeof(reply_flags));
  request.End(filter);
  ++outcome.flushed.dumps;
  if (const int err = request.SendTo(dump_fd); err != 0) {
    outcome.error = err;
    outcome.step = "dump";
    return;
  }
  const uint32_t dump_seq = seq;
  const int err = ReadReplies<kDumpReply>(dump_fd, dump_seq, [&](const nlmsghdr* header) {
    if (outcome.error != 0) return;  // the dump is read to its end all the same
    const auto* body = static_cast<const nfgenmsg*>(NLMSG_DATA(header));
    const DumpedEntry entry = ReadEntry(header);
    if (body->nfgen_family != family || entry.tuple.empty() || entry.protocol != protocol ||
        !entry.destination_port || !ports.Contains(*entry.destination_port)) {
      return;
    }
    const int deleted = DeleteEntry(delete_fd, family, entry, ++seq);
    if (deleted < 0) {
      outcome.error = deleted;
      outcome.step = "delete entry";
    } else {
      outcome.flushed.deleted += deleted;
    }
  });
  if (err != 0 && outcome.error == 0) {
    outcome.error = err;
    outcome.step = "dump";
  }
}

// The whole flush over two sockets of the caller's: one count, then per-port dumps or one
// dump of the protocol's entries.
Outcome Flush(int query_fd, int delete_fd, uint8_t family, uint8_t protocol, const PortSet& ports) {
  Outcome outcome;
  if (ports.size() == 0) return outcome;
  uint32_t seq = 1;
  // A dump walks the whole hash whatever the namespace holds (262,144 buckets here, 10 ms under
  // containerd): an empty namespace has nothing stale to find, and costs one message instead.
  if (EntriesInNamespace(query_fd, seq) == 0U) return outcome;
  // Every dump walks the kernel's whole hash table (about 3 ms on an empty table of this
  // machine's size), so past a couple of ports one dump of the protocol's entries is cheaper
  // than a filtered dump per port: a pod with 2,000 UDP ports took 6.5 s the per-port way.
  if (ports.size() > kPortDumpsAtMost) {
    DumpAndDelete(query_fd, delete_fd, family, protocol, std::nullopt, ports, seq, outcome);
    return outcome;
  }
  for (const uint16_t port : ports.few()) {
    DumpAndDelete(query_fd, delete_fd, family, protocol, port, ports, seq, outcome);
    if (outcome.error != 0) break;
  }
  return outcome;
}

// ---- after exit

struct PendingFlush {
  uint8_t family = 0;
  uint8_t protocol = 0;
  PortSet ports;
};
// Set before the process exits, read by the helper (which shares this memory) after: fixed
// storage, nothing to destroy at exit.
std::array<PendingFlush, 4> g_pending;
size_t g_pending_count = 0;

// The helper's work (netfilter::HelperWork): every pending flush over two sockets of its own,
// which it hands back so that they are closed after its wait for nf_tables, as the others.
size_t FlushPendingInHelper(std::span<int> hold) {
  const int query = OpenSocket();
  const int remove = OpenSocket();
  if (query >= 0 && remove >= 0) {
    for (size_t i = 0; i < g_pending_count; ++i) {
      const PendingFlush& pending = g_pending[i];
      (void)Flush(query, remove, pending.family, pending.protocol, pending.ports);
    }
  }
  size_t held = 0;
  for (const int fd : {query, remove}) {
    if (fd < 0) continue;
    if (held < hold.size()) {
      hold[held++] = fd;
    } else {
      ::close(fd);  // no room (never with the helper's own list): close now, waiting if need be
    }
  }
  return held;
}

// Closes a socket of a process that goes on: its nf_tables release may be deferred too.
class OwnedSocket {
 public:
  explicit OwnedSocket(int fd) : fd_(fd) {}
  OwnedSocket(const OwnedSocket&) = delete;
  OwnedSocket& operator=(const OwnedSocket&) = delete;
  ~OwnedSocket() {
    if (fd_ < 0) return;
    netfilter::HandOffBeforeClose(fd_);  // see lib/netfilter/release.h
    ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

Error KernelError(const char* step, int err) {
  return Error(kErrKernel, std::string("conntrack: ") + step + ": " + std::strerror(-err));
}

}  // namespace

Result<Flushed> DeleteByDestinationPort(int family, uint8_t protocol,
                                        const std::vector<uint16_t>& ports) {
  if (ports.empty()) return Flushed{};
  PortSet wanted;
  for (const uint16_t port : ports) wanted.Add(port);
  const OwnedSocket query(OpenSocket());
  if (query.get() < 0) return KernelError("socket", query.get());
  const OwnedSocket remove(OpenSocket());
  if (remove.get() < 0) return KernelError("socket", remove.get());
  const Outcome outcome =
      Flush(query.get(), remove.get(), static_cast<uint8_t>(family), protocol, wanted);
  if (outcome.error != 0) return KernelError(outcome.step, outcome.error);
  return outcome.flushed;
}

bool DeleteByDestinationPortAfterExit(int family, uint8_t protocol,
                                      const std::vector<uint16_t>& ports) {
  if (ports.empty()) return true;
  PendingFlush* pending = nullptr;
  for (size_t i = 0; i < g_pending_count; ++i) {
    if (g_pending[i].family == family && g_pending[i].protocol == protocol) {
      pending = &g_pending[i];
    }
  }
  if (pending == nullptr) {
    if (g_pending_count == g_pending.size()) return false;
    if (g_pending_count == 0 && !netfilter::RunInHelperAtExit(FlushPendingInHelper)) {
      return false;
    }
    pending = &g_pending[g_pending_count++];
    pending->family = static_cast<uint8_t>(family);
    pending->protocol = protocol;
  }
  for (const uint16_t port : ports) pending->ports.Add(port);
  return true;
}

}  // namespace nodegate::conntrack
