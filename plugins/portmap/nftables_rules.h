#pragma once
// File: plugins/portmap/nftables_rules.h
//
// The nftables backend's layout, built as nft script text without touching the kernel.
// One table, `inet cni_hostport` (the reference's name; the reference's own tables are in the
// `ip` and `ip6` families, so both can live on one node). Per network (prefix n<hash>):
//
//   maps   n<h>_dnat_any_v4  : inet_proto . inet_service              -> ipv4_addr . inet_service
//          n<h>_dnat_ip_v4   : ipv4_addr . inet_proto . inet_service  -> ipv4_addr . inet_service
//          (and _v6 twins)   one element per mapping, commented with the container ID
//   sets   n<h>_hairpin_v4/6 : container subnets whose traffic to a host port is masqueraded
//          (interval sets holding only the outermost of nested subnets; see PlanHairpin;
//          DEL leaves them, GC deletes those no remaining mapping's address is in)
//   chains n<h>_prerouting / n<h>_output (nat hooks): fib daddr type local jump n<h>_hostports
//          n<h>_hostports: mark for masquerade, then dnat through the maps
//          n<h>_masquerade (postrouting): meta mark & M == M masquerade
//   shared set owned  { ifname . ifname }: (owner hash . key hash) ownership records, plus
//          (owner . "all4"/"all6") markers, so DEL/re-ADD are checked by the kernel in the
//          same transaction that changes the maps
//   shared set netcfg { ifname . mark }: (network prefix . config hash) of the network chains
//
// An ADD adds a fixed number of elements per mapping, so its cost does not depend on how many
// other mappings exist. The chains are written only when a network is new or its config
// changed.

#include <optional>
#include <string>
#include <vector>

#include "lib/base/result.h"
#include "lib/net/ip.h"
#include "plugins/portmap/config.h"

namespace nodegate::portmap::nft {

inline constexpr char kFamily[] = "inet";
inline constexpr char kTable[] = "cni_hostport";
inline constexpr char kOwnedSet[] = "owned";
inline constexpr char kNetcfgSet[] = "netcfg";
// The reference's nftables backend (v1.6+): tables `ip cni_hostport` / `ip6 cni_hostport`,
// rules commented with the bare container ID in these chains.
inline constexpr const char* kReferenceChains[] = {"hostports", "hostip_hostports", "masquerading"};

struct NetworkNames {
  std::string prefix;  // "n" + 10 hex digits of sha512(network name)
  std::string DnatAny(net::Family f) const { return prefix + "_dnat_any" + Suffix(f); }
  std::string DnatIp(net::Family f) const { return prefix + "_dnat_ip" + Suffix(f); }
  std::string Hairpin(net::Family f) const { return prefix + "_hairpin" + Suffix(f); }
  std::string Prerouting() const { return prefix + "_prerouting"; }
  std::string Output() const { return prefix + "_output"; }
  std::string Hostports() const { return prefix + "_hostports"; }
  std::string Masquerade() const { return prefix + "_masquerade"; }
  static std::string Suffix(net::Family f) { return f == net::Family::kV4 ? "_v4" : "_v6"; }
};
NetworkNames NamesFor(const std::string& network_name);

// One map element a container owns. `value` is empty when the container address is unknown
// (DEL without prevResult): deletion needs only the key.
struct Element {
  net::Family family = net::Family::kV4;
  std::string map;
  std::string key;    // nft syntax: "tcp . 8080" or "192.0.2.1 . tcp . 8080"
  std::string value;  // nft syntax: "10.88.0.2 . 80"
  bool operator==(const Element&) const = default;
  // The owned-set tag of this element (15 hex digits of sha512(map|key)).
  std::string Tag() const;
};

// The owner tag of (network, container): 15 hex digits, an nft ifname-sized string.
std::string OwnerTag(const std::string& network_name, const std::string& container_id);
// "all4" / "all6": the marker that the owner has mappings in that family.
std::string FamilyMarker(net::Family family);
// 32-bit hash of everything the network's chains depend on.
uint32_t ConfigHash(const Config& config);
// nft limits comments to 128 bytes.
inline constexpr size_t kMaxCommentBytes = 128;
// The element comment: the container ID (its first 128 bytes).
std::string ElementComment(const std::string& container_id);
// The network chains' comment: "network <name>" when that fits in 128 bytes (the layout every
// version wrote), else "network <name's first bytes>... sha512:<16 hex digits of the name>",
// 128 bytes. Only humans read it: chains are found by the hashed prefix n<hash>.
std::string NetworkComment(const std::string& network_name);

// Elements of `family` for the container: every mapping of that family. With a container
// address, values are filled in.
std::vector<Element> ContainerElements(const Config& config, net::Family family);

// An nft script with its line numbers remembered, so a failure can be traced to its command.
class Script {
 public:
  int Add(const std::string& line);  // returns the 1-based line number
  const std::string& text() const { return text_; }
  int lines() const { return lines_; }

 private:
  std::string text_;
  int lines_ = 0;
};

// Table, shared sets, the network's maps/sets/chains, its rules (chains flushed first) and its
// netcfg record.
void AppendSetup(const Config& config, Script& script);

// Line numbers of an ADD script's commands, for classifying failures.
struct AddLines {
  int netcfg = 0;             // the netcfg assertion (fast path only)
  std::vector<int> markers;   // create element owned {owner . allN}
  std::vector<int> elements;  // add element <map> {...}
  std::vector<int> hairpin;   // add element <hairpin set> {subnet}
};

// The hairpin sets are interval sets, which refuse an element overlapping another one: a
// container subnet inside one already there (10.1.0.0/24 after 10.1.0.0/16), or around one
// (a /16 after a /24, a network whose subnet grew). Prefixes either nest or are disjoint, so
// the set keeps only the outermost ones: a subnet is added only when no element covers it,
// and the elements it covers are deleted in the same transaction (the set matches the same
// sources as before, plus the new subnet).
struct HairpinChange {
  bool add = true;                  // add the container's subnet
  std::vector<std::string> remove;  // elements (nft syntax) the subnet covers, deleted first
};
// What adding `subnet` (masked) to a set holding `existing` takes.
HairpinChange PlanHairpin(const std::vector<net::IpPrefix>& existing, const net::IpPrefix& subnet);
// Per family; nullopt = add the subnet unconditionally (the fast path, which needs no read).
struct HairpinPlan {
  std::optional<HairpinChange> v4, v6;
  const std::optional<HairpinChange>& of(net::Family f) const {
    return f == net::Family::kV4 ? v4 : v6;
  }
};

// The container part of ADD. `assert_netcfg` (fast path) checks that the network's chains
// were written for this config; `create_markers` makes a re-ADD fail on the marker line.
// `hairpin` (from a listing of the hairpin sets) replaces the plain hairpin add.
AddLines AppendAdd(const Config& config, bool assert_netcfg, bool create_markers, Script& script,
                   const HairpinPlan& hairpin = {});

// Deletes elements and their ownership records; with `marker`, also the owner's family
// marker (first, so its line tells "this owner has nothing in that family"). Returns the
// marker's line (0 without one).
int AppendDelete(const std::string& owner, const std::vector<Element>& elements,
                 std::optional<net::Family> marker, Script& script);

// The rules of the network's hostports chain, for tests and CHECK.
std::vector<std::string> HostportsRules(const Config& config);

// conditionsV4/V6 in nft syntax are pasted into rules; refuse what could end a command.
Status CheckNftConditions(const std::vector<std::string>& tokens);

}  // namespace nodegate::portmap::nft
