#include "lib/netfilter/element_batch.h"

// clang-format off
#include <netinet/in.h>  // before the kernel headers, which then skip their own copies
// clang-format on
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netlink.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "lib/netfilter/nfnl.h"
#include "lib/netfilter/nlattr.h"
#include "lib/netfilter/release.h"
#include "lib/sys/fd.h"

namespace nodegate::netfilter {
namespace {

constexpr int kReplyTimeoutMs = 5000;

// Appends one message (NfnlMessage) to `out`.
void AppendMessage(std::vector<uint8_t>& out, uint16_t type, uint16_t flags, uint32_t seq,
                   uint8_t family, uint16_t res_id, ByteView attrs) {
  const size_t start = out.size();
  out.resize(start + NfnlMessageLength(attrs.size()), 0);
  WriteNfnlMessage(out.data() + start, type, flags, seq, family, res_id, attrs);
}

void PutData(AttrWriter& w, uint16_t type, const std::vector<uint8_t>& value) {
  const size_t nest = w.BeginNested(type);
  w.Put(NFTA_DATA_VALUE, value.data(), value.size());
  w.EndNested(nest);
}

// A nested attribute's length is 16 bits: a change with many elements is sent as several
// messages of at most this many bytes of elements each (as libnftnl splits them).
constexpr size_t kMaxElementBytes = 32 * 1024;

// The messages' attributes for `change`: table, set, and its elements from `first` on, as many
// as fit; `next` is set to the first element left for the next message.
std::vector<uint8_t> ChangeAttributes(const std::string& table, const ElementChange& change,
                                      size_t first, size_t& next) {
  AttrWriter w;
  w.PutString(NFTA_SET_ELEM_LIST_TABLE, table);
  w.PutString(NFTA_SET_ELEM_LIST_SET, change.set);
  const size_t list = w.BeginNested(NFTA_SET_ELEM_LIST_ELEMENTS);
  next = first;
  while (next < change.elements.size() && w.bytes().size() - list < kMaxElementBytes) {
    const ElementWrite& element = change.elements[next++];
    const size_t item = w.BeginNested(NFTA_LIST_ELEM);
    PutData(w, NFTA_SET_ELEM_KEY, element.key);
    if (!element.data.empty()) PutData(w, NFTA_SET_ELEM_DATA, element.data);
    if (element.interval_end) w.PutBe32(NFTA_SET_ELEM_FLAGS, NFT_SET_ELEM_INTERVAL_END);
    if (!element.comment.empty()) {
      const std::vector<uint8_t> udata = CommentUserData(element.comment);
      w.Put(NFTA_SET_ELEM_USERDATA, udata.data(), udata.size());
    }
    w.EndNested(item);
  }
  w.EndNested(list);
  return w.bytes();
}

uint16_t ChangeFlags(ElementVerb verb) {
  uint16_t flags = NLM_F_REQUEST | NLM_F_ACK;
  if (verb == ElementVerb::kAdd) flags |= NLM_F_CREATE;
  if (verb == ElementVerb::kCreate) flags |= NLM_F_CREATE | NLM_F_EXCL;
  return flags;
}

uint16_t ChangeType(ElementVerb verb) {
  const int message = verb == ElementVerb::kDelete ? NFT_MSG_DELSETELEM : NFT_MSG_NEWSETELEM;
  return static_cast<uint16_t>((NFNL_SUBSYS_NFTABLES << 8) | message);
}

}  // namespace

std::vector<uint8_t> CommentUserData(const std::string& comment) {
  constexpr uint8_t kCommentRecord = 0;                       // NFTNL_UDATA_SET_ELEM_COMMENT
  const size_t text = std::min<size_t>(comment.size(), 254);  // the length is one byte
  std::vector<uint8_t> out(2 + text + 1, 0);
  out[0] = kCommentRecord;
  out[1] = static_cast<uint8_t>(text + 1);
  std::memcpy(out.data() + 2, comment.data(), text);
  return out;
}

Result<std::vector<ElementRefusal>> WriteElements(uint8_t family, const std::string& table,
                                                  const std::vector<ElementChange>& changes) {
  if (changes.empty()) return std::vector<ElementRefusal>();
  NG_ASSIGN_OR_RETURN(sys::UniqueFd fd, OpenNfnlSocket());
  // Deletions free memory one grace period after the commit; closing the last nfnetlink socket
  // would wait for that (release.h).
  struct HandOff {
    int fd;
    ~HandOff() { HandOffBeforeClose(fd); }
  } hand_off{fd.get()};

  // Sequence numbers: the batch begin, one per message, the batch end. `change_of[i]` is the
  // change message kBeginSeq + 1 + i belongs to.
  constexpr uint32_t kBeginSeq = 1;
  std::vector<uint8_t> batch;
  std::vector<size_t> change_of;
  AppendMessage(batch, NFNL_MSG_BATCH_BEGIN, NLM_F_REQUEST, kBeginSeq, AF_UNSPEC,
                NFNL_SUBSYS_NFTABLES, {});
  for (size_t i = 0; i < changes.size(); ++i) {
    size_t first = 0;
    do {
      size_t next = 0;
      const std::vector<uint8_t> attrs = ChangeAttributes(table, changes[i], first, next);
      AppendMessage(batch, ChangeType(changes[i].verb), ChangeFlags(changes[i].verb),
                    kBeginSeq + 1 + static_cast<uint32_t>(change_of.size()), family, 0, attrs);
      change_of.push_back(i);
      first = next;
    } while (first < changes[i].elements.size());
  }
  AppendMessage(batch, NFNL_MSG_BATCH_END, NLM_F_REQUEST,
                kBeginSeq + 1 + static_cast<uint32_t>(change_of.size()), AF_UNSPEC,
                NFNL_SUBSYS_NFTABLES, {});
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (batch.size() > 64 * 1024) {  // past the default send buffer
    const int size = static_cast<int>(batch.size() + 4096);
    (void)::setsockopt(fd.get(), SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof(size));
  }
  if (::sendto(fd.get(), batch.data(), batch.size(), 0, reinterpret_cast<sockaddr*>(&kernel),
               sizeof(kernel)) != static_cast<ssize_t>(batch.size())) {
    return Error(kErrKernel, "nftables: send element batch: " + std::string(std::strerror(errno)));
  }

  // Every message is answered (an ack, or its refusal); a refused batch begin ends it early.
  std::vector<ElementRefusal> refusals;
  std::vector<bool> answered(change_of.size(), false);
  size_t open = change_of.size();
  const auto buffer = std::make_unique_for_overwrite<uint8_t[]>(16 * 1024);
  while (open > 0) {
    pollfd ready{fd.get(), POLLIN, 0};
    if (::poll(&ready, 1, kReplyTimeoutMs) != 1) {
      return Error(kErrKernel, "nftables: element batch: no answer from the kernel");
    }
    const ssize_t n = ::recv(fd.get(), buffer.get(), 16 * 1024, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Error(kErrKernel, "nftables: element batch: " + std::string(std::strerror(errno)));
    }
    int len = static_cast<int>(n);
    for (const auto* h = reinterpret_cast<const nlmsghdr*>(buffer.get()); NLMSG_OK(h, len);
         h = NLMSG_NEXT(h, len)) {
      if (h->nlmsg_type != NLMSG_ERROR || h->nlmsg_len < NLMSG_LENGTH(sizeof(nlmsgerr))) continue;
      const int error = -static_cast<const nlmsgerr*>(NLMSG_DATA(h))->error;
      if (h->nlmsg_seq == kBeginSeq) {
        return Error(kErrKernel, "nftables: element batch: " + std::string(std::strerror(error)));
      }
      if (h->nlmsg_seq <= kBeginSeq || h->nlmsg_seq > kBeginSeq + change_of.size()) continue;
      const size_t message = h->nlmsg_seq - kBeginSeq - 1;
      if (answered[message]) continue;
      answered[message] = true;
      --open;
      const size_t change = change_of[message];
      const bool known = std::any_of(refusals.begin(), refusals.end(),
                                     [&](const ElementRefusal& r) { return r.change == change; });
      if (error != 0 && !known) refusals.push_back(ElementRefusal{change, error, ExtAckMessage(h)});
    }
  }
  std::sort(refusals.begin(), refusals.end(),
            [](const ElementRefusal& a, const ElementRefusal& b) { return a.change < b.change; });
  return refusals;
}

}  // namespace nodegate::netfilter
