#pragma once
// Which encoding of table nat the iptables layout uses on this node: the one the reference's
// rules land in. The reference execs the first `iptables` (`ip6tables` for IPv6) on the PATH
// the runtime gives it; on Debian 12, Ubuntu 22.04+, RHEL 8+ and Fedora that is iptables-nft
// (nf_tables), on older nodes iptables-legacy (x_tables). The same binary is found without
// running it, per family, in this order:
//
//   1. "iptablesMode": "nft" | "legacy" in the config (ours), when given;
//   2. the PATH lookup of iptables / ip6tables with symlinks resolved: a name containing "nft"
//      (iptables-nft, xtables-nft-multi) is nft; one containing "legacy", or xtables-multi
//      (iptables before 1.8), is legacy;
//   3. no such binary, or one that says nothing (a wrapper script): the kubelet's hint chains
//      KUBE-IPTABLES-HINT and KUBE-KUBELET-CANARY in table mangle, in nf_tables first, then in
//      the legacy tables (read only when that table is already loaded: reading it would
//      create it);
//   4. this layout's chain CNI-HOSTPORT-DNAT in nf_tables `nat`, then in the legacy `nat`;
//   5. nft (RHEL 9 has no legacy tables; the kubelet and iptables-wrappers default to it too).
//
//   ModeChoice choice = ChooseMode(net::Family::kV4, std::nullopt, NodeView::Real());

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "lib/net/ip.h"

namespace nodegate::portmap {

enum class IptablesMode { kLegacy, kNft };
std::string_view IptablesModeName(IptablesMode mode);  // "legacy", "nft"
std::optional<IptablesMode> ParseIptablesMode(std::string_view text);

struct ModeChoice {
  IptablesMode mode = IptablesMode::kNft;
  std::string reason;  // for logs and STATUS: "iptables is /usr/sbin/xtables-nft-multi"
};

// The node facts the choice reads: the real ones, or fakes in unit tests.
struct NodeView {
  // `name` looked up on PATH as Go's exec.LookPath does, symlinks resolved; nullopt if absent.
  std::function<std::optional<std::string>(const std::string& name)> resolve_binary;
  // Whether the chain exists in nf_tables, or in the legacy tables (false when that legacy
  // table is not loaded).
  std::function<bool(net::Family, const std::string& table, const std::string& chain)>
      nft_has_chain;
  std::function<bool(net::Family, const std::string& table, const std::string& chain)>
      legacy_has_chain;

  static NodeView Real();
};

// What a resolved binary says about the mode, from its file name (nullopt: nothing).
std::optional<IptablesMode> ModeOfBinary(std::string_view resolved_path);

ModeChoice ChooseMode(net::Family family, std::optional<IptablesMode> configured,
                      const NodeView& node);

// Whether the legacy x_tables `table` of `family` is loaded in this network namespace
// (/proc/net/ip_tables_names); reading an unloaded one would create it.
bool LegacyTableLoaded(net::Family family, const std::string& table);

}  // namespace nodegate::portmap
