#pragma once
// Every host-port mapping installed on this node, read back from the kernel in every layout a
// node can have: the reference's iptables layout in the legacy x_tables ("iptables-legacy") or
// in nf_tables ("iptables-nft"), our nftables table ("nftables"), and the reference's nftables
// backend tables `ip`/`ip6 cni_hostport` ("nftables-reference"). Used by portmap's
// "hostPortConflicts": "reject" and by `nodegate ports` / `admit --live` (issue 12).
//
//   NG_ASSIGN_OR_RETURN(auto mappings, portmap::ListInstalledMappings());
//   for (const auto& m : mappings) ... m.layout, m.host_port, m.container_id ...

#include <compare>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "lib/base/result.h"
#include "lib/net/ip.h"
#include "lib/netfilter/nft_expr.h"
#include "lib/netfilter/nlattr.h"
#include "lib/netfilter/query.h"
#include "plugins/portmap/config.h"
#include "plugins/portmap/iptables/nft/table.h"
#include "plugins/portmap/iptables/rules.h"
#include "plugins/portmap/nftables/rules.h"

namespace nodegate::portmap {

struct InstalledMapping {
  std::string layout;  // "iptables-legacy" | "iptables-nft" | "nftables" | "nftables-reference"
  net::Family family = net::Family::kV4;
  std::optional<net::IpAddress> host_ip;  // nullopt: every local address of the family
  Protocol protocol = Protocol::kTcp;
  int host_port = 0;
  std::string target;        // "10.88.0.2:80" / "[fd00::2]:80"
  std::string network;       // the CNI network name
  std::string container_id;  // the CNI container ID
};

// The mappings in the calling thread's network namespace. A layout whose tables do not exist
// is skipped without creating or loading anything; a layout that exists but cannot be read is
// an error (code 100) naming it.
Result<std::vector<InstalledMapping>> ListInstalledMappings();

// A (family, protocol, host port) key, for reading only what can matter.
struct PortKey {
  net::Family family = net::Family::kV4;
  Protocol protocol = Protocol::kTcp;
  int port = 0;
  auto operator<=>(const PortKey&) const = default;
};
inline PortKey KeyOf(const InstalledMapping& m) { return {m.family, m.protocol, m.host_port}; }

// The mappings whose key is in `only`. The iptables layouts then read only the container
// chains whose entry rules name one of the ports (the entry rules carry protocol and ports),
// not every CNI-DN-* chain of the node.
Result<std::vector<InstalledMapping>> ListInstalledMappings(const std::set<PortKey>& only);

// Pure parts, for tests.
// "10.88.0.2:80" / "[fd00::2]:80".
std::string TargetText(const net::IpAddress& address, int port);
// A DNAT rule of a CNI-DN-* chain as a mapping (layout, network and container left empty);
// nullopt for the chain's other rules.
std::optional<InstalledMapping> MappingOfDnatRule(const ipt::Rule& rule, net::Family family);
// Our table's dnat maps as read over netlink (nftables/rules.h has the layout): which family,
// and whether the key starts with a host IP (n<h>_dnat_ip_*) or not (n<h>_dnat_any_*);
// nullopt for the table's other sets.
using nft::DnatMapShape;
using nft::DnatMapShapeOf;
// The key of a dnat_any map for (protocol, port), in register layout.
std::vector<uint8_t> DnatAnyKey(Protocol protocol, int port);
// An element of a dnat map (its comment is the container ID) as a mapping, network left
// empty; nullopt when its bytes do not have the map's layout.
std::optional<InstalledMapping> MappingOfMapElement(const netfilter::SetElement& element,
                                                    const DnatMapShape& shape);
// Whether an entry rule of CNI-HOSTPORT-DNAT may lead to one of `only` (true when its ports
// cannot be read).
bool EntryRuleMayMatch(const ipt::Rule& rule, net::Family family, const std::set<PortKey>& only);
// The same before decoding, for the nf_tables encoding (decoding, and even copying, is most of
// a listing's cost on a busy node): when a rule's expressions hold a multiport match (the
// reference's entry rules all do), whether its ports (read in place) hold one of `only`'s of
// `family`; true when there is no such match. Never false where EntryRuleMayMatch is true.
bool RawEntryMayMatch(netfilter::ByteView expressions, net::Family family,
                      const std::set<PortKey>& only);
// Whether a rule of a CNI-DN-* chain may be its DNAT rule, before decoding: iptables-nft
// writes `-j DNAT` as the compat target named "DNAT", so its expressions hold that name. The
// chain's SETMARK rules (two of its three) are passed over without being copied.
bool RawRuleMayBeDnat(netfilter::ByteView expressions);
// A rule of the reference nftables backend's `ip`/`ip6 cni_hostport` tables (its expressions,
// as a dump holds them) as a mapping: `[ip daddr A] <proto> dport P dnat to C:Q`, in any of
// the encodings its versions wrote (meta l4proto or ip protocol, tcp/udp or th dport); layout
// "nftables-reference", container and network left empty; nullopt for its other rules.
std::optional<InstalledMapping> MappingOfReferenceRule(const std::vector<netfilter::Expr>& exprs,
                                                       net::Family family);

}  // namespace nodegate::portmap
