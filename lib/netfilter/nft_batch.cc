#include "lib/netfilter/nft_batch.h"

// clang-format off
#include <netinet/in.h>  // before the kernel headers, which then skip their own copies
// clang-format on
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netlink.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <utility>

#include "lib/netfilter/nfnl.h"
#include "lib/netfilter/release.h"
#include "lib/sys/fd.h"

namespace nodegate::netfilter {
namespace {

constexpr int kReplyTimeoutMs = 5000;
constexpr uint32_t kBeginSeq = 1;
constexpr char kStaleText[] = "nf_tables ruleset changed since it was read (ERESTART)";

// A nested attribute's length is 16 bits: a change with many elements is sent as several
// messages of at most this many bytes of elements each (as libnftnl splits them).
constexpr size_t kMaxElementBytes = 32 * 1024;

uint16_t NftType(int msg) { return static_cast<uint16_t>((NFNL_SUBSYS_NFTABLES << 8) | msg); }

void PutValue(AttrWriter& w, uint16_t type, const Bytes& value) {
  const size_t nest = w.BeginNested(type);
  w.Put(NFTA_DATA_VALUE, value.data(), value.size());
  w.EndNested(nest);
}

uint16_t ElementFlags(ElementVerb verb) {
  uint16_t flags = NLM_F_ACK;
  if (verb == ElementVerb::kAdd) flags |= NLM_F_CREATE;
  if (verb == ElementVerb::kCreate) flags |= NLM_F_CREATE | NLM_F_EXCL;
  return flags;
}

// The attributes of one element message for `change`: the set, and its elements from `first`
// on, as many as fit; `next` is set to the first element left for the next message.
void ElementAttributes(AttrWriter& w, const std::string& table, const ElementChange& change,
                       size_t first, size_t& next) {
  w.PutString(NFTA_SET_ELEM_LIST_TABLE, table);
  w.PutString(NFTA_SET_ELEM_LIST_SET, change.set);
  if (change.set_id != 0) w.PutBe32(NFTA_SET_ELEM_LIST_SET_ID, change.set_id);
  const size_t list = w.BeginNested(NFTA_SET_ELEM_LIST_ELEMENTS);
  next = first;
  // A change's elements usually share one comment (the container's): encoded once.
  const std::string* encoded_comment = nullptr;
  Bytes comment_userdata;
  while (next < change.elements.size() && w.bytes().size() - list < kMaxElementBytes) {
    const ElementWrite& element = change.elements[next++];
    const size_t item = w.BeginNested(NFTA_LIST_ELEM);
    PutValue(w, NFTA_SET_ELEM_KEY, element.key);
    if (!element.key_end.empty()) PutValue(w, NFTA_SET_ELEM_KEY_END, element.key_end);
    if (!element.data.empty()) PutValue(w, NFTA_SET_ELEM_DATA, element.data);
    if (element.interval_end) w.PutBe32(NFTA_SET_ELEM_FLAGS, NFT_SET_ELEM_INTERVAL_END);
    if (!element.comment.empty()) {
      if (encoded_comment == nullptr || *encoded_comment != element.comment) {
        comment_userdata = CommentUserData(element.comment);
        encoded_comment = &element.comment;
      }
      w.Put(NFTA_SET_ELEM_USERDATA, comment_userdata);
    }
    w.EndNested(item);
  }
  w.EndNested(list);
}

// A netlink send must fit the socket's send buffer: grow it for a large batch.
void FitSendBuffer(int fd, size_t bytes) {
  if (bytes <= 64 * 1024) return;  // the default
  const int wanted = static_cast<int>(bytes + 4096);
  if (::setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &wanted, sizeof(wanted)) != 0) {
    (void)::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &wanted, sizeof(wanted));
  }
}

}  // namespace

UserData& UserData::PutU32(uint8_t type, uint32_t value) {
  bytes_.push_back(type);
  bytes_.push_back(sizeof(value));
  const auto* raw = reinterpret_cast<const uint8_t*>(&value);
  bytes_.insert(bytes_.end(), raw, raw + sizeof(value));
  return *this;
}

UserData& UserData::PutString(uint8_t type, const std::string& text) {
  const size_t len = std::min<size_t>(text.size(), 254);  // the record's length is one byte
  bytes_.push_back(type);
  bytes_.push_back(static_cast<uint8_t>(len + 1));
  bytes_.insert(bytes_.end(), text.begin(), text.begin() + static_cast<std::ptrdiff_t>(len));
  bytes_.push_back(0);
  return *this;
}

size_t UserData::BeginNest(uint8_t type) {
  bytes_.push_back(type);
  bytes_.push_back(0);
  return bytes_.size() - 2;
}

void UserData::EndNest(size_t start) {
  bytes_[start + 1] = static_cast<uint8_t>(bytes_.size() - start - 2);
}

Bytes CommentUserData(const std::string& comment) {
  constexpr uint8_t kCommentRecord = 0;  // NFTNL_UDATA_{TABLE,CHAIN,RULE,SET_ELEM}_COMMENT
  return UserData().PutString(kCommentRecord, comment).bytes();
}

NftBatch::NftBatch(uint8_t family, std::string table) : family_(family), table_(std::move(table)) {}

void NftBatch::Queue(uint8_t family, uint16_t type, uint16_t flags, const AttrWriter& attrs,
                     size_t change) {
  const ByteView bytes(attrs.bytes());
  uint8_t* at = messages_.Append(NfnlMessageLength(bytes.size()));
  const auto seq = static_cast<uint32_t>(kBeginSeq + 1 + change_of_.size());
  WriteNfnlMessage(at, type, flags, seq, family, 0, bytes);
  change_of_.push_back(change);
}

size_t NftBatch::AddTable(const NftTable& table) {
  AttrWriter w;
  w.PutString(NFTA_TABLE_NAME, table_);
  w.PutBe32(NFTA_TABLE_FLAGS, 0);
  if (!table.comment.empty()) w.Put(NFTA_TABLE_USERDATA, CommentUserData(table.comment));
  const size_t change = Next();
  Queue(family_, NftType(NFT_MSG_NEWTABLE), NLM_F_ACK | NLM_F_CREATE, w, change);
  return change;
}

size_t NftBatch::AddSet(const NftSet& set) {
  AttrWriter w;
  w.PutString(NFTA_SET_TABLE, table_);
  w.PutString(NFTA_SET_NAME, set.name);
  w.PutBe32(NFTA_SET_FLAGS, set.flags);
  w.PutBe32(NFTA_SET_KEY_TYPE, set.key_type);
  w.PutBe32(NFTA_SET_KEY_LEN, set.key_len);
  if (set.flags & NFT_SET_MAP) {
    w.PutBe32(NFTA_SET_DATA_TYPE, set.data_type);
    w.PutBe32(NFTA_SET_DATA_LEN, set.data_len);
  }
  if (set.id != 0) w.PutBe32(NFTA_SET_ID, set.id);
  if (set.size != 0 || !set.field_lens.empty()) {
    const size_t desc = w.BeginNested(NFTA_SET_DESC);
    if (set.size != 0) w.PutBe32(NFTA_SET_DESC_SIZE, set.size);
    if (!set.field_lens.empty()) {
      const size_t concat = w.BeginNested(NFTA_SET_DESC_CONCAT);
      for (const uint32_t len : set.field_lens) {
        const size_t field = w.BeginNested(NFTA_LIST_ELEM);
        w.PutBe32(NFTA_SET_FIELD_LEN, len);
        w.EndNested(field);
      }
      w.EndNested(concat);
    }
    w.EndNested(desc);
  }
  if (!set.userdata.empty()) w.Put(NFTA_SET_USERDATA, set.userdata);
  const size_t change = Next();
  Queue(family_, NftType(NFT_MSG_NEWSET), NLM_F_ACK | NLM_F_CREATE, w, change);
  return change;
}

size_t NftBatch::DeleteSet(const std::string& name) {
  AttrWriter w;
  w.PutString(NFTA_SET_TABLE, table_);
  w.PutString(NFTA_SET_NAME, name);
  const size_t change = Next();
  Queue(family_, NftType(NFT_MSG_DELSET), NLM_F_ACK, w, change);
  return change;
}

size_t NftBatch::AddChain(const NftChain& chain) {
  AttrWriter w;
  w.PutString(NFTA_CHAIN_TABLE, table_);
  w.PutString(NFTA_CHAIN_NAME, chain.name);
  if (chain.hook) {
    w.PutString(NFTA_CHAIN_TYPE, chain.hook->type);
    w.PutBe32(NFTA_CHAIN_POLICY, chain.hook->policy);
    const size_t hook = w.BeginNested(NFTA_CHAIN_HOOK);
    w.PutBe32(NFTA_HOOK_HOOKNUM, chain.hook->num);
    w.PutBe32(NFTA_HOOK_PRIORITY, static_cast<uint32_t>(chain.hook->priority));
    w.EndNested(hook);
  }
  if (!chain.comment.empty()) w.Put(NFTA_CHAIN_USERDATA, CommentUserData(chain.comment));
  const size_t change = Next();
  Queue(family_, NftType(NFT_MSG_NEWCHAIN), NLM_F_ACK | NLM_F_CREATE, w, change);
  return change;
}

size_t NftBatch::FlushChain(const std::string& chain) {
  AttrWriter w;
  w.PutString(NFTA_RULE_TABLE, table_);
  w.PutString(NFTA_RULE_CHAIN, chain);
  const size_t change = Next();
  Queue(family_, NftType(NFT_MSG_DELRULE), NLM_F_ACK, w, change);
  return change;
}

size_t NftBatch::DeleteChain(const std::string& chain) {
  AttrWriter w;
  w.PutString(NFTA_CHAIN_TABLE, table_);
  w.PutString(NFTA_CHAIN_NAME, chain);
  const size_t change = Next();
  Queue(family_, NftType(NFT_MSG_DELCHAIN), NLM_F_ACK, w, change);
  return change;
}

size_t NftBatch::AddRule(const NftRule& rule) {
  AttrWriter w;
  w.PutString(NFTA_RULE_TABLE, table_);
  w.PutString(NFTA_RULE_CHAIN, rule.chain);
  const size_t list = w.BeginNested(NFTA_RULE_EXPRESSIONS);
  AppendExpressions(w, rule.exprs);
  w.EndNested(list);
  if (!rule.comment.empty()) w.Put(NFTA_RULE_USERDATA, CommentUserData(rule.comment));
  const size_t change = Next();
  Queue(family_, NftType(NFT_MSG_NEWRULE), NLM_F_ACK | NLM_F_CREATE | NLM_F_APPEND, w, change);
  return change;
}

size_t NftBatch::DeleteRule(uint8_t family, const std::string& table, const std::string& chain,
                            uint64_t handle) {
  AttrWriter w;
  w.PutString(NFTA_RULE_TABLE, table);
  w.PutString(NFTA_RULE_CHAIN, chain);
  w.PutBe64(NFTA_RULE_HANDLE, handle);
  const size_t change = Next();
  Queue(family, NftType(NFT_MSG_DELRULE), NLM_F_ACK, w, change);
  return change;
}

size_t NftBatch::ChangeElements(const ElementChange& change) {
  const size_t index = Next();
  const uint16_t type =
      NftType(change.verb == ElementVerb::kDelete ? NFT_MSG_DELSETELEM : NFT_MSG_NEWSETELEM);
  size_t first = 0;
  do {
    AttrWriter w;
    size_t next = 0;
    ElementAttributes(w, table_, change, first, next);
    Queue(family_, type, ElementFlags(change.verb), w, index);
    first = next;
  } while (first < change.elements.size());
  return index;
}

Result<std::vector<BatchRefusal>> NftBatch::Commit(std::optional<uint32_t> generation) const {
  if (change_of_.empty()) return std::vector<BatchRefusal>();
  NG_ASSIGN_OR_RETURN(sys::UniqueFd fd, OpenNfnlSocket());
  // Deletions free memory one grace period after the commit; closing the last nfnetlink socket
  // would wait for that (release.h).
  struct HandOff {
    int fd;
    ~HandOff() { HandOffBeforeClose(fd); }
  } hand_off{fd.get()};

  AttrWriter begin_attrs;
  if (generation) begin_attrs.PutBe32(NFNL_BATCH_GENID, *generation);
  const Bytes begin = NfnlMessage(NFNL_MSG_BATCH_BEGIN, 0, kBeginSeq, AF_UNSPEC,
                                  NFNL_SUBSYS_NFTABLES, begin_attrs.bytes());
  const Bytes end =
      NfnlMessage(NFNL_MSG_BATCH_END, 0, kBeginSeq + 1 + static_cast<uint32_t>(change_of_.size()),
                  AF_UNSPEC, NFNL_SUBSYS_NFTABLES, {});
  std::vector<iovec> iov;
  iov.push_back({const_cast<uint8_t*>(begin.data()), begin.size()});
  size_t total = begin.size() + end.size();
  for (const auto view : messages_.Views()) {
    iov.push_back({const_cast<uint8_t*>(view.data()), view.size()});
    total += view.size();
  }
  iov.push_back({const_cast<uint8_t*>(end.data()), end.size()});
  FitSendBuffer(fd.get(), total);
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  msghdr msg{};
  msg.msg_name = &kernel;
  msg.msg_namelen = sizeof(kernel);
  msg.msg_iov = iov.data();
  msg.msg_iovlen = iov.size();
  if (::sendmsg(fd.get(), &msg, 0) != static_cast<ssize_t>(total)) {
    return Error(kErrKernel, "nftables: send batch: " + std::string(std::strerror(errno)));
  }

  // Every message is answered (an ack, or its refusal); a refused batch begin ends it early.
  std::vector<BatchRefusal> refusals;
  std::vector<bool> answered(change_of_.size(), false);
  size_t open = change_of_.size();
  constexpr size_t kBuffer = 64 * 1024;
  const auto buffer = std::make_unique_for_overwrite<uint8_t[]>(kBuffer);
  while (open > 0) {
    pollfd ready{fd.get(), POLLIN, 0};
    if (::poll(&ready, 1, kReplyTimeoutMs) != 1) {
      return Error(kErrKernel, "nftables: batch: no answer from the kernel");
    }
    const ssize_t n = ::recv(fd.get(), buffer.get(), kBuffer, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Error(kErrKernel, "nftables: batch: " + std::string(std::strerror(errno)));
    }
    int len = static_cast<int>(n);
    for (const auto* h = reinterpret_cast<const nlmsghdr*>(buffer.get()); NLMSG_OK(h, len);
         h = NLMSG_NEXT(h, len)) {
      if (h->nlmsg_type != NLMSG_ERROR || h->nlmsg_len < NLMSG_LENGTH(sizeof(nlmsgerr))) continue;
      const int error = -static_cast<const nlmsgerr*>(NLMSG_DATA(h))->error;
      if (h->nlmsg_seq == kBeginSeq) {
        if (error == ERESTART) return Error(kErrKernel, "nftables: batch", kStaleText);
        return Error(kErrKernel, "nftables: batch: " + std::string(std::strerror(error)));
      }
      if (h->nlmsg_seq <= kBeginSeq || h->nlmsg_seq > kBeginSeq + change_of_.size()) continue;
      const size_t message = h->nlmsg_seq - kBeginSeq - 1;
      if (answered[message]) continue;
      answered[message] = true;
      --open;
      const size_t change = change_of_[message];
      const bool known = std::any_of(refusals.begin(), refusals.end(),
                                     [&](const BatchRefusal& r) { return r.change == change; });
      if (error != 0 && !known) refusals.push_back(BatchRefusal{change, error, ExtAckMessage(h)});
    }
  }
  std::sort(refusals.begin(), refusals.end(),
            [](const BatchRefusal& a, const BatchRefusal& b) { return a.change < b.change; });
  return refusals;
}

bool IsStaleGeneration(const Error& error) { return error.details == kStaleText; }

}  // namespace nodegate::netfilter
