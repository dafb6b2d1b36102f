#pragma once
// The nftables backend's layout, and every nft command the backend runs (listings included),
// built as data (Script: commands with their roles) without touching the kernel; the backend
// only sequences and runs them.
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

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lib/base/result.h"
#include "lib/net/ip.h"
#include "lib/netfilter/element_batch.h"
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

// What a command of a script is for: the backend classifies a failed transaction by the role
// of the failing lines, and names what it concerns by the command's subject.
enum class Role {
  kOther,
  kNetcfg,   // ADD's assertion that the network's chains match this config
  kMarker,   // the owner's family marker in the owned set
  kElement,  // a map element of a mapping (subject: its key)
  kHairpin,  // the container subnet in a hairpin set
};

// One nft command (one line of a script), as data.
struct Command {
  std::string text;
  Role role = Role::kOther;
  std::string subject;  // kElement: the element's key; CHECK: the object it proves present
  bool operator==(const Command&) const = default;
};

// One nft transaction: the commands in order; line N of text() is commands()[N - 1], so a
// failure nft reports by line is traced back to its command.
class Script {
 public:
  void Add(std::string text, Role role = Role::kOther, std::string subject = {});
  const std::vector<Command>& commands() const { return commands_; }
  int lines() const { return static_cast<int>(commands_.size()); }
  std::string text() const;
  // 1-based lines of the commands with `role`.
  std::vector<int> LinesOf(Role role) const;
  // The command of a 1-based line; nullptr outside the script.
  const Command* Line(int line) const;

 private:
  std::vector<Command> commands_;
};

// Listings (the backend runs them with JSON output and reads the result).
std::string ListMapCommand(const std::string& map);
std::string ListSetCommand(const std::string& set);
std::string ListChainCommand(const std::string& chain);

// Table, shared sets, the network's maps/sets/chains, its rules (chains flushed first) and its
// netcfg record.
void AppendSetup(const Config& config, Script& script);

// The network's netcfg records of other configs, from a listing of the netcfg set as
// (network prefix, hash) text pairs: deleted, so only the current config's record asserts.
void AppendDropOtherConfigs(const Config& config,
                            const std::vector<std::pair<std::string, std::string>>& records,
                            Script& script);

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
// were written for this config (Role::kNetcfg); `create_markers` makes a re-ADD fail on a
// Role::kMarker line. `hairpin` (from a listing of the hairpin sets) replaces the plain
// hairpin add. Each map gets one Role::kElement line with all of its elements (maps in
// ContainerElements order, v4 first); the line's subject is the key when it holds one.
void AppendAdd(const Config& config, bool assert_netcfg, bool create_markers, Script& script,
               const HairpinPlan& hairpin = {});

// The maps' keys and values in register layout (each field of a concatenation padded to 4
// bytes, addresses and ports in network byte order): [host IP .] protocol . host port, and
// container address . container port.
std::vector<uint8_t> DnatKey(const PortMapping& mapping);
std::vector<uint8_t> DnatValue(const net::IpAddress& container, int port);

// AppendAdd(config, true, true) without a hairpin plan, as element changes written straight
// over netlink (netfilter::WriteElements): the same transaction, with no libnftables to load
// and no cache to fill. Each change has the role (and, for a map with one element, the
// subject) the script's command for it has, so the kernel's refusals are classified the same
// way: netcfg missing or of another config (ENOENT), a re-ADD's marker or a taken key
// (EEXIST), an overlapping hairpin range. nullopt when a value has no encoding here (a hairpin
// subnet that ends at the family's last address): the script path then runs.
struct ElementPlan {
  std::vector<netfilter::ElementChange> changes;
  std::vector<Role> roles;            // per change
  std::vector<std::string> subjects;  // per change
  void Add(netfilter::ElementChange change, Role role = Role::kOther, std::string subject = {}) {
    changes.push_back(std::move(change));
    roles.push_back(role);
    subjects.push_back(std::move(subject));
  }
};
std::optional<ElementPlan> AddElementPlan(const Config& config);
// AppendDelete of the owner's family markers in `families` and of the config's elements in
// those families, as element changes: the usual DEL, which carries the ADD's mappings. The
// kernel refuses it (ENOENT) when any of them is missing. nullopt when the config names no
// mapping in one of the families (DEL without portMappings: the listing path).
std::optional<ElementPlan> DeleteElementPlan(const Config& config,
                                             const std::vector<net::Family>& families);

// Deletes elements and their ownership records; with `marker`, also the owner's family
// marker (first, as Role::kMarker, so its line tells "this owner has nothing in that family").
void AppendDelete(const std::string& owner, const std::vector<Element>& elements,
                  std::optional<net::Family> marker, Script& script);

// Deletes elements whose existence is known from a listing, with their ownership records and
// the owner's `markers`. Records are added before being deleted so the script succeeds
// whether or not they exist.
void AppendForget(const std::string& owner, const std::vector<Element>& elements,
                  const std::vector<net::Family>& markers, Script& script);

// Deletes the listed ownership records of `owner` (the owned set as (owner, tag) text pairs;
// other owners' are skipped) and the listed `elements`.
void AppendDeleteListed(const std::string& owner,
                        const std::vector<std::pair<std::string, std::string>>& records,
                        const std::vector<Element>& elements, Script& script);

// Deletes `source` (masked) from the network's hairpin set of its family.
void AppendDeleteHairpin(const std::string& network_name, const net::IpPrefix& source,
                         Script& script);

// CHECK's dry runs. `exists` deletes everything ADD created (each command's subject names the
// object, for the message when it is missing); `values` adds each map element again with its
// value, which succeeds only when the element maps to this container.
struct CheckScripts {
  Script exists;
  Script values;
};
CheckScripts BuildCheck(const Config& config);

// The rule count of each of the network's chains after ADD, for CHECK.
struct ChainRuleCount {
  std::string chain;
  size_t rules = 0;
  bool operator==(const ChainRuleCount&) const = default;
};
std::vector<ChainRuleCount> NetworkChainRuleCounts(const Config& config);

// The rules of the network's hostports chain, for tests and CHECK.
std::vector<std::string> HostportsRules(const Config& config);

// A rule of the reference nftables backend's tables, as listed.
struct ListedRule {
  std::string chain;
  std::string comment;
  uint64_t handle = 0;
};
// The families of the reference's tables, and the table in one of them ("ip cni_hostport").
inline constexpr const char* kReferenceFamilies[] = {"ip", "ip6"};
std::string ReferenceTable(const std::string& family);
std::string ListReferenceTableCommand(const std::string& family);
// Deletes, by handle, the rules the reference left for `container_id` in its chains of
// `family` (comment = the bare ID).
Script ReferenceLeftovers(const std::string& family, const std::vector<ListedRule>& rules,
                          const std::string& container_id);

// conditionsV4/V6 in nft syntax are pasted into rules: refuses what could end a command and
// joins the tokens.
Result<NftConditions> ParseNftConditions(const std::vector<std::string>& tokens);

}  // namespace nodegate::portmap::nft
