#include "lib/netfilter/nft_batch.h"

// clang-format off
#include <netinet/in.h>  // before the kernel headers, which then skip their own copies
// clang-format on
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netlink.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "lib/netfilter/nfnl.h"
#include "lib/netfilter/release.h"
#include "lib/sys/fd.h"

namespace nodegate::netfilter {
namespace {

constexpr uint32_t kBeginSeq = 1;

// A nested attribute's length is 16 bits: a change with many elements is sent as several
// messages of at most this many bytes of elements each (as libnftnl splits them).
constexpr size_t kMaxElementBytes = 32 * 1024;

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

size_t NftBatch::Enqueue(int msg, uint16_t flags, const AttrWriter& attrs) {
  const size_t change = Next();
  Queue(family_, NftMessageType(msg), flags, attrs, change);
  return change;
}

size_t NftBatch::EnqueueNamed(int msg, uint16_t flags, uint16_t table_attr, uint16_t name_attr,
                              const std::string& name) {
  AttrWriter w;
  w.PutString(table_attr, table_);
  w.PutString(name_attr, name);
  return Enqueue(msg, flags, w);
}

size_t NftBatch::AddTable(const NftTable& table) {
  AttrWriter w;
  w.PutString(NFTA_TABLE_NAME, table_);
  w.PutBe32(NFTA_TABLE_FLAGS, 0);
  if (!table.comment.empty()) w.Put(NFTA_TABLE_USERDATA, CommentUserData(table.comment));
  return Enqueue(NFT_MSG_NEWTABLE, NLM_F_ACK | NLM_F_CREATE, w);
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
  return Enqueue(NFT_MSG_NEWSET, NLM_F_ACK | NLM_F_CREATE, w);
}

size_t NftBatch::DeleteSet(const std::string& name) {
  return EnqueueNamed(NFT_MSG_DELSET, NLM_F_ACK, NFTA_SET_TABLE, NFTA_SET_NAME, name);
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
  return Enqueue(NFT_MSG_NEWCHAIN, NLM_F_ACK | NLM_F_CREATE, w);
}

size_t NftBatch::FlushChain(const std::string& chain) {
  return EnqueueNamed(NFT_MSG_DELRULE, NLM_F_ACK, NFTA_RULE_TABLE, NFTA_RULE_CHAIN, chain);
}

size_t NftBatch::DeleteChain(const std::string& chain) {
  return EnqueueNamed(NFT_MSG_DELCHAIN, NLM_F_ACK, NFTA_CHAIN_TABLE, NFTA_CHAIN_NAME, chain);
}

size_t NftBatch::AddRule(const NftRule& rule) {
  AttrWriter w;
  w.PutString(NFTA_RULE_TABLE, table_);
  w.PutString(NFTA_RULE_CHAIN, rule.chain);
  const size_t list = w.BeginNested(NFTA_RULE_EXPRESSIONS);
  AppendExpressions(w, rule.exprs);
  w.EndNested(list);
  if (!rule.comment.empty()) w.Put(NFTA_RULE_USERDATA, CommentUserData(rule.comment));
  return Enqueue(NFT_MSG_NEWRULE, NLM_F_ACK | NLM_F_CREATE | NLM_F_APPEND, w);
}

size_t NftBatch::DeleteRule(uint8_t family, const std::string& table, const std::string& chain,
                            uint64_t handle) {
  AttrWriter w;
  w.PutString(NFTA_RULE_TABLE, table);
  w.PutString(NFTA_RULE_CHAIN, chain);
  w.PutBe64(NFTA_RULE_HANDLE, handle);
  const size_t change = Next();
  Queue(family, NftMessageType(NFT_MSG_DELRULE), NLM_F_ACK, w, change);
  return change;
}

size_t NftBatch::ChangeElements(const ElementChange& change) {
  const size_t index = Next();
  const uint16_t type =
      NftMessageType(change.verb == ElementVerb::kDelete ? NFT_MSG_DELSETELEM : NFT_MSG_NEWSETELEM);
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

  const std::vector<ByteView> views = messages_.Views();
  NG_ASSIGN_OR_RETURN(
      const std::vector<BatchAnswer> answers,
      SendBatch(fd.get(), NfnlBatch{kBeginSeq, generation, views, change_of_.size()},
                "nftables: batch"));
  return RefusalsOf(answers);
}

Result<std::vector<BatchRefusal>> NftBatch::RefusalsOf(
    const std::vector<BatchAnswer>& answers) const {
  // Every message asked for an ack: each is answered (an ack, or its refusal).
  std::vector<BatchRefusal> refusals;
  std::vector<bool> answered(change_of_.size(), false);
  size_t open = change_of_.size();
  for (const BatchAnswer& answer : answers) {
    const size_t message = answer.seq - kBeginSeq - 1;
    if (message >= change_of_.size() || answered[message]) continue;
    answered[message] = true;
    --open;
    const size_t change = change_of_[message];
    const bool known = std::any_of(refusals.begin(), refusals.end(),
                                   [&](const BatchRefusal& r) { return r.change == change; });
    if (answer.error != 0 && !known) {
      refusals.push_back(BatchRefusal{change, answer.error, answer.ext_ack});
    }
  }
  if (open > 0) return Error(kErrKernel, "nftables: batch: no answer from the kernel");
  std::sort(refusals.begin(), refusals.end(),
            [](const BatchRefusal& a, const BatchRefusal& b) { return a.change < b.change; });
  return refusals;
}

}  // namespace nodegate::netfilter
