// ChooseMode: which iptables (nft or legacy) a node uses, from the binary on PATH, then the
// chains the kubelet and CNI plugins left, then nft.
#include "plugins/portmap/iptables/mode.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <set>
#include <string>

namespace nodegate::portmap {
namespace {

// A node as ChooseMode sees it: which binary PATH resolves to, and which chains exist.
struct FakeNode {
  std::map<std::string, std::string> binaries;      // "iptables" -> resolved path
  std::set<std::string> nft_chains, legacy_chains;  // "mangle/KUBE-IPTABLES-HINT"
  NodeView View() const {
    return NodeView{[this](const std::string& name) -> std::optional<std::string> {
                      auto it = binaries.find(name);
                      return it == binaries.end() ? std::nullopt
                                                  : std::optional<std::string>(it->second);
                    },
                    [this](net::Family, const std::string& table, const std::string& chain) {
                      return nft_chains.count(table + "/" + chain) > 0;
                    },
                    [this](net::Family, const std::string& table, const std::string& chain) {
                      return legacy_chains.count(table + "/" + chain) > 0;
                    }};
  }
};

TEST(IptablesMode, TheBinaryOnPathDecidesFirst) {
  EXPECT_EQ(ModeOfBinary("/usr/sbin/xtables-nft-multi"), IptablesMode::kNft);
  EXPECT_EQ(ModeOfBinary("/usr/sbin/iptables-nft"), IptablesMode::kNft);
  EXPECT_EQ(ModeOfBinary("/usr/sbin/xtables-legacy-multi"), IptablesMode::kLegacy);
  EXPECT_EQ(ModeOfBinary("/sbin/xtables-multi"), IptablesMode::kLegacy);  // iptables < 1.8
  EXPECT_EQ(ModeOfBinary("/usr/sbin/iptables-wrapper"), std::nullopt);
  EXPECT_EQ(ModeOfBinary("/usr/local/bin/iptables"), std::nullopt);

  FakeNode node;
  node.binaries = {{"iptables", "/usr/sbin/xtables-legacy-multi"},
                   {"ip6tables", "/usr/sbin/xtables-nft-multi"}};
  node.nft_chains = {"mangle/KUBE-IPTABLES-HINT"};  // the binary wins over hints
  EXPECT_EQ(ChooseMode(net::Family::kV4, std::nullopt, node.View()).mode, IptablesMode::kLegacy);
  EXPECT_EQ(ChooseMode(net::Family::kV6, std::nullopt, node.View()).mode, IptablesMode::kNft);
  const ModeChoice forced = ChooseMode(net::Family::kV4, IptablesMode::kNft, node.View());
  EXPECT_EQ(forced.mode, IptablesMode::kNft);
  EXPECT_EQ(forced.reason, "iptablesMode in the config");
}

TEST(IptablesMode, WithoutABinaryTheNodesHintsDecideThenNft) {
  FakeNode node;  // no iptables on PATH (a distroless node image)
  const auto mode = [&] { return ChooseMode(net::Family::kV4, std::nullopt, node.View()); };
  EXPECT_EQ(mode().mode, IptablesMode::kNft);
  EXPECT_EQ(mode().reason, "no iptables on PATH; no hint on the node: nft");
  node.legacy_chains = {"nat/CNI-HOSTPORT-DNAT"};
  EXPECT_EQ(mode().mode, IptablesMode::kLegacy);
  node.nft_chains = {"nat/CNI-HOSTPORT-DNAT"};
  EXPECT_EQ(mode().mode, IptablesMode::kNft);  // nf_tables first
  node.legacy_chains.insert("mangle/KUBE-KUBELET-CANARY");
  EXPECT_EQ(mode().mode, IptablesMode::kLegacy);  // the kubelet's hint beats CNI chains
  node.nft_chains.insert("mangle/KUBE-IPTABLES-HINT");
  EXPECT_EQ(mode().mode, IptablesMode::kNft);
  EXPECT_NE(mode().reason.find("KUBE-IPTABLES-HINT is in nf_tables"), std::string::npos);
  node.binaries = {{"iptables", "/usr/sbin/iptables-wrapper"}};  // a script says nothing
  EXPECT_EQ(mode().mode, IptablesMode::kNft);
  EXPECT_EQ(mode().reason.rfind("iptables (/usr/sbin/iptables-wrapper) names no mode", 0), 0u);
}

}  // namespace
}  // namespace nodegate::portmap
