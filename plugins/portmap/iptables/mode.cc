#include "plugins/portmap/iptables/mode.h"

#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "lib/base/split.h"
#include "lib/netfilter/query.h"
#include "lib/sys/atomic_file.h"
#include "plugins/portmap/iptables/legacy/ops.h"

namespace nodegate::portmap {
namespace {

constexpr const char* kHintChains[] = {"KUBE-IPTABLES-HINT", "KUBE-KUBELET-CANARY"};
// Go's exec.LookPath with an unset PATH finds nothing; runtimes always pass one, and the
// plugin's own PATH is the fallback the reference would use too.
constexpr char kDefaultPath[] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

// The file `path` names once its own symlinks are followed (iptables -> /etc/alternatives/
// iptables -> iptables-nft -> xtables-nft-multi): the mode is in that file's name. Unlike
// realpath, the directories on the way are left to the kernel (a readlink each, for nothing).
std::string FollowLinks(std::string path) {
  constexpr int kMaxLinks = 40;  // the kernel's own limit
  for (int i = 0; i < kMaxLinks; ++i) {
    char target[PATH_MAX];
    const ssize_t n = ::readlink(path.c_str(), target, sizeof(target));
    if (n <= 0 || static_cast<size_t>(n) >= sizeof(target)) break;
    std::string next(target, static_cast<size_t>(n));
    if (next.front() != '/') next = path.substr(0, path.rfind('/') + 1) + next;
    path = std::move(next);
  }
  return path;
}

std::optional<std::string> LookPath(const std::string& name) {
  const char* env = std::getenv("PATH");
  for (const std::string_view dir : SplitLikeGetline(env != nullptr ? env : kDefaultPath, ':')) {
    const std::string candidate = (dir.empty() ? "." : std::string(dir)) + "/" + name;
    struct stat st {};
    if (::stat(candidate.c_str(), &st) != 0 || !S_ISREG(st.st_mode) ||
        ::access(candidate.c_str(), X_OK) != 0) {
      continue;
    }
    return FollowLinks(candidate);
  }
  return std::nullopt;
}

bool LegacyHasChain(net::Family family, const std::string& table, const std::string& chain) {
  if (!LegacyTableLoaded(family, table)) return false;
  const ipt::LegacyOps& ops = ipt::LegacyOpsFor(family);
  xtc_handle* h = ops.init(table.c_str());
  if (h == nullptr) return false;
  const bool found = ops.is_chain(chain.c_str(), h) != 0;
  ops.free(h);
  return found;
}

bool NftHasChain(net::Family family, const std::string& table, const std::string& chain) {
  auto found = netfilter::HasChain(
      family == net::Family::kV4 ? netfilter::kNfprotoIpv4 : netfilter::kNfprotoIpv6, table, chain);
  return found.ok() && *found;
}

}  // namespace

std::string_view IptablesModeName(IptablesMode mode) {
  return mode == IptablesMode::kNft ? "nft" : "legacy";
}

std::optional<IptablesMode> ParseIptablesMode(std::string_view text) {
  if (text == "nft") return IptablesMode::kNft;
  if (text == "legacy") return IptablesMode::kLegacy;
  return std::nullopt;
}

NodeView NodeView::Real() { return NodeView{LookPath, NftHasChain, LegacyHasChain}; }

std::optional<IptablesMode> ModeOfBinary(std::string_view resolved_path) {
  const std::string_view name = resolved_path.substr(resolved_path.rfind('/') + 1);
  if (name.find("nft") != std::string_view::npos) return IptablesMode::kNft;
  if (name.find("legacy") != std::string_view::npos || name == "xtables-multi") {
    return IptablesMode::kLegacy;
  }
  return std::nullopt;  // a wrapper script, or a binary we cannot place
}

ModeChoice ChooseMode(net::Family family, std::optional<IptablesMode> configured,
                      const NodeView& node) {
  if (configured) return {*configured, "iptablesMode in the config"};
  const std::string binary = family == net::Family::kV4 ? "iptables" : "ip6tables";
  const auto resolved = node.resolve_binary(binary);
  if (resolved) {
    if (auto mode = ModeOfBinary(*resolved)) {
      return {*mode, binary + " is " + *resolved};
    }
  }
  const std::string why =
      resolved ? binary + " (" + *resolved + ") names no mode" : "no " + binary + " on PATH";
  for (const char* chain : kHintChains) {
    if (node.nft_has_chain(family, "mangle", chain)) {
      return {IptablesMode::kNft, why + "; the kubelet's " + chain + " is in nf_tables"};
    }
  }
  for (const char* chain : kHintChains) {
    if (node.legacy_has_chain(family, "mangle", chain)) {
      return {IptablesMode::kLegacy, why + "; the kubelet's " + chain + " is in x_tables"};
    }
  }
  if (node.nft_has_chain(family, "nat", "CNI-HOSTPORT-DNAT")) {
    return {IptablesMode::kNft, why + "; CNI-HOSTPORT-DNAT is in nf_tables"};
  }
  if (node.legacy_has_chain(family, "nat", "CNI-HOSTPORT-DNAT")) {
    return {IptablesMode::kLegacy, why + "; CNI-HOSTPORT-DNAT is in x_tables"};
  }
  return {IptablesMode::kNft, why + "; no hint on the node: nft"};
}

bool LegacyTableLoaded(net::Family family, const std::string& table) {
  // Absent when no x_tables table of the family was ever loaded.
  const auto names = sys::ReadFile(family == net::Family::kV4 ? "/proc/net/ip_tables_names"
                                                              : "/proc/net/ip6_tables_names");
  if (!names.ok()) return false;
  for (const std::string_view line : SplitLikeGetline(*names, '\n')) {
    if (line == table) return true;
  }
  return false;
}

}  // namespace nodegate::portmap
