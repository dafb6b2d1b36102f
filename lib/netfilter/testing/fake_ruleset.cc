#include "lib/netfilter/testing/fake_ruleset.h"

#include "lib/base/hex.h"

// clang-format off
#include <netinet/in.h>  // before the kernel headers, which then skip their own copies
// clang-format on
#include <linux/netfilter.h>
#include <linux/netfilter/nf_nat.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netlink.h>

#include <algorithm>
#include <cerrno>
#include <string_view>

#include "lib/netfilter/nfnl.h"
#include "lib/netfilter/nft_expr.h"
#include "lib/netfilter/nlattr.h"

namespace nodegate::netfilter::testing {
namespace {

std::string FamilyName(uint8_t family) {
  switch (family) {
    case NFPROTO_INET:
      return "inet";
    case NFPROTO_IPV4:
      return "ip";
    case NFPROTO_IPV6:
      return "ip6";
    case NFPROTO_BRIDGE:
      return "bridge";
    default:
      return "family" + std::to_string(family);
  }
}

FakeChain* FindIn(std::vector<FakeChain>& chains, std::string_view name) {
  auto it = std::find_if(chains.begin(), chains.end(),
                         [&](const FakeChain& c) { return c.name == name; });
  return it == chains.end() ? nullptr : &*it;
}

FakeSet* FindIn(std::vector<FakeSet>& sets, std::string_view name) {
  auto it =
      std::find_if(sets.begin(), sets.end(), [&](const FakeSet& s) { return s.name == name; });
  return it == sets.end() ? nullptr : &*it;
}

// The NFTA_DATA_VALUE of a nested NFTA_SET_ELEM_KEY / _KEY_END / _DATA.
Bytes DataValue(ByteView nested) {
  Bytes out;
  ForEachAttr(nested, [&](const Attr& a) {
    if (a.type == NFTA_DATA_VALUE) out.assign(a.data.begin(), a.data.end());
    return true;
  });
  return out;
}

// Whether `e` is the element a change names by `key` (and `key_end`, interval end flag).
bool SameElement(const FakeElement& e, const FakeElement& wanted) {
  return e.key == wanted.key &&
         (e.flags & NFT_SET_ELEM_INTERVAL_END) == (wanted.flags & NFT_SET_ELEM_INTERVAL_END) &&
         (wanted.key_end.empty() || e.key_end == wanted.key_end);
}

// One message of a batch: its nf_tables type, flags and family, and its attributes.
struct Message {
  int type = 0;  // NFT_MSG_*
  uint16_t flags = 0;
  uint8_t family = 0;
  ByteView attrs;
  std::string String(uint16_t attr) const {
    std::string out;
    ForEachAttr(attrs, [&](const Attr& a) {
      if (a.type == attr) out = a.String();
      return true;
    });
    return out;
  }
  std::optional<Attr> Find(uint16_t attr) const {
    std::optional<Attr> out;
    ForEachAttr(attrs, [&](const Attr& a) {
      if (a.type == attr) out = a;
      return true;
    });
    return out;
  }
  uint32_t Be32(uint16_t attr) const {
    const auto a = Find(attr);
    return a ? a->Be32() : 0;
  }
};

// One answer: 0, or the errno and why.
struct Answer {
  int error = 0;
  std::string why;
};
Answer Refuse(int error, std::string why) { return Answer{error, std::move(why)}; }

// Applies a batch's messages, in order, to a copy of the ruleset, as the kernel's transaction
// does: each message sees what the ones before it did; a refused one changes nothing.
class BatchApplier {
 public:
  explicit BatchApplier(FakeTables tables) : tables_(std::move(tables)) {}

  Answer Apply(const Message& m) {
    switch (m.type) {
      case NFT_MSG_NEWTABLE:
        return NewTable(m);
      case NFT_MSG_NEWSET:
        return NewSet(m);
      case NFT_MSG_DELSET:
        return DelSet(m);
      case NFT_MSG_NEWCHAIN:
        return NewChain(m);
      case NFT_MSG_DELCHAIN:
        return DelChain(m);
      case NFT_MSG_NEWRULE:
        return NewRule(m);
      case NFT_MSG_DELRULE:
        return DelRule(m);
      case NFT_MSG_NEWSETELEM:
        return ChangeElements(m, true);
      case NFT_MSG_DELSETELEM:
        return ChangeElements(m, false);
      default:
        return Refuse(EOPNOTSUPP, "message type the fake does not know");
    }
  }

  FakeTables Take() { return std::move(tables_); }

 private:
  FakeTable* Table(const Message& m, uint16_t attr) {
    auto it = tables_.find({m.family, m.String(attr)});
    return it == tables_.end() ? nullptr : &it->second;
  }

  Answer NewTable(const Message& m) {
    const std::string name = m.String(NFTA_TABLE_NAME);
    if (name.empty()) return Refuse(EINVAL, "table without a name");
    auto [it, fresh] = tables_.try_emplace({m.family, name});
    if (!fresh) {
      return (m.flags & NLM_F_EXCL) ? Refuse(EEXIST, "table exists") : Answer{};
    }
    if (const auto ud = m.Find(NFTA_TABLE_USERDATA)) {
      it->second.userdata.assign(ud->data.begin(), ud->data.end());
    }
    return Answer{};
  }

  static FakeSet SetOf(const Message& m) {
    FakeSet set;
    set.name = m.String(NFTA_SET_NAME);
    set.flags = m.Be32(NFTA_SET_FLAGS);
    set.key_type = m.Be32(NFTA_SET_KEY_TYPE);
    set.key_len = m.Be32(NFTA_SET_KEY_LEN);
    set.data_type = m.Be32(NFTA_SET_DATA_TYPE);
    set.data_len = m.Be32(NFTA_SET_DATA_LEN);
    if (const auto ud = m.Find(NFTA_SET_USERDATA))
      set.userdata.assign(ud->data.begin(), ud->data.end());
    if (const auto desc = m.Find(NFTA_SET_DESC)) {
      ForEachAttr(desc->data, [&](const Attr& d) {
        if (d.type != NFTA_SET_DESC_CONCAT) return true;
        ForEachAttr(d.data, [&](const Attr& field) {
          ForEachAttr(field.data, [&](const Attr& len) {
            if (len.type == NFTA_SET_FIELD_LEN) set.field_lens.push_back(len.Be32());
            return true;
          });
          return true;
        });
        return true;
      });
    }
    return set;
  }

  Answer NewSet(const Message& m) {
    FakeTable* table = Table(m, NFTA_SET_TABLE);
    if (table == nullptr) return Refuse(ENOENT, "no such table");
    FakeSet set = SetOf(m);
    // The kernel wants every new set's batch ID (NFTA_SET_ID), named or not.
    if (set.name.empty() || set.key_len == 0 || set.key_len > 64 || !m.Find(NFTA_SET_ID)) {
      return Refuse(EINVAL, "set without a name, key length or ID");
    }
    if ((set.flags & NFT_SET_MAP) && (set.data_len == 0 || set.data_len > 64)) {
      return Refuse(EINVAL, "map without a data length");
    }
    if (set.name.find("%d") != std::string::npos) {  // anonymous: the kernel numbers it
      int n = 0;
      while (FindIn(table->sets, "__set" + std::to_string(n)) != nullptr) ++n;
      set.name = "__set" + std::to_string(n);
    } else if (const FakeSet* there = FindIn(table->sets, set.name)) {
      if (m.flags & NLM_F_EXCL) return Refuse(EEXIST, "set exists");
      const bool same = there->flags == set.flags && there->key_type == set.key_type &&
                        there->key_len == set.key_len && there->data_type == set.data_type &&
                        there->data_len == set.data_len;
      return same ? Answer{} : Refuse(EEXIST, "set exists with another type");
    }
    if (const uint32_t id = m.Be32(NFTA_SET_ID); id != 0) set_ids_[id] = set.name;
    ++table->next_handle;  // sets take handles from the table's counter too
    table->sets.push_back(std::move(set));
    return Answer{};
  }

  static bool LooksUp(const FakeTable& table, const std::string& set) {
    for (const FakeChain& chain : table.chains) {
      for (const FakeRule& rule : chain.rules) {
        if (std::find(rule.sets.begin(), rule.sets.end(), set) != rule.sets.end()) return true;
      }
    }
    return false;
  }

  Answer DelSet(const Message& m) {
    FakeTable* table = Table(m, NFTA_SET_TABLE);
    if (table == nullptr) return Refuse(ENOENT, "no such table");
    const std::string name = m.String(NFTA_SET_NAME);
    if (FindIn(table->sets, name) == nullptr) return Refuse(ENOENT, "no such set");
    if (LooksUp(*table, name)) return Refuse(EBUSY, "set in use by a rule");
    std::erase_if(table->sets, [&](const FakeSet& s) { return s.name == name; });
    return Answer{};
  }

  Answer NewChain(const Message& m) {
    FakeTable* table = Table(m, NFTA_CHAIN_TABLE);
    if (table == nullptr) return Refuse(ENOENT, "no such table");
    const std::string name = m.String(NFTA_CHAIN_NAME);
    if (name.empty()) return Refuse(EINVAL, "chain without a name");
    if (FindIn(table->chains, name) != nullptr) {
      return (m.flags & NLM_F_EXCL) ? Refuse(EEXIST, "chain exists") : Answer{};
    }
    FakeChain chain{.name = name};
    if (const auto hook = m.Find(NFTA_CHAIN_HOOK)) {
      NftHook h{.type = m.String(NFTA_CHAIN_TYPE), .policy = m.Be32(NFTA_CHAIN_POLICY)};
      ForEachAttr(hook->data, [&](const Attr& a) {
        if (a.type == NFTA_HOOK_HOOKNUM) h.num = a.Be32();
        if (a.type == NFTA_HOOK_PRIORITY) h.priority = static_cast<int32_t>(a.Be32());
        return true;
      });
      chain.hook = h;
    }
    if (const auto ud = m.Find(NFTA_CHAIN_USERDATA))
      chain.userdata.assign(ud->data.begin(), ud->data.end());
    ++table->next_handle;
    table->chains.push_back(std::move(chain));
    return Answer{};
  }

  Answer DelChain(const Message& m) {
    FakeTable* table = Table(m, NFTA_CHAIN_TABLE);
    if (table == nullptr) return Refuse(ENOENT, "no such table");
    const std::string name = m.String(NFTA_CHAIN_NAME);
    const FakeChain* chain = FindIn(table->chains, name);
    if (chain == nullptr) return Refuse(ENOENT, "no such chain");
    if (!chain->rules.empty()) return Refuse(EBUSY, "chain holds rules");
    for (const FakeChain& other : table->chains) {
      for (const FakeRule& rule : other.rules) {
        const auto exprs = DecodeExpressions(rule.expressions);
        for (const Expr& e : exprs.value_or(std::vector<Expr>())) {
          const auto* verdict = std::get_if<expr::Verdict>(&e);
          if (verdict && verdict->chain == name) return Refuse(EBUSY, "chain is jumped to");
        }
      }
    }
    std::erase_if(table->chains, [&](const FakeChain& c) { return c.name == name; });
    return Answer{};
  }

  // The sets a rule's lookups name, each of the table (by name, or by its ID in this batch);
  // its jumps' chains, each of the table. The expressions are left as the kernel dumps them:
  // a lookup names its set (an anonymous one by the name the kernel gave it), a nat
  // expression has its max registers and range flags filled in.
  Answer Resolve(FakeTable& tbl, std::vector<Expr>& exprs, FakeRule& rule) {
    for (Expr& e : exprs) {
      if (std::holds_alternative<expr::Other>(e)) {
        return Refuse(EOPNOTSUPP, "expression " + std::get<expr::Other>(e).name);
      }
      if (auto* lookup = std::get_if<expr::Lookup>(&e)) {
        if (lookup->set_id != 0 && set_ids_.count(lookup->set_id) > 0) {
          lookup->set = set_ids_[lookup->set_id];
        }
        lookup->set_id = 0;
        if (FindIn(tbl.sets, lookup->set) == nullptr) {
          return Refuse(ENOENT, "lookup of no such set");
        }
        rule.sets.push_back(lookup->set);
      }
      if (auto* nat = std::get_if<expr::Nat>(&e)) AsDumped(*nat);
      const auto* verdict = std::get_if<expr::Verdict>(&e);
      if (verdict && (verdict->code == NFT_JUMP || verdict->code == NFT_GOTO) &&
          FindIn(tbl.chains, verdict->chain) == nullptr) {
        return Refuse(ENOENT, "jump to no such chain " + verdict->chain);
      }
    }
    return Answer{};
  }

  static void AsDumped(expr::Nat& nat) {
    if (nat.reg_addr_min != 0) {
      if (nat.reg_addr_max == 0) nat.reg_addr_max = nat.reg_addr_min;
      nat.flags |= NF_NAT_RANGE_MAP_IPS;
    }
    if (nat.reg_proto_min != 0) {
      if (nat.reg_proto_max == 0) nat.reg_proto_max = nat.reg_proto_min;
      nat.flags |= NF_NAT_RANGE_PROTO_SPECIFIED;
    }
  }

  Answer NewRule(const Message& m) {
    FakeTable* table = Table(m, NFTA_RULE_TABLE);
    if (table == nullptr) return Refuse(ENOENT, "no such table");
    FakeChain* chain = FindIn(table->chains, m.String(NFTA_RULE_CHAIN));
    if (chain == nullptr) return Refuse(ENOENT, "no such chain");
    const auto payload = m.Find(NFTA_RULE_EXPRESSIONS);
    if (!payload) return Refuse(EINVAL, "rule without expressions");
    auto exprs = DecodeExpressions(payload->data);
    if (!exprs || exprs->empty()) return Refuse(EINVAL, "expressions that do not decode");
    FakeRule rule;
    if (Answer a = Resolve(*table, *exprs, rule); a.error != 0) return a;
    rule.expressions = EncodeExpressions(*exprs);
    if (const auto ud = m.Find(NFTA_RULE_USERDATA))
      rule.userdata.assign(ud->data.begin(), ud->data.end());
    rule.handle = table->next_handle++;
    chain->rules.push_back(std::move(rule));
    return Answer{};
  }

  // Anonymous sets go with the last rule that looks them up (the kernel binds them to it).
  static void DropUnboundAnonymousSets(FakeTable& table) {
    std::erase_if(table.sets, [&](const FakeSet& s) {
      return s.name.rfind("__set", 0) == 0 && !LooksUp(table, s.name);
    });
  }

  Answer DelRule(const Message& m) {
    FakeTable* table = Table(m, NFTA_RULE_TABLE);
    if (table == nullptr) return Refuse(ENOENT, "no such table");
    FakeChain* chain = FindIn(table->chains, m.String(NFTA_RULE_CHAIN));
    if (chain == nullptr) return Refuse(ENOENT, "no such chain");
    if (const auto handle = m.Find(NFTA_RULE_HANDLE)) {
      const uint64_t h = handle->Be64();
      const size_t before = chain->rules.size();
      std::erase_if(chain->rules, [&](const FakeRule& r) { return r.handle == h; });
      if (chain->rules.size() == before) return Refuse(ENOENT, "no rule of that handle");
    } else {
      chain->rules.clear();  // a flush
    }
    DropUnboundAnonymousSets(*table);
    return Answer{};
  }

  // The elements of a NEWSETELEM / DELSETELEM message.
  static std::vector<FakeElement> ElementsOf(const Attr& list) {
    std::vector<FakeElement> out;
    ForEachAttr(list.data, [&](const Attr& item) {
      FakeElement e;
      ForEachAttr(item.data, [&](const Attr& a) {
        if (a.type == NFTA_SET_ELEM_KEY) e.key = DataValue(a.data);
        if (a.type == NFTA_SET_ELEM_KEY_END) e.key_end = DataValue(a.data);
        if (a.type == NFTA_SET_ELEM_DATA) e.data = DataValue(a.data);
        if (a.type == NFTA_SET_ELEM_FLAGS) e.flags = a.Be32();
        if (a.type == NFTA_SET_ELEM_USERDATA) e.userdata.assign(a.data.begin(), a.data.end());
        return true;
      });
      out.push_back(std::move(e));
      return true;
    });
    return out;
  }

  static Answer Fits(const FakeSet& set, const FakeElement& e) {
    if (e.key.size() != set.key_len) return Refuse(EINVAL, "key of the wrong length");
    if (!e.key_end.empty() && e.key_end.size() != set.key_len) {
      return Refuse(EINVAL, "key end of the wrong length");
    }
    const bool map = set.flags & NFT_SET_MAP;
    const bool end = e.flags & NFT_SET_ELEM_INTERVAL_END;
    if (!map && !e.data.empty()) return Refuse(EINVAL, "data for an element of a set");
    if (map && !end && e.data.size() != set.data_len) {
      return Refuse(EINVAL, "map element without data of the map's length");
    }
    return Answer{};
  }

  static Answer Add(FakeSet& set, FakeElement e, bool exclusive) {
    if (Answer a = Fits(set, e); a.error != 0) return a;
    auto it = std::find_if(set.elements.begin(), set.elements.end(),
                           [&](const FakeElement& x) { return SameElement(x, e); });
    if (it == set.elements.end()) {
      set.elements.push_back(std::move(e));
      return Answer{};
    }
    if (exclusive) return Refuse(EEXIST, "element exists");
    if (it->data != e.data) return Refuse(EEXIST, "element exists with other data");
    return Answer{};
  }

  static Answer Delete(FakeSet& set, const FakeElement& e) {
    auto it = std::find_if(set.elements.begin(), set.elements.end(),
                           [&](const FakeElement& x) { return SameElement(x, e); });
    if (it == set.elements.end()) return Refuse(ENOENT, "no such element");
    set.elements.erase(it);
    return Answer{};
  }

  Answer ChangeElements(const Message& m, bool add) {
    FakeTable* table = Table(m, NFTA_SET_ELEM_LIST_TABLE);
    if (table == nullptr) return Refuse(ENOENT, "no such table");
    std::string name = m.String(NFTA_SET_ELEM_LIST_SET);
    if (const uint32_t id = m.Be32(NFTA_SET_ELEM_LIST_SET_ID); id != 0 && set_ids_.count(id)) {
      name = set_ids_[id];
    }
    FakeSet* set = FindIn(table->sets, name);
    if (set == nullptr) return Refuse(ENOENT, "no such set");
    const auto list = m.Find(NFTA_SET_ELEM_LIST_ELEMENTS);
    if (!list) return Answer{};
    for (FakeElement& e : ElementsOf(*list)) {
      Answer a = add ? Add(*set, std::move(e), m.flags & NLM_F_EXCL) : Delete(*set, e);
      if (a.error != 0) return a;
    }
    return Answer{};
  }

  FakeTables tables_;
  std::map<uint32_t, std::string> set_ids_;  // NFTA_SET_ID -> name, for this batch
};

// Calls `fn(const nlmsghdr*)` for every message of `batch`.
template <typename F>
void ForEachMessage(const NftBatch& batch, F&& fn) {
  for (const ByteView chunk : batch.MessageViews()) {
    size_t at = 0;
    while (at + NLMSG_HDRLEN <= chunk.size()) {
      const auto* h = reinterpret_cast<const nlmsghdr*>(chunk.data() + at);
      if (h->nlmsg_len < NLMSG_HDRLEN || at + h->nlmsg_len > chunk.size()) break;
      fn(h);
      at += NLMSG_ALIGN(h->nlmsg_len);
    }
  }
}

// A reader of one table of the fake: each read is of the committed ruleset at its call.
class FakeTableReads final : public TableReads {
 public:
  FakeTableReads(FakeRuleset& owner, uint8_t family, std::string table)
      : owner_(owner), family_(family), table_(std::move(table)) {}

  Result<uint32_t> Generation() override {
    NG_RETURN_IF_ERROR(owner_.Enter(FakeRuleset::kGeneration, "nftables: get generation"));
    return owner_.generation();
  }

  Result<std::vector<std::string>> SetNames() override {
    NG_RETURN_IF_ERROR(owner_.Enter(FakeRuleset::kSetNames, "nftables: list sets of " + table_));
    std::vector<std::string> names;
    if (const FakeTable* t = owner_.FindTable(family_, table_)) {
      for (const FakeSet& s : t->sets) names.push_back(s.name);
    }
    return names;
  }

  Result<std::optional<SetElement>> Element(const std::string& set,
                                            const std::vector<uint8_t>& key) override {
    NG_RETURN_IF_ERROR(owner_.Enter(FakeRuleset::kElement, "nftables: get element of " + set));
    const FakeSet* s = owner_.FindSet(family_, table_, set);
    if (s == nullptr) return std::optional<SetElement>();
    for (const FakeElement& e : s->elements) {
      if (e.key == key && !(e.flags & NFT_SET_ELEM_INTERVAL_END)) return std::optional(Listed(e));
    }
    return std::optional<SetElement>();
  }

  Result<std::vector<SetElement>> Elements(const std::string& set) override {
    NG_RETURN_IF_ERROR(owner_.Enter(FakeRuleset::kElements, "nftables: list elements of " + set));
    std::vector<SetElement> out;
    if (const FakeSet* s = owner_.FindSet(family_, table_, set)) {
      for (const FakeElement& e : s->elements) out.push_back(Listed(e));
    }
    return out;
  }

  Result<std::optional<std::string>> ChainComment(const std::string& chain) override {
    NG_RETURN_IF_ERROR(owner_.Enter(FakeRuleset::kChainComment, "nftables: get chain " + chain));
    const FakeChain* c = owner_.FindChain(family_, table_, chain);
    if (c == nullptr) return std::optional<std::string>();
    return std::optional(UserDataComment(c->userdata));
  }

  Result<std::optional<SetInfo>> Set(const std::string& set) override {
    NG_RETURN_IF_ERROR(owner_.Enter(FakeRuleset::kSet, "nftables: get set " + set));
    const FakeSet* s = owner_.FindSet(family_, table_, set);
    if (s == nullptr) return std::optional<SetInfo>();
    return std::optional(SetInfo{s->flags, s->key_type, s->key_len, s->data_type, s->data_len});
  }

  Result<std::vector<RuleRecord>> Rules(const std::string& chain) override {
    NG_RETURN_IF_ERROR(owner_.Enter(FakeRuleset::kRules, "nftables: list rules of " + table_));
    std::vector<RuleRecord> out;
    const FakeTable* t = owner_.FindTable(family_, table_);
    if (t == nullptr) return out;
    for (const FakeChain& c : t->chains) {
      if (!chain.empty() && c.name != chain) continue;
      for (const FakeRule& r : c.rules)
        out.push_back({c.name, r.handle, r.expressions, r.userdata});
    }
    return out;
  }

 private:
  static SetElement Listed(const FakeElement& e) {
    return SetElement{e.key, e.key_end, e.data, UserDataComment(e.userdata), e.flags};
  }

  FakeRuleset& owner_;
  uint8_t family_;
  std::string table_;
};

std::string CommentText(const Bytes& userdata) {
  const std::string comment = UserDataComment(userdata);
  return comment.empty() ? "" : " \"" + comment + "\"";
}

void DumpSet(const FakeSet& s, std::string& out) {
  out += "  set " + s.name + " flags 0x" +
         HexEncode(Bytes{static_cast<uint8_t>(s.flags >> 8), static_cast<uint8_t>(s.flags)}) +
         " key " + std::to_string(s.key_type) + "/" + std::to_string(s.key_len);
  if (s.flags & NFT_SET_MAP) {
    out += " data " + std::to_string(s.data_type) + "/" + std::to_string(s.data_len);
  }
  out += "\n";
  for (const FakeElement& e : s.elements) {
    out += "    element " + HexEncode(e.key);
    if (!e.key_end.empty()) out += "-" + HexEncode(e.key_end);
    if (e.flags & NFT_SET_ELEM_INTERVAL_END) out += " end";
    if (!e.data.empty()) out += " : " + HexEncode(e.data);
    out += CommentText(e.userdata) + "\n";
  }
}

void DumpChain(const FakeChain& c, std::string& out) {
  out += "  chain " + c.name;
  if (c.hook) {
    out += " hook " + std::to_string(c.hook->num) + " priority " +
           std::to_string(c.hook->priority) + " type " + c.hook->type;
  }
  out += CommentText(c.userdata) + "\n";
  for (const FakeRule& r : c.rules) {
    out += "    rule " + std::to_string(r.handle) + CommentText(r.userdata) + "\n";
    if (const auto exprs = DecodeExpressions(r.expressions)) out += ExpressionsText(*exprs);
  }
}

}  // namespace

Status FakeRuleset::Enter(const std::string& operation, const std::string& what) {
  ++calls_[operation];
  if (!usable_) return Error(kErrKernel, what + ": Protocol not supported");
  for (auto it = faults_.begin(); it != faults_.end(); ++it) {
    if (it->operation != operation || it->error != 0) continue;
    if (--it->remaining > 0) continue;
    faults_.erase(it);
    return Error(kErrKernel, what + ": injected fault");
  }
  return OkStatus();
}

int FakeRuleset::calls(const std::string& operation) const {
  auto it = calls_.find(operation);
  return it == calls_.end() ? 0 : it->second;
}

Result<std::unique_ptr<TableReads>> FakeRuleset::OpenTable(uint8_t family,
                                                           const std::string& table) {
  NG_RETURN_IF_ERROR(Enter(kOpen, "nftables: open netlink socket"));
  return std::unique_ptr<TableReads>(std::make_unique<FakeTableReads>(*this, family, table));
}

Result<std::vector<bool>> FakeRuleset::HasTables(const std::vector<TableRef>& tables) {
  NG_RETURN_IF_ERROR(Enter(kHasTables, "nftables: get table"));
  std::vector<bool> present;
  for (const TableRef& t : tables) present.push_back(FindTable(t.family, t.table) != nullptr);
  return present;
}

Status FakeRuleset::Probe() { return Enter(kProbe, "nftables: get nf_tables generation"); }

void FakeRuleset::RunConcurrentWriter(bool on_generation) {
  if (in_writer_ || writers_.empty()) return;
  if (writers_.front().before == Commits::kOnGeneration && !on_generation) return;
  auto write = std::move(writers_.front().write);
  writers_.erase(writers_.begin());
  in_writer_ = true;
  write(*this);
  in_writer_ = false;
  ++generation_;
}

Result<std::vector<BatchRefusal>> FakeRuleset::Commit(const NftBatch& batch,
                                                      std::optional<uint32_t> generation) {
  if (batch.empty()) return std::vector<BatchRefusal>();
  ++commit_calls_;
  RunConcurrentWriter(generation.has_value());
  NG_RETURN_IF_ERROR(Enter(kCommit, "nftables: batch"));
  if (generation && *generation != generation_) return StaleGeneration("nftables: batch");
  int refused_with = 0;
  for (auto it = faults_.begin(); it != faults_.end(); ++it) {
    if (it->error == 0 || --it->remaining > 0) continue;
    refused_with = it->error;
    faults_.erase(it);
    break;
  }
  BatchApplier applier(tables_);
  std::vector<BatchAnswer> answers;
  bool refused = false;
  ForEachMessage(batch, [&](const nlmsghdr* h) {
    ByteView attrs = NfnlPayload(h).value_or(ByteView());
    const auto* gen = reinterpret_cast<const nfgenmsg*>(NLMSG_DATA(h));
    Answer a = applier.Apply({h->nlmsg_type & 0xff, h->nlmsg_flags, gen->nfgen_family, attrs});
    // The injected refusal is the batch's only one: what follows sees the first message done.
    if (refused_with != 0 && answers.empty()) a = Refuse(refused_with, "injected refusal");
    if ((h->nlmsg_type >> 8) != NFNL_SUBSYS_NFTABLES) a = Refuse(EINVAL, "not nf_tables");
    refused |= a.error != 0;
    answers.push_back({h->nlmsg_seq, a.error, a.why});
  });
  NG_ASSIGN_OR_RETURN(std::vector<BatchRefusal> refusals, batch.RefusalsOf(answers));
  if (!refused) {
    tables_ = applier.Take();
    ++generation_;
    ++commits_;
  }
  return refusals;
}

void FakeRuleset::FailOperation(const std::string& operation, int nth) {
  faults_.push_back({operation, nth, 0});
}

void FakeRuleset::RefuseCommit(int error, int nth) { faults_.push_back({kCommit, nth, error}); }

void FakeRuleset::ConcurrentWrite(std::function<void(FakeRuleset&)> write, int times,
                                  Commits before) {
  for (int i = 0; i < times; ++i) writers_.push_back({write, before});
}

const FakeTable* FakeRuleset::FindTable(uint8_t family, const std::string& table) const {
  auto it = tables_.find({family, table});
  return it == tables_.end() ? nullptr : &it->second;
}

const FakeSet* FakeRuleset::FindSet(uint8_t family, const std::string& table,
                                    const std::string& set) const {
  const FakeTable* t = FindTable(family, table);
  if (t == nullptr) return nullptr;
  auto it =
      std::find_if(t->sets.begin(), t->sets.end(), [&](const FakeSet& s) { return s.name == set; });
  return it == t->sets.end() ? nullptr : &*it;
}

const FakeChain* FakeRuleset::FindChain(uint8_t family, const std::string& table,
                                        const std::string& chain) const {
  const FakeTable* t = FindTable(family, table);
  if (t == nullptr) return nullptr;
  auto it = std::find_if(t->chains.begin(), t->chains.end(),
                         [&](const FakeChain& c) { return c.name == chain; });
  return it == t->chains.end() ? nullptr : &*it;
}

std::string FakeRuleset::Dump() const {
  std::string out;
  for (const auto& [key, table] : tables_) {
    out += "table " + FamilyName(key.first) + " " + key.second + CommentText(table.userdata) + "\n";
    std::vector<const FakeSet*> sets;
    for (const FakeSet& s : table.sets) sets.push_back(&s);
    std::sort(sets.begin(), sets.end(),
              [](const FakeSet* a, const FakeSet* b) { return a->name < b->name; });
    for (const FakeSet* s : sets) DumpSet(*s, out);
    std::vector<const FakeChain*> chains;
    for (const FakeChain& c : table.chains) chains.push_back(&c);
    std::sort(chains.begin(), chains.end(),
              [](const FakeChain* a, const FakeChain* b) { return a->name < b->name; });
    for (const FakeChain* c : chains) DumpChain(*c, out);
  }
  return out;
}

}  // namespace nodegate::netfilter::testing
