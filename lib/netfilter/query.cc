#include "lib/netfilter/query.h"

// clang-format off
#include <netinet/in.h>  // before the kernel headers, which then skip their own copies
// clang-format on
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <net/if.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "lib/netfilter/nfnl.h"
#include "lib/netfilter/nlattr.h"
#include "lib/netfilter/release.h"
#include "lib/sys/fd.h"

namespace nodegate::netfilter {

static_assert(kNfprotoInet == NFPROTO_INET);
static_assert(kNfprotoIpv4 == NFPROTO_IPV4);
static_assert(kNfprotoIpv6 == NFPROTO_IPV6);

std::vector<uint8_t> IfnameKey(const std::vector<std::string>& fields) {
  std::vector<uint8_t> key(fields.size() * IFNAMSIZ, 0);
  for (size_t i = 0; i < fields.size(); ++i) {
    const size_t n = std::min(fields[i].size(), static_cast<size_t>(IFNAMSIZ - 1));
    std::copy_n(fields[i].begin(), n, key.begin() + static_cast<std::ptrdiff_t>(i * IFNAMSIZ));
  }
  return key;
}

// An nfnetlink socket whose release is handed off (see release.h), and the sequence numbers of
// its requests. Not in the anonymous namespace: TableReader::Connection holds one.
struct NfnlSocket {
  explicit NfnlSocket(sys::UniqueFd f) : fd(std::move(f)) {}
  NfnlSocket(NfnlSocket&&) noexcept = default;
  ~NfnlSocket() {
    if (fd.valid()) HandOffBeforeClose(fd.get());
  }

  // One nf_tables request (NFT_MSG_GET*) and its answers, over the transport (nfnl.h). A dump
  // the kernel interrupted (the ruleset changed meanwhile) may be retried: code 11.
  Status Request(int type, uint8_t family, uint16_t flags, const AttrWriter& attrs,
                 const std::string& what, const OnNfnlMessage& on_reply,
                 std::initializer_list<int> ok_errnos = {}) {
    const std::vector<uint8_t> request =
        NfnlMessage(NftMessageType(type), flags, ++seq, family, 0, attrs.bytes());
    Status status = Transact(fd.get(), request, what, on_reply, ok_errnos);
    if (!status.ok() && IsStaleGeneration(status.error())) {
      return Error(kErrTryAgainLater, what + ": dump interrupted, try again");
    }
    return status;
  }

  sys::UniqueFd fd;
  uint32_t seq = 0;
};

namespace {

Result<NfnlSocket> OpenNfnl() {
  NG_ASSIGN_OR_RETURN(sys::UniqueFd fd, OpenNfnlSocket());
  return NfnlSocket(std::move(fd));
}

constexpr int ReplyType(int type) { return (NFNL_SUBSYS_NFTABLES << 8) | type; }

// The attributes after an nf_tables reply's nfgenmsg (none when it is too short).
ByteView ReplyAttributes(const nlmsghdr* h) { return NfnlPayload(h).value_or(ByteView()); }

// The NFTA_DATA_VALUE inside a nested NFTA_SET_ELEM_KEY / _DATA.
std::vector<uint8_t> DataValue(ByteView nested) {
  std::vector<uint8_t> out;
  ForEachAttr(nested, [&](const Attr& a) {
    if (a.type == NFTA_DATA_VALUE) out.assign(a.data.begin(), a.data.end());
    return true;
  });
  return out;
}

// The elements of a NEWSETELEM reply.
void AppendElements(const nlmsghdr* h, std::vector<SetElement>& out) {
  if (h->nlmsg_type != ReplyType(NFT_MSG_NEWSETELEM)) return;
  ForEachAttr(ReplyAttributes(h), [&](const Attr& list) {
    if (list.type != NFTA_SET_ELEM_LIST_ELEMENTS) return true;
    ForEachAttr(list.data, [&](const Attr& item) {
      if (item.type != NFTA_LIST_ELEM) return true;
      SetElement element;
      ForEachAttr(item.data, [&](const Attr& a) {
        if (a.type == NFTA_SET_ELEM_KEY) element.key = DataValue(a.data);
        if (a.type == NFTA_SET_ELEM_KEY_END) element.key_end = DataValue(a.data);
        if (a.type == NFTA_SET_ELEM_DATA) element.data = DataValue(a.data);
        if (a.type == NFTA_SET_ELEM_USERDATA) element.comment = UserDataComment(a.data);
        if (a.type == NFTA_SET_ELEM_FLAGS) element.flags = a.Be32();
        return true;
      });
      out.push_back(std::move(element));
      return true;
    });
    return true;
  });
}

}  // namespace

std::string UserDataComment(std::span<const uint8_t> user_data) {
  // libnftnl's records: one byte type, one byte length, then the value.
  constexpr uint8_t kComment = 0;
  size_t at = 0;
  while (at + 2 <= user_data.size()) {
    const uint8_t type = user_data[at];
    const size_t len = user_data[at + 1];
    if (at + 2 + len > user_data.size()) break;
    if (type == kComment) {
      const auto* text = reinterpret_cast<const char*>(user_data.data() + at + 2);
      return std::string(text, strnlen(text, len));
    }
    at += 2 + len;
  }
  return "";
}

struct TableReader::Connection {
  NfnlSocket nfnl;
};

TableReader::TableReader(uint8_t family, std::string table, std::unique_ptr<Connection> connection)
    : family_(family), table_(std::move(table)), connection_(std::move(connection)) {}
TableReader::TableReader(TableReader&&) noexcept = default;
TableReader& TableReader::operator=(TableReader&&) noexcept = default;
TableReader::~TableReader() = default;

Result<TableReader> TableReader::Open(uint8_t family, std::string table) {
  NG_ASSIGN_OR_RETURN(NfnlSocket nfnl, OpenNfnl());
  return TableReader(family, std::move(table),
                     std::make_unique<Connection>(Connection{std::move(nfnl)}));
}

Result<uint32_t> TableReader::Generation() {
  NfnlSocket& nfnl = connection_->nfnl;
  return ReadGeneration(nfnl.fd.get(), ++nfnl.seq, "nftables");
}

Result<std::vector<std::string>> TableReader::SetNames() {
  AttrWriter filter;
  filter.PutString(NFTA_SET_TABLE, table_);
  std::vector<std::string> names;
  NG_RETURN_IF_ERROR(connection_->nfnl.Request(
      NFT_MSG_GETSET, family_, NLM_F_DUMP, filter, "nftables: list sets of " + table_,
      [&](const nlmsghdr* h) {
        if (h->nlmsg_type != ReplyType(NFT_MSG_NEWSET)) return;
        ForEachAttr(ReplyAttributes(h), [&](const Attr& a) {
          if (a.type == NFTA_SET_NAME) names.push_back(a.String());
          return true;
        });
      },
      {ENOENT}));
  return names;
}

Result<std::optional<SetElement>> TableReader::Element(const std::string& set,
                                                       const std::vector<uint8_t>& key) {
  AttrWriter w;
  w.PutString(NFTA_SET_ELEM_LIST_TABLE, table_);
  w.PutString(NFTA_SET_ELEM_LIST_SET, set);
  const size_t list = w.BeginNested(NFTA_SET_ELEM_LIST_ELEMENTS);
  const size_t item = w.BeginNested(NFTA_LIST_ELEM);
  const size_t key_attr = w.BeginNested(NFTA_SET_ELEM_KEY);
  w.Put(NFTA_DATA_VALUE, key.data(), key.size());
  w.EndNested(key_attr);
  w.EndNested(item);
  w.EndNested(list);
  std::vector<SetElement> found;
  NG_RETURN_IF_ERROR(connection_->nfnl.Request(
      NFT_MSG_GETSETELEM, family_, 0, w, "nftables: get element of " + table_ + " " + set,
      [&](const nlmsghdr* h) { AppendElements(h, found); }, {ENOENT}));
  if (found.empty()) return std::optional<SetElement>();
  return std::optional<SetElement>(std::move(found.front()));
}

Result<std::vector<SetElement>> TableReader::Elements(const std::string& set) {
  AttrWriter filter;
  filter.PutString(NFTA_SET_ELEM_LIST_TABLE, table_);
  filter.PutString(NFTA_SET_ELEM_LIST_SET, set);
  std::vector<SetElement> out;
  NG_RETURN_IF_ERROR(connection_->nfnl.Request(NFT_MSG_GETSETELEM, family_, NLM_F_DUMP, filter,
                                               "nftables: list elements of " + table_ + " " + set,
                                               [&](const nlmsghdr* h) { AppendElements(h, out); },
                                               {ENOENT}));
  return out;
}

Result<std::optional<std::string>> TableReader::ChainComment(const std::string& chain) {
  AttrWriter key;
  key.PutString(NFTA_CHAIN_TABLE, table_);
  key.PutString(NFTA_CHAIN_NAME, chain);
  std::optional<std::string> comment;
  NG_RETURN_IF_ERROR(connection_->nfnl.Request(
      NFT_MSG_GETCHAIN, family_, 0, key, "nftables: get chain " + table_ + " " + chain,
      [&](const nlmsghdr* h) {
        if (h->nlmsg_type != ReplyType(NFT_MSG_NEWCHAIN)) return;
        comment = "";
        ForEachAttr(ReplyAttributes(h), [&](const Attr& a) {
          if (a.type == NFTA_CHAIN_USERDATA) comment = UserDataComment(a.data);
          return true;
        });
      },
      {ENOENT}));
  return comment;
}

Result<std::optional<SetInfo>> TableReader::Set(const std::string& set) {
  AttrWriter key;
  key.PutString(NFTA_SET_TABLE, table_);
  key.PutString(NFTA_SET_NAME, set);
  std::optional<SetInfo> info;
  NG_RETURN_IF_ERROR(connection_->nfnl.Request(
      NFT_MSG_GETSET, family_, 0, key, "nftables: get set " + table_ + " " + set,
      [&](const nlmsghdr* h) {
        if (h->nlmsg_type != ReplyType(NFT_MSG_NEWSET)) return;
        info.emplace();
        ForEachAttr(ReplyAttributes(h), [&](const Attr& a) {
          if (a.type == NFTA_SET_FLAGS) info->flags = a.Be32();
          if (a.type == NFTA_SET_KEY_TYPE) info->key_type = a.Be32();
          if (a.type == NFTA_SET_KEY_LEN) info->key_len = a.Be32();
          if (a.type == NFTA_SET_DATA_TYPE) info->data_type = a.Be32();
          if (a.type == NFTA_SET_DATA_LEN) info->data_len = a.Be32();
          return true;
        });
      },
      {ENOENT}));
  return info;
}

Result<std::vector<RuleRecord>> TableReader::Rules(const std::string& chain) {
  AttrWriter filter;
  filter.PutString(NFTA_RULE_TABLE, table_);
  if (!chain.empty()) filter.PutString(NFTA_RULE_CHAIN, chain);
  std::vector<RuleRecord> rules;
  NG_RETURN_IF_ERROR(connection_->nfnl.Request(
      NFT_MSG_GETRULE, family_, NLM_F_DUMP, filter,
      "nftables: list rules of " + table_ + (chain.empty() ? "" : " " + chain),
      [&](const nlmsghdr* h) {
        if (h->nlmsg_type != ReplyType(NFT_MSG_NEWRULE)) return;
        RuleRecord rule;
        ForEachAttr(ReplyAttributes(h), [&](const Attr& a) {
          if (a.type == NFTA_RULE_CHAIN) rule.chain = a.String();
          if (a.type == NFTA_RULE_HANDLE) rule.handle = a.Be64();
          if (a.type == NFTA_RULE_EXPRESSIONS)
            rule.expressions.assign(a.data.begin(), a.data.end());
          if (a.type == NFTA_RULE_USERDATA) rule.userdata.assign(a.data.begin(), a.data.end());
          return true;
        });
        rules.push_back(std::move(rule));
      },
      {ENOENT}));
  return rules;
}

Result<bool> HasElement(const SetRef& set, const std::vector<uint8_t>& key) {
  NG_ASSIGN_OR_RETURN(TableReader reader, TableReader::Open(set.family, set.table));
  NG_ASSIGN_OR_RETURN(const auto element, reader.Element(set.set, key));
  return element.has_value();
}

Result<bool> HasChain(uint8_t family, const std::string& table, const std::string& chain) {
  NG_ASSIGN_OR_RETURN(TableReader reader, TableReader::Open(family, table));
  NG_ASSIGN_OR_RETURN(const auto comment, reader.ChainComment(chain));
  return comment.has_value();
}

namespace {

Result<bool> HasTableOn(NfnlSocket& nfnl, uint8_t family, const std::string& table) {
  AttrWriter key;
  key.PutString(NFTA_TABLE_NAME, table);
  bool found = false;
  NG_RETURN_IF_ERROR(nfnl.Request(
      NFT_MSG_GETTABLE, family, 0, key, "nftables: get table " + table,
      [&](const nlmsghdr* h) { found |= h->nlmsg_type == ReplyType(NFT_MSG_NEWTABLE); }, {ENOENT}));
  return found;
}

}  // namespace

Result<bool> HasTable(uint8_t family, const std::string& table) {
  NG_ASSIGN_OR_RETURN(NfnlSocket nfnl, OpenNfnl());
  return HasTableOn(nfnl, family, table);
}

Result<std::vector<bool>> HasTables(const std::vector<TableRef>& tables) {
  NG_ASSIGN_OR_RETURN(NfnlSocket nfnl, OpenNfnl());
  std::vector<bool> present;
  for (const TableRef& t : tables) {
    NG_ASSIGN_OR_RETURN(const bool found, HasTableOn(nfnl, t.family, t.table));
    present.push_back(found);
  }
  return present;
}

Status ProbeNfTables() {
  NG_ASSIGN_OR_RETURN(NfnlSocket nfnl, OpenNfnl());
  const Result<uint32_t> generation = ReadGeneration(nfnl.fd.get(), ++nfnl.seq, "nftables");
  if (!generation.ok()) return generation.error();
  return OkStatus();
}

}  // namespace nodegate::netfilter
