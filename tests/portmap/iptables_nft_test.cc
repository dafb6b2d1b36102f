// NftNatTable (plugins/portmap/iptables/nft/table.h) against iptables-nft 1.8.9 itself, in
// throwaway namespaces: every rule kind of the layout written by us and by iptables-nft reads
// the same to iptables-nft (iptables-nft-save) and to our decoder, even where the two
// encodings differ (docs/iptables-nft-encoding.md: we write what every version from 1.8.4 on
// reads, 1.8.9 writes some matches natively); the NEWRULE bytes are 1.8.9's where the versions
// agree; each side finds (-C / HasRule) and removes (-D / DeleteJumps, Flush, DeleteChain) the
// other's rules; a batch built on a stale generation applies nothing; and parallel
// transactions beside a foreign iptables-nft writer lose no rule.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <iostream>
#include <latch>
#include <map>
#include <regex>
#include <sstream>
#include <thread>
#include <vector>

#include "lib/sys/netns.h"
#include "plugins/portmap/iptables/nft/encode.h"
#include "plugins/portmap/iptables/nft/table.h"
#include "plugins/portmap/testing/iptables_nft_kinds.h"
#include "tests/support/netns_fixture.h"
#include "tests/support/plugin_runner.h"

namespace nodegate::portmap::testing {
namespace {

using ipt::NftNatTable;
using net::Family;
using nodegate::testing::TestNetns;

constexpr Family kFamilies[] = {Family::kV4, Family::kV6};

std::string Tool(Family family) { return family == Family::kV4 ? "iptables-nft" : "ip6tables-nft"; }

// Opens the table inside `ns` (this thread enters it for the call).
std::unique_ptr<NftNatTable> OpenIn(const TestNetns& ns, Family family) {
  auto scope = sys::NetnsScope::Enter(ns.path());
  EXPECT_TRUE(scope.ok());
  auto table = NftNatTable::Open(family);
  EXPECT_TRUE(table.ok()) << table.error().msg;
  return table.ok() ? std::move(*table) : nullptr;
}

// chain -> its rules as the kernel dumps them (handles left out).
using Dump = std::map<std::string, std::vector<std::string>>;
Dump DumpTable(const TestNetns& ns, Family family) {
  Dump out;
  auto scope = sys::NetnsScope::Enter(ns.path());
  auto table = NftNatTable::Open(family);
  EXPECT_TRUE(table.ok());
  if (!table.ok()) return out;
  auto chains = (*table)->ListChains();
  EXPECT_TRUE(chains.ok());
  if (!chains.ok()) return out;
  for (const auto& chain : *chains) {
    auto rules = (*table)->Rules(chain);
    EXPECT_TRUE(rules.ok());
    auto& texts = out[chain];
    for (const auto& r : **rules) texts.push_back(ipt::NftExpressionsToString(r.expressions));
  }
  return out;
}

// chain -> its rules as our decoder reads them (canonical form), "undecodable: ..." for a rule
// it cannot read. Built-in chains without rules are left out: we make a new table with all
// four (as iptables-nft 1.8.4 does), 1.8.9 only those it puts a rule in.
Dump DecodedTable(const TestNetns& ns, Family family) {
  Dump out;
  for (const auto& [chain, rules] : DumpTable(ns, family)) {
    if (rules.empty() && IsBuiltinChain(chain)) continue;
    out[chain];
  }
  auto scope = sys::NetnsScope::Enter(ns.path());
  auto table = NftNatTable::Open(family);
  EXPECT_TRUE(table.ok());
  if (!table.ok()) return out;
  for (auto& [chain, texts] : out) {
    auto rules = (*table)->Rules(chain);
    EXPECT_TRUE(rules.ok());
    if (!rules.ok()) continue;
    for (const auto& r : **rules) {
      const auto rule = ipt::DecodeNftRule(r.expressions, family, r.userdata);
      texts.push_back(rule ? ipt::CanonicalRule(*rule).ToString()
                           : "undecodable: " + ipt::NftExpressionsToString(r.expressions));
    }
  }
  return out;
}

// Whether a dumped rule (NftExpressionsToString) holds what iptables-nft 1.8.7 and older
// cannot read: a transport-header payload (native --dport) or a meta mark (native --mark).
bool HasNativeMatch(const std::string& expressions) {
  std::istringstream in(expressions);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("payload ", 0) == 0 && line.find(" 2=00000002") != std::string::npos)
      return true;
    if (line.rfind("meta 2=00000003 ", 0) == 0) return true;
  }
  return false;
}

std::string WithoutComments(const std::string& text) {
  std::istringstream in(text);
  std::string line, out;
  while (std::getline(in, line)) {
    if (!line.empty() && line[0] != '#') out += line + "\n";
  }
  return out;
}

std::string Save(const TestNetns& ns, Family family) {
  return WithoutComments(ns.MustRun(Tool(family) + "-save -t nat"));
}

int CountLines(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// Writes `kinds` (and their chains) with one NftNatTable transaction.
void WriteOurs(const TestNetns& ns, Family family, const std::vector<RuleKind>& kinds) {
  auto scope = sys::NetnsScope::Enter(ns.path());
  auto table = NftNatTable::Open(family);
  ASSERT_TRUE(table.ok()) << table.error().msg;
  for (const auto& chain : UserChains(kinds)) ASSERT_TRUE((*table)->CreateChain(chain).ok());
  for (const auto& kind : kinds) {
    const Status s = kind.insert_first ? (*table)->InsertFirst(kind.chain, kind.rule)
                                       : (*table)->Append(kind.chain, kind.rule);
    ASSERT_TRUE(s.ok()) << s.error().msg;
  }
  const Status committed = (*table)->Commit();
  ASSERT_TRUE(committed.ok()) << committed.error().msg;
}

// The iptables-nft command that adds `kind` (the rule as iptables-save prints it).
std::string AddCommand(Family family, const RuleKind& kind) {
  return Tool(family) + " -t nat " +
         (kind.insert_first ? "-I " + kind.chain + " 1 " : "-A " + kind.chain + " ") +
         kind.rule.ToString();
}

void WriteTheirs(const TestNetns& ns, Family family, const std::vector<RuleKind>& kinds) {
  std::string script = "set -e\n";
  for (const auto& chain : UserChains(kinds)) script += Tool(family) + " -t nat -N " + chain + "\n";
  for (const auto& kind : kinds) script += AddCommand(family, kind) + "\n";
  ns.MustRun(script);
}

// Every kind written by us and by iptables-nft 1.8.9: iptables-nft-save prints the same lines
// and our decoder reads the same rules, though 1.8.9 wrote its port and mark matches natively
// and we as xt matches (which 1.8.7 and older read too: no native match in ours).
TEST(IptablesNft, IptablesNftReadsOurRulesAsItsOwn) {
  NG_REQUIRE_ROOT();
  for (Family family : kFamilies) {
    SCOPED_TRACE(Tool(family));
    const auto kinds = AllKinds(family);
    TestNetns ours("ng-nft-ours"), theirs("ng-nft-ref");
    WriteOurs(ours, family, kinds);
    WriteTheirs(theirs, family, kinds);
    const std::string save = Save(theirs, family);
    EXPECT_EQ(Save(ours, family), save);
    EXPECT_EQ(CountLines(save, "\n-A "), static_cast<int>(kinds.size())) << save;
    EXPECT_EQ(DecodedTable(ours, family), DecodedTable(theirs, family));
    int native = 0;
    for (const auto& [chain, rules] : DumpTable(ours, family)) {
      for (const auto& rule : rules) EXPECT_FALSE(HasNativeMatch(rule)) << chain << "\n" << rule;
    }
    for (const auto& [chain, rules] : DumpTable(theirs, family)) {
      for (const auto& rule : rules) native += HasNativeMatch(rule);
    }
    EXPECT_GT(native, 10) << "1.8.9 writes --dport and --mark natively";
  }
}

// NEWRULE attributes from `iptables-nft -vvv` output (libmnl's message dump): header lines
// "|len|flags|type|" and 4-byte data lines, after each message's "extra header".
std::vector<std::string> NewRuleMessages(const std::string& vvv) {
  static const std::regex kType(R"(^\|\s+(\d+)\s+\|\s+[A-Z-]+\s+\|\s+\|\s+type \| flags)");
  static const std::regex kAttr(R"(^\|(\d{5})\|([A-Z-]{2})\|(\d{5})\|)");
  static const std::regex kData(
      R"(^\| ([0-9a-f]{2}) ([0-9a-f]{2}) ([0-9a-f]{2}) ([0-9a-f]{2})\s+\|\s+\|\s+data)");
  std::vector<std::string> out;
  std::vector<uint8_t> bytes;
  int type = 0;
  bool in_attrs = false;
  auto flush = [&] {
    if (type == 0xa06) out.push_back(HexOf(bytes));
    bytes.clear();
  };
  std::istringstream in(std::regex_replace(vvv, std::regex("\x1b\\[[0-9;]*m"), ""));
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, kType)) {
      flush();
      type = std::stoi(m[1]);
      in_attrs = false;
    } else if (line.find("extra header") != std::string::npos) {
      in_attrs = true;
    } else if (in_attrs && std::regex_search(line, m, kAttr)) {
      const int len = std::stoi(m[1]);
      int attr_type = std::stoi(m[3]);
      if (m[2].str().find('N') != std::string::npos) attr_type |= NLA_F_NESTED;
      bytes.insert(bytes.end(),
                   {static_cast<uint8_t>(len), static_cast<uint8_t>(len >> 8),
                    static_cast<uint8_t>(attr_type), static_cast<uint8_t>(attr_type >> 8)});
    } else if (in_attrs && std::regex_search(line, m, kData)) {
      for (int i = 1; i <= 4; ++i)
        bytes.push_back(static_cast<uint8_t>(std::stoi(m[i], nullptr, 16)));
    }
  }
  flush();
  return out;
}

// Where iptables-nft 1.8.9 writes a rule as 1.8.4 does (no tcp/udp port or mark match, no
// address prefix other than a whole address), we send the bytes it sends.
bool VersionsAgree(const ipt::Rule& rule) {
  for (const auto& match : rule.matches) {
    if (std::holds_alternative<ipt::MarkMatch>(match)) return false;
    const auto* port = std::get_if<ipt::PortMatch>(&match);
    if (port != nullptr && port->protocol != Protocol::kSctp) return false;
  }
  for (const auto& prefix : {rule.header.src, rule.header.dst}) {
    if (prefix && prefix->length() != 0 && prefix->length() != prefix->address().byte_length() * 8)
      return false;
  }
  return true;
}

TEST(IptablesNft, SameNewRuleBytesAsIptablesNftWhereVersionsAgree) {
  NG_REQUIRE_ROOT();
  for (Family family : kFamilies) {
    SCOPED_TRACE(Tool(family));
    const auto kinds = AllKinds(family);
    TestNetns ns("ng-nft-vvv");
    std::string script;
    for (const auto& chain : UserChains(kinds))
      script += Tool(family) + " -t nat -N " + chain + "\n";
    ns.MustRun(script);
    int compared = 0;
    for (const auto& kind : kinds) {
      if (!VersionsAgree(kind.rule)) continue;
      const std::string command = AddCommand(family, kind);
      const auto messages = NewRuleMessages(ns.MustRun(command + " -vvv"));
      ASSERT_EQ(messages.size(), 1u) << command;
      EXPECT_EQ(RuleMessageHex(kind.chain, kind.rule, family), messages[0]) << command;
      ++compared;
    }
    EXPECT_GE(compared, 10);
  }
}

TEST(IptablesNft, IptablesNftChecksAndDeletesOurRules) {
  NG_REQUIRE_ROOT();
  for (Family family : kFamilies) {
    SCOPED_TRACE(Tool(family));
    const auto kinds = AllKinds(family);
    TestNetns ns("ng-nft-ours");
    WriteOurs(ns, family, kinds);
    for (const auto& kind : kinds) {
      const std::string rule = " " + kind.chain + " " + kind.rule.ToString();
      EXPECT_EQ(ns.Run(Tool(family) + " -t nat -C" + rule).exit_code, 0) << rule;
      // -S prints it back in the form the reference's DEL feeds to -D ("-i +" is no
      // condition: it is not printed).
      const std::string printed = kind.chain + " " + ipt::CanonicalRule(kind.rule).ToString();
      EXPECT_NE(ns.MustRun(Tool(family) + " -t nat -S " + kind.chain).find("-A " + printed + "\n"),
                std::string::npos)
          << printed;
    }
    for (const auto& kind : kinds) {
      const std::string rule = " " + kind.chain + " " + kind.rule.ToString();
      EXPECT_EQ(ns.Run(Tool(family) + " -t nat -D" + rule).exit_code, 0) << rule;
    }
    EXPECT_EQ(CountLines(Save(ns, family), "\n-A "), 0) << Save(ns, family);
  }
}

TEST(IptablesNft, FindsAndRemovesWhatIptablesNftWrote) {
  NG_REQUIRE_ROOT();
  for (Family family : kFamilies) {
    SCOPED_TRACE(Tool(family));
    const auto kinds = AllKinds(family);
    TestNetns ns("ng-nft-ref");
    WriteTheirs(ns, family, kinds);
    auto table = OpenIn(ns, family);
    ASSERT_NE(table, nullptr);
    for (const auto& kind : kinds) {
      auto found = table->HasRule(kind.chain, kind.rule);
      ASSERT_TRUE(found.ok()) << found.error().msg;
      EXPECT_TRUE(*found) << kind.chain << " " << kind.rule.ToString();
      // The same rule with another port, comment or target is not there.
      ipt::Rule other = kind.rule;
      other.target = ipt::JumpTarget{"CNI-HOSTPORT-NOWHERE"};
      EXPECT_FALSE(*table->HasRule(kind.chain, other)) << kind.rule.ToString();
      other = kind.rule;
      other.header.src = net::IpPrefix::Parse(family == Family::kV4 ? "10.77.0.0/16" : "fd77::/64");
      EXPECT_FALSE(*table->HasRule(kind.chain, other)) << kind.rule.ToString();
      EXPECT_FALSE(*table->HasRule(kind.chain == "COND" ? "PREROUTING" : "COND", kind.rule));
    }
    EXPECT_FALSE(*table->HasRule("MISSING", kinds[0].rule));
    EXPECT_TRUE(table->HasChain("CNI-HOSTPORT-DNAT"));
    EXPECT_TRUE(table->HasChain("INPUT"));  // built-in: exists for iptables-nft even unmade
    EXPECT_FALSE(table->HasChain("MISSING"));

    const std::string ctr1 = ipt::ContainerChainName("rnet", "ctr1");
    const std::string ctr2 = ipt::ContainerChainName("rnet", "ctr2");
    auto owners = table->EntryOwners();
    ASSERT_TRUE(owners.ok());
    ASSERT_EQ(owners->size(), 2u);
    EXPECT_EQ(owners->at(ctr1).container_id, "ctr1");
    EXPECT_EQ(owners->at(ctr2).network_name, "rnet");

    // A DEL of both containers, and the condition chain emptied, in one batch.
    ASSERT_TRUE(table->DeleteJumps(ipt::kDnatChain, {ctr1, ctr2}).ok());
    ASSERT_TRUE(table->DeleteJumps(ipt::kDnatChain, {ctr1}).ok());  // no second delete
    for (const auto& chain : {ctr1, ctr2}) {
      ASSERT_TRUE(table->Flush(chain).ok());
      ASSERT_TRUE(table->DeleteChain(chain).ok());
    }
    ASSERT_TRUE(table->Flush("COND").ok());
    ASSERT_TRUE(table->DeleteJumps("COND", {ipt::kSetMarkChain}).ok());  // flushed already
    const Status committed = table->Commit();
    ASSERT_TRUE(committed.ok()) << committed.error().msg;
    table.reset();

    const std::string save = Save(ns, family);
    EXPECT_EQ(save.find("CNI-DN-"), std::string::npos) << save;
    EXPECT_EQ(save.find("-A COND"), std::string::npos) << save;
    EXPECT_NE(save.find("-A CNI-HOSTPORT-SETMARK"), std::string::npos) << save;
    EXPECT_NE(save.find("-A PREROUTING"), std::string::npos) << save;
  }
}

TEST(IptablesNft, ChainsTableAndErrors) {
  NG_REQUIRE_ROOT();
  TestNetns ns("ng-nft-new");
  ipt::Header h;
  h.protocol = Protocol::kTcp;
  const ipt::Rule rule{h, {ipt::AddrtypeLocalMatch{}}, ipt::JumpTarget{"SINK"}};
  {
    // No table: nothing read, nothing written by an empty commit.
    auto table = OpenIn(ns, Family::kV4);
    ASSERT_NE(table, nullptr);
    EXPECT_TRUE(table->ListChains()->empty());
    EXPECT_FALSE(*table->HasRule("PREROUTING", rule));
    EXPECT_TRUE(table->Commit().ok());
    EXPECT_EQ(ns.MustRun("nft list tables"), "");
    // Appending to a chain nobody made is refused before anything is sent.
    EXPECT_FALSE(table->Append("SINK", rule).ok());
    EXPECT_FALSE(table->DeleteChain("SINK").ok());
    EXPECT_FALSE(table->DeleteChain("OUTPUT").ok());
    // Table, user chain, built-in chain made by its first rule, then a rule inserted first.
    ASSERT_TRUE(table->CreateChain("SINK").ok());
    EXPECT_FALSE(table->CreateChain("SINK").ok());
    ASSERT_TRUE(table->Append("PREROUTING", rule).ok());
    ipt::Rule first = rule;
    first.header.src = net::IpPrefix::Parse("10.1.0.0/16");
    ASSERT_TRUE(table->InsertFirst("PREROUTING", first).ok());
    const Status committed = table->Commit();
    ASSERT_TRUE(committed.ok()) << committed.error().msg;
  }
  const std::string rules = ns.MustRun("iptables-nft -t nat -S PREROUTING");
  EXPECT_EQ(rules,
            "-P PREROUTING ACCEPT\n"
            "-A PREROUTING -s 10.1.0.0/16 -p tcp -m addrtype --dst-type LOCAL -j SINK\n"
            "-A PREROUTING -p tcp -m addrtype --dst-type LOCAL -j SINK\n");
  EXPECT_NE(ns.MustRun("nft list chain ip nat PREROUTING")
                .find("type nat hook prerouting priority dstnat; policy accept;"),
            std::string::npos);
  {
    // A kernel refusal names the object: deleting a chain something still jumps to.
    auto table = OpenIn(ns, Family::kV4);
    ASSERT_NE(table, nullptr);
    ASSERT_TRUE(table->DeleteChain("SINK").ok());
    const Status refused = table->Commit();
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().code, kErrKernel);
    EXPECT_FALSE(NftNatTable::IsStaleGeneration(refused.error()));
    EXPECT_EQ(refused.error().msg.rfind("iptables-nft: commit table nat: delete chain SINK: ", 0),
              0u)
        << refused.error().msg;
  }
  {
    // A refused rule is named by what its message holds: a jump to a chain that is not there.
    auto table = OpenIn(ns, Family::kV4);
    ASSERT_NE(table, nullptr);
    ipt::Rule dangling = rule;
    dangling.target = ipt::JumpTarget{"MISSING"};
    ASSERT_TRUE(table->InsertFirst("SINK", dangling).ok());
    const Status refused = table->Commit();
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().msg.rfind("iptables-nft: commit table nat: insert into SINK rule "
                                        "\"-p tcp -m addrtype --dst-type LOCAL -j MISSING\": ",
                                        0),
              0u)
        << refused.error().msg;
  }
  EXPECT_NE(ns.MustRun("iptables-nft -t nat -S").find("-N SINK"), std::string::npos);
  EXPECT_TRUE([&] {
    auto scope = sys::NetnsScope::Enter(ns.path());
    return NftNatTable::Usable(Family::kV6).ok();
  }());
}

TEST(IptablesNft, StaleGenerationAppliesNothing) {
  NG_REQUIRE_ROOT();
  TestNetns ns("ng-nft-stale");
  ns.MustRun("iptables-nft -t nat -N KEEP && iptables-nft -t nat -N SINK");
  auto table = OpenIn(ns, Family::kV4);
  ASSERT_NE(table, nullptr);
  const ipt::Rule rule{{}, {ipt::CommentMatch{"mine"}}, ipt::JumpTarget{"SINK"}};
  ASSERT_TRUE(table->Append("KEEP", rule).ok());
  ASSERT_TRUE(table->CreateChain("NEW").ok());
  ASSERT_TRUE(table->Append("PREROUTING", rule).ok());
  ns.MustRun("iptables-nft -t nat -N X");  // another writer commits meanwhile
  const Status stale = table->Commit();
  ASSERT_FALSE(stale.ok());
  EXPECT_EQ(stale.error().code, kErrKernel);
  EXPECT_TRUE(NftNatTable::IsStaleGeneration(stale.error())) << stale.error().msg;
  const std::string after = Save(ns, Family::kV4);
  EXPECT_EQ(after.find("NEW"), std::string::npos) << after;
  EXPECT_EQ(after.find("mine"), std::string::npos) << after;
  EXPECT_NE(after.find(":X - "), std::string::npos) << after;
  EXPECT_EQ(ns.Run("nft list chain ip nat PREROUTING").exit_code, 1);

  // Reads after a foreign change are refused the same way when confirmed (one object, one
  // generation); without a change since Open they are confirmed.
  table = OpenIn(ns, Family::kV4);
  ASSERT_NE(table, nullptr);
  ASSERT_TRUE(table->HasRule("KEEP", rule).ok());
  EXPECT_TRUE(table->ConfirmReads().ok());
  ns.MustRun("iptables-nft -t nat -A KEEP -j SINK");
  ASSERT_TRUE(table->HasRule("SINK", rule).ok());
  const Status read = table->ConfirmReads();
  ASSERT_FALSE(read.ok());
  EXPECT_TRUE(NftNatTable::IsStaleGeneration(read.error())) << read.error().msg;
}

// Removes chain X and the jumps to it the way DEL does; returns the chains it had to list.
std::set<std::string> RemoveX(const TestNetns& ns) {
  auto table = OpenIn(ns, Family::kV4);
  EXPECT_NE(table, nullptr);
  if (table == nullptr) return {};
  EXPECT_TRUE(table->DeleteJumps(ipt::kDnatChain, {"X"}).ok());
  EXPECT_TRUE(table->Flush("X").ok());
  EXPECT_TRUE(table->DeleteChain("X").ok());
  const Status committed = table->Commit();
  EXPECT_TRUE(committed.ok()) << committed.error().msg;
  return table->listed_chains();
}

// Thousands of entry rules: DEL finds a container's entry rules by probing the handles after
// its chain's rules (each command below is its own transaction, as the reference's iptables
// calls are), and lists the parent only when a foreign writer put too much in between.
TEST(IptablesNft, DeleteJumpsFindsEntryRulesByHandle) {
  NG_REQUIRE_ROOT();
  TestNetns ns("ng-nft-probe");
  ns.MustRun(
      "iptables-nft -t nat -N CNI-HOSTPORT-DNAT && iptables-nft -t nat -N SINK && "
      "for i in $(seq 1 50); do iptables-nft -t nat -A CNI-HOSTPORT-DNAT -p tcp --dport $i -j "
      "SINK; done");
  const std::string x_with_two_entries =
      "iptables-nft -t nat -N X && iptables-nft -t nat -A X -p tcp -j SINK && "
      "iptables-nft -t nat -A X -p udp -j SINK && "
      "iptables-nft -t nat -A CNI-HOSTPORT-DNAT -p tcp --dport 80 -j X && "
      "iptables-nft -t nat -A CNI-HOSTPORT-DNAT -p udp --dport 80 -j X";
  const std::string foreign_rules =
      "for i in $(seq 1 20); do iptables-nft -t nat -A SINK -p tcp --dport $i; done";
  auto gone = [&] {
    const std::string after = Save(ns, Family::kV4);
    return after.find(":X ") == std::string::npos && after.find("-j X") == std::string::npos &&
           CountLines(after, "-j SINK") == 50;
  };

  ns.MustRun(x_with_two_entries);
  EXPECT_EQ(RemoveX(ns), std::set<std::string>{"X"});
  EXPECT_TRUE(gone()) << Save(ns, Family::kV4);

  // A foreign writer between the chain and its entry rules: found by probing (a small gap) ...
  ns.MustRun(
      "iptables-nft -t nat -N X && iptables-nft -t nat -A X -j SINK && "
      "iptables-nft -t nat -A SINK -p tcp --dport 1 && "
      "iptables-nft -t nat -A CNI-HOSTPORT-DNAT -j X");
  EXPECT_EQ(RemoveX(ns), std::set<std::string>{"X"});
  EXPECT_TRUE(gone()) << Save(ns, Family::kV4);

  // ... or by listing the parent (a large one).
  ns.MustRun("iptables-nft -t nat -N X && iptables-nft -t nat -A X -j SINK && " + foreign_rules +
             " && iptables-nft -t nat -A CNI-HOSTPORT-DNAT -j X");
  EXPECT_EQ(RemoveX(ns), (std::set<std::string>{"X", ipt::kDnatChain}));
  EXPECT_TRUE(gone()) << Save(ns, Family::kV4);

  // An entry rule made before the chain's last rule (-I, or a re-ADD elsewhere): listed too.
  ns.MustRun(
      "iptables-nft -t nat -N X && iptables-nft -t nat -A CNI-HOSTPORT-DNAT -j X && "
      "iptables-nft -t nat -A X -j SINK");
  EXPECT_EQ(RemoveX(ns), (std::set<std::string>{"X", ipt::kDnatChain}));
  EXPECT_TRUE(gone()) << Save(ns, Family::kV4);
}

// The reference config of a KindsConfigs() entry (the keys the reference plugin reads).
std::string ReferenceConf(const Config& c) {
  auto list = [](const std::vector<std::string>& tokens) {
    std::string out = "[";
    for (size_t i = 0; i < tokens.size(); ++i) out += (i ? ",\"" : "\"") + tokens[i] + "\"";
    return out + "]";
  };
  std::string mappings = "[";
  for (size_t i = 0; i < c.mappings.size(); ++i) {
    const auto& m = c.mappings[i];
    mappings += std::string(i ? "," : "") + R"({"hostPort":)" + std::to_string(m.host_port) +
                R"(,"containerPort":)" + std::to_string(m.container_port) + R"(,"protocol":")" +
                std::string(ProtocolName(m.protocol)) + "\"" +
                (m.host_ip ? R"(,"hostIP":")" + m.host_ip->ToString() + "\"" : "") + "}";
  }
  mappings += "]";
  return R"({"cniVersion":"1.0.0","name":")" + c.network_name + R"(","type":"portmap",)" +
         R"("masqAll":)" + (c.masq_all ? "true" : "false") + R"(,"markMasqBit":)" +
         std::to_string(c.mark_masq_bit) + R"(,"conditionsV4":)" + list(c.conditions_v4.tokens) +
         R"(,"conditionsV6":)" + list(c.conditions_v6.tokens) +
         R"(,"runtimeConfig":{"portMappings":)" + mappings +
         R"(},"prevResult":{"cniVersion":"1.0.0","interfaces":[{"name":"eth0","sandbox":"/x"}],)" +
         R"("ips":[{"interface":0,"address":")" + c.container_v4->ToString() +
         R"("},{"interface":0,"address":")" + c.container_v6->ToString() + R"("}]}})";
}

// What an ADD does to one family's table, as one transaction: missing shared chains and
// rules, the container's chain and rules, its entry rules.
void AddPlan(const TestNetns& ns, const ipt::Plan& plan) {
  auto table = OpenIn(ns, plan.family);
  ASSERT_NE(table, nullptr);
  for (const auto& chain : plan.shared_chains) {
    if (!table->HasChain(chain)) {
      ASSERT_TRUE(table->CreateChain(chain).ok());
    }
  }
  for (const auto& shared : plan.shared_rules) {
    if (*table->HasRule(shared.chain, shared.rule)) continue;
    ASSERT_TRUE((shared.insert_first ? table->InsertFirst(shared.chain, shared.rule)
                                     : table->Append(shared.chain, shared.rule))
                    .ok());
  }
  ASSERT_TRUE(table->CreateChain(plan.container_chain).ok());
  for (const auto& rule : plan.container_rules)
    ASSERT_TRUE(table->Append(plan.container_chain, rule).ok());
  for (const auto& rule : plan.entry_rules) ASSERT_TRUE(table->Append(ipt::kDnatChain, rule).ok());
  const Status committed = table->Commit();
  ASSERT_TRUE(committed.ok()) << committed.error().msg;
}

// Debian's reference plugin, running iptables-nft (the node's `iptables`), and the same ADDs
// made through NftNatTable give the same tables; every planned rule is found in the
// reference's tables. (Debian's v1.1.1 predates masqAll, so that key is left out.)
TEST(IptablesNft, SameTablesAsTheReferencePlugin) {
  NG_REQUIRE_ROOT();
  if (::access(nodegate::testing::ReferencePath("portmap").c_str(), X_OK) != 0) {
    GTEST_SKIP() << "no reference portmap";
  }
  TestNetns reference("ng-nft-pmref"), ours("ng-nft-pmour");
  auto configs = KindsConfigs();
  for (auto& config : configs) config.masq_all = false;
  for (const Config& config : configs) {
    nodegate::testing::PluginCall call;
    call.binary = nodegate::testing::ReferencePath("portmap");
    call.command = "ADD";
    call.container_id = config.container_id;
    call.netns = "/run/netns/ctr-" + config.container_id;
    call.ifname = "eth0";
    call.stdin_data = ReferenceConf(config);
    call.run_in_netns = reference.path();
    call.extra_env["PATH"] = "/usr/sbin:/usr/bin:/sbin:/bin";  // iptables is iptables-nft here
    const auto out = nodegate::testing::RunPlugin(call);
    ASSERT_EQ(out.exit_code, 0) << call.stdin_data << "\n" << out.out << out.err;
    for (Family family : kFamilies) AddPlan(ours, ipt::BuildPlan(config, family));
  }
  for (Family family : kFamilies) {
    SCOPED_TRACE(Tool(family));
    EXPECT_EQ(Save(ours, family), Save(reference, family));
    EXPECT_EQ(DecodedTable(ours, family), DecodedTable(reference, family));
    auto table = OpenIn(reference, family);
    ASSERT_NE(table, nullptr);
    for (const Config& config : configs) {
      const ipt::Plan plan = ipt::BuildPlan(config, family);
      for (const auto& shared : plan.shared_rules)
        EXPECT_TRUE(*table->HasRule(shared.chain, shared.rule));
      for (const auto& rule : plan.container_rules) {
        EXPECT_TRUE(*table->HasRule(plan.container_chain, rule)) << rule.ToString();
      }
      for (const auto& rule : plan.entry_rules)
        EXPECT_TRUE(*table->HasRule(ipt::kDnatChain, rule)) << rule.ToString();
      EXPECT_EQ(table->EntryOwners()->at(plan.container_chain).container_id, config.container_id);
    }
  }
}

// 50 transactions in parallel threads (each: Open, Append one rule, Commit, retried on a stale
// generation) while an iptables-nft loop appends 100 rules of its own: no rule is lost. The
// writers start once the loop is running, and their first attempts all open before any of
// them commits, so at least 49 must go stale and retry.
TEST(IptablesNft, ParallelTransactionsLoseNothing) {
  NG_REQUIRE_ROOT();
  TestNetns ns("ng-nft-race");
  ns.MustRun(
      "iptables-nft -t nat -N OURS && iptables-nft -t nat -N FOREIGN && iptables-nft -t nat -N "
      "SINK");
  constexpr int kWriters = 50, kForeign = 100;
  auto foreign_rules = [&] {
    return CountLines(ns.Run("iptables-nft -t nat -S FOREIGN").output, "-A ");
  };
  std::thread foreign([&] {
    ns.MustRun("for i in $(seq 1 " + std::to_string(kForeign) +
               "); do iptables-nft -w -t nat -A FOREIGN -s 10.9.$i.0/24 -j SINK; done");
  });
  for (int i = 0; i < 1000 && foreign_rules() < 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::atomic<int> retries{0}, failures{0};
  std::latch opened(kWriters);
  std::vector<std::thread> writers;
  for (int i = 0; i < kWriters; ++i) {
    writers.emplace_back([&, i] {
      auto scope = sys::NetnsScope::Enter(ns.path());
      if (!scope.ok()) {
        ++failures;
        opened.count_down();
        return;
      }
      ipt::Header h;
      h.src =
          net::IpPrefix(net::IpAddress::V4(0x0a080000u | (static_cast<uint32_t>(i + 1) << 8)), 24);
      const ipt::Rule rule{h, {}, ipt::JumpTarget{"SINK"}};
      for (int attempt = 0; attempt < 1000; ++attempt) {
        auto table = NftNatTable::Open(Family::kV4);
        if (attempt == 0) opened.arrive_and_wait();
        if (!table.ok()) break;
        if (!(*table)->Append("OURS", rule).ok()) break;
        const Status s = (*table)->Commit();
        if (s.ok()) return;
        if (!NftNatTable::IsStaleGeneration(s.error())) break;
        ++retries;
      }
      ++failures;
    });
  }
  for (auto& t : writers) t.join();
  const int foreign_meanwhile = foreign_rules();
  foreign.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GE(retries.load(), kWriters - 1);
  const std::string save = Save(ns, Family::kV4);
  EXPECT_EQ(CountLines(save, "-A OURS "), kWriters) << save;
  EXPECT_EQ(CountLines(save, "-A FOREIGN "), kForeign) << save;
  for (int i = 1; i <= kWriters; ++i) {
    EXPECT_NE(save.find("-A OURS -s 10.8." + std::to_string(i) + ".0/24 -j SINK"),
              std::string::npos)
        << i;
  }
  std::cout << "stale-generation retries: " << retries.load() << "; foreign rules when our "
            << kWriters << " writers were done: " << foreign_meanwhile << " of " << kForeign
            << "\n";
}

// Not a check: how long Open, HasRule and a one-rule Commit take beside 1,000 containers'
// rules (4,000 rules in CNI-DN chains, 1,000 entry rules), as the doc's cost table measures.
TEST(IptablesNft, Timings) {
  NG_REQUIRE_ROOT();
  TestNetns ns("ng-nft-time");
  using Clock = std::chrono::steady_clock;
  auto ms = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
  };
  std::vector<RuleKind> kinds;
  Config config = KindsConfig("c");
  config.mappings = {Mapping(8080, 80, Protocol::kTcp)};
  for (int i = 0; i < 1000; ++i) {
    config.container_id = "c" + std::to_string(i);
    config.mappings[0].host_port = 10000 + i;
    const auto plan = ipt::BuildPlan(config, Family::kV4);
    if (i == 0) {
      for (const auto& s : plan.shared_rules) kinds.push_back({s.chain, s.rule, s.insert_first});
    }
    for (const auto& r : plan.container_rules) kinds.push_back({plan.container_chain, r});
    for (const auto& r : plan.entry_rules) kinds.push_back({ipt::kDnatChain, r});
  }
  const auto t0 = Clock::now();
  WriteOurs(ns, Family::kV4, kinds);
  const auto t1 = Clock::now();
  auto scope = sys::NetnsScope::Enter(ns.path());
  auto table = NftNatTable::Open(Family::kV4);
  ASSERT_TRUE(table.ok());
  const auto t2 = Clock::now();
  auto found = (*table)->HasRule(ipt::kDnatChain, kinds.back().rule);
  const auto t3 = Clock::now();
  ASSERT_TRUE(found.ok() && *found);
  ASSERT_TRUE((*table)->Append(ipt::kDnatChain, kinds.back().rule).ok());
  ASSERT_TRUE((*table)->Commit().ok());
  const auto t4 = Clock::now();
  std::cout << "one batch of " << kinds.size() << " rules + 1,001 chains: " << ms(t0, t1)
            << " ms\nOpen: " << ms(t1, t2)
            << " ms\nHasRule in CNI-HOSTPORT-DNAT (1,000 rules): " << ms(t2, t3)
            << " ms\nAppend + Commit of one rule: " << ms(t3, t4) << " ms\n";
}

}  // namespace
}  // namespace nodegate::portmap::testing
