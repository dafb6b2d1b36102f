#pragma once
// The nftables backend's layout, and every change the backend makes, built as data (a Plan:
// nf_tables objects, rules as expressions, set elements, each with its role) without touching
// the kernel; the backend only reads what it needs, sequences the plans and sends each as one
// netlink batch (lib/netfilter/nft_batch.h). Nothing goes through libnftables or nft.
//
// One table, `inet cni_hostport` (the reference's name; the reference's own tables are in the
// `ip` and `ip6` families, so both can live on one node). Per network (prefix n<hash>):
//
//   maps   n<h>_dnat_any_v4 : inet_proto . inet_service             -> ipv4_addr . inet_service
//          n<h>_dnat_ip_v4  : ipv4_addr . inet_proto . inet_service -> ipv4_addr . inet_service
//          (and _v6 twins)  one element per mapping, commented with the container ID
//   sets   n<h>_hairpin_any_v4_<L> : ipv4_addr . inet_proto . inet_service
//          n<h>_hairpin_ip_v4_<L>  : ipv4_addr . ipv4_addr . inet_proto . inet_service
//          per prefix length L of the network's masquerade sources, one element per mapping
//          and source: (source network . [host IP .] protocol . host port), commented with the
//          container ID, matched by `ip saddr & <mask L> . ...`. The sources (SourcesOf): the
//          container's subnet (hairpin, as in the iptables layout) and 127.0.0.0/8 (localhost,
//          IPv4) with snat; every address (0.0.0.0/0, ::/0) with masqAll. Each mapping's
//          elements go with it (hash sets: adding and deleting one costs the same at any size).
//          No rule looks a key up in a dnat map without taking its data: Linux before 6.5
//          refuses that (EINVAL), so "is mapped" is always a lookup in one of these sets.
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
#include <set>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "lib/base/result.h"
#include "lib/net/ip.h"
#include "lib/netfilter/nft_batch.h"
#include "lib/netfilter/query.h"
#include "plugins/portmap/config.h"

namespace nodegate::portmap::nft {

inline constexpr char kFamily[] = "inet";
inline constexpr char kTable[] = "cni_hostport";
inline constexpr char kOwnedSet[] = "owned";
inline constexpr char kNetcfgSet[] = "netcfg";
inline constexpr char kTableComment[] = "nodegate portmap: host port mappings";
// The reference's nftables backend (v1.6+): tables `ip cni_hostport` / `ip6 cni_hostport`,
// rules commented with the bare container ID in these chains.
inline constexpr const char* kReferenceChains[] = {"hostports", "hostip_hostports", "masquerading"};

struct NetworkNames {
  std::string prefix;  // "n" + 10 hex digits of sha512(network name)
  std::string DnatAny(net::Family f) const { return prefix + "_dnat_any" + Suffix(f); }
  std::string DnatIp(net::Family f) const { return prefix + "_dnat_ip" + Suffix(f); }
  // The hairpin sets of masquerade sources of prefix length `length`.
  std::string HairpinAny(net::Family f, int length) const {
    return prefix + "_hairpin_any" + Suffix(f) + "_" + std::to_string(length);
  }
  std::string HairpinIp(net::Family f, int length) const {
    return prefix + "_hairpin_ip" + Suffix(f) + "_" + std::to_string(length);
  }
  // The hairpin set of earlier versions: container subnets, the outermost of nested ones.
  std::string LegacyHairpin(net::Family f) const { return prefix + "_hairpin" + Suffix(f); }
  std::string Prerouting() const { return prefix + "_prerouting"; }
  std::string Output() const { return prefix + "_output"; }
  std::string Hostports() const { return prefix + "_hostports"; }
  std::string Masquerade() const { return prefix + "_masquerade"; }
  static std::string Suffix(net::Family f) { return f == net::Family::kV4 ? "_v4" : "_v6"; }
};
NetworkNames NamesFor(const std::string& network_name);

// One mapping of a container in one family, and its map element. `value` is empty when the
// container address is unknown (DEL without prevResult): deletion needs only the key.
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
// 32-bit hash of everything the network's chains depend on (the layout's version included).
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
// The same with the network's names at hand (NamesFor hashes the network's name).
std::vector<Element> ElementsOf(const NetworkNames& names, const Config& config,
                                net::Family family);

// The maps' keys and values in register layout (each field of a concatenation padded to 4
// bytes, addresses and ports in network byte order): [host IP .] protocol . host port, and
// container address . container port.
std::vector<uint8_t> DnatKey(const PortMapping& mapping);
std::vector<uint8_t> DnatValue(const net::IpAddress& container, int port);
// A mapping's hairpin element: the source's network address (a container subnet, 127.0.0.0,
// 0.0.0.0...), then the map key.
netfilter::ElementWrite HairpinElement(const net::IpPrefix& source, const PortMapping& mapping,
                                       const std::string& comment);
// The hairpin element's text, as nft lists it: "10.88.0.0 . tcp . 8080".
std::string HairpinText(const net::IpPrefix& source, const Element& element);

// The sources whose traffic to a mapping of `family` is marked for masquerade, each one
// hairpin element per mapping: without snat none; with masqAll every address (0.0.0.0/0,
// ::/0); else the container's subnet (when the config knows it) and, for IPv4, 127.0.0.0/8
// (the node's localhost through route_localnet).
std::vector<net::IpPrefix> SourcesOf(const Config& config, net::Family family);
// The sources of SourcesOf that do not depend on the container: 127.0.0.0/8, or every address.
std::vector<net::IpPrefix> FixedSourcesOf(const Config& config, net::Family family);
// Whether the container's subnet is a source (snat without masqAll): DEL needs it to name the
// hairpin elements.
bool HasSubnetSource(const Config& config);

// What a change of a plan is for: the backend classifies a refused batch by the roles of the
// changes the kernel refused, and names what a change concerns by its subject.
enum class Role {
  kOther,
  kNetcfg,   // ADD's assertion that the network's chains match this config
  kMarker,   // the owner's family marker in the owned set
  kElement,  // the map elements of mappings (subject: the key, when the change holds one)
  kHairpin,  // the hairpin elements of mappings
  kFeature,  // an object that needs a kernel feature (subject: the feature)
};

struct FlushChain {
  std::string chain;
  bool operator==(const FlushChain&) const = default;
};
struct DeleteSet {
  std::string name;
  bool operator==(const DeleteSet&) const = default;
};
// A rule of any table by handle (the reference's rules).
struct DeleteRule {
  uint8_t family = 0;
  std::string table, chain;
  uint64_t handle = 0;
  bool operator==(const DeleteRule&) const = default;
};
using Change = std::variant<netfilter::NftTable, netfilter::NftSet, DeleteSet, netfilter::NftChain,
                            FlushChain, netfilter::NftRule, DeleteRule, netfilter::ElementChange>;

struct Step {
  Change change;
  Role role = Role::kOther;
  std::string subject;
};

// One transaction, as data: the changes in order (a refusal's change index is a step index).
class Plan {
 public:
  size_t Add(Change change, Role role = Role::kOther, std::string subject = {});
  const std::vector<Step>& steps() const { return steps_; }
  bool empty() const { return steps_.empty(); }
  // A set ID unique in this plan (for sets the plan creates and refers to).
  uint32_t NewSetId() { return next_set_id_++; }
  // The batch the kernel gets: table `inet cni_hostport`.
  netfilter::NftBatch ToBatch() const;

 private:
  std::vector<Step> steps_;
  uint32_t next_set_id_ = 1;
};

// What a change of a plan is, for messages: "set n..._dnat_any_v4", "rule in chain ...".
std::string Describe(const Step& step);
// A refused plan as an error (code 100): a refused object that needs a kernel feature, refused
// as a kernel without it refuses (EOPNOTSUPP, EINVAL, ENOENT), names the feature; else the
// first refused change and the kernel's reason.
Error RefusalError(const Plan& plan, const std::vector<netfilter::BatchRefusal>& refusals,
                   const std::string& what);

// The prefix lengths of the masquerade sources whose hairpin sets and rules a network has.
struct HairpinLengths {
  std::set<int> v4, v6;
  std::set<int>& of(net::Family f) { return f == net::Family::kV4 ? v4 : v6; }
  const std::set<int>& of(net::Family f) const { return f == net::Family::kV4 ? v4 : v6; }
  bool operator==(const HairpinLengths&) const = default;
};
// The lengths of `config`'s sources (SourcesOf) in the families it has mappings in (none with
// snat off).
HairpinLengths HairpinLengthsOf(const Config& config);
// A hairpin set of the network by name: family, host IP or not, prefix length; nullopt for
// other sets and other networks'.
struct HairpinSetShape {
  net::Family family = net::Family::kV4;
  bool with_host_ip = false;
  int length = 0;
};
std::optional<HairpinSetShape> HairpinSetShapeOf(const std::string& network_prefix,
                                                 const std::string& set_name);

// A rule of the network's hostports chain, and the anonymous sets its conditions look up
// (index of the lookup in `exprs`, and the set).
struct HostportsRule {
  std::vector<netfilter::Expr> exprs;
  std::vector<std::pair<size_t, AnonymousSet>> sets;
};
// The rules of the network's hostports chain, with hairpin rules for `lengths`.
std::vector<HostportsRule> HostportsRules(const Config& config, const HairpinLengths& lengths);

// Kernel features the layout needs, named in errors when the kernel refuses them.
inline constexpr char kFeatureInetNat[] = "nat chains in inet tables (Linux 5.2 or later)";
inline constexpr char kFeatureFib[] = "the fib expression (nft_fib_inet)";

// Table, shared sets, the network's maps, hairpin sets (of `lengths`), chains, its rules (chains
// flushed first) and its netcfg record. The chains and rules that need a kernel feature carry
// Role::kFeature with it.
void AppendSetup(const Config& config, const HairpinLengths& lengths, Plan& plan);
// The network's netcfg records of other configs (hashes read from the netcfg set): deleted, so
// only the current config's record asserts.
void AppendDropOtherConfigs(const Config& config, const std::vector<uint32_t>& hashes, Plan& plan);
// The netcfg hashes of `prefix` among the netcfg set's elements.
std::vector<uint32_t> NetcfgHashes(const std::string& prefix,
                                   const std::vector<netfilter::SetElement>& elements);

// A map element as read back (TableReader), with the map it is in.
struct ListedElement {
  std::string set;
  net::Family family = net::Family::kV4;
  netfilter::SetElement element;
};
// The hairpin elements that keep masquerading mappings written by versions before the per-mapping
// hairpin sets: for each listed dnat element, the (outermost) legacy subnet its container
// address is in, as that mapping's hairpin element; their lengths are added to `lengths`.
std::vector<netfilter::ElementChange> MigrateLegacyHairpin(
    const std::string& network_name, const std::vector<ListedElement>& dnat,
    const std::vector<net::IpPrefix>& legacy_v4, const std::vector<net::IpPrefix>& legacy_v6,
    HairpinLengths& lengths);
// The prefixes of a legacy (rbtree interval) hairpin set's elements.
std::vector<net::IpPrefix> LegacyHairpinPrefixes(const std::vector<netfilter::SetElement>& elements,
                                                 net::Family family);
// The fixed sources (FixedSourcesOf) of the network's mappings made to follow `config`, at its
// setup: for each listed dnat element, the hairpin elements of the fixed sources `config` wants
// that `hairpin` lacks are added (with the dnat element's comment; their lengths go into
// `lengths`), and the listed hairpin elements of a fixed source it does not want are deleted
// (127.0.0.0 in a /8 set of IPv4, any element of a /0 set). This migrates networks written
// before the localhost and masqAll sources were hairpin elements (config hash v2), and
// follows a change of snat or masqAll. Container subnets are left as they are.
std::vector<netfilter::ElementChange> FollowFixedSources(const Config& config,
                                                         const std::vector<ListedElement>& dnat,
                                                         const std::vector<ListedElement>& hairpin,
                                                         HairpinLengths& lengths);

// The container part of ADD: with `assert_netcfg` (the fast path), that the network's chains
// were written for this config (Role::kNetcfg); with `create_markers`, that the owner has no
// mappings yet (Role::kMarker: a re-ADD is refused there). Then the ownership records, one
// change per map with all of its elements (Role::kElement; subject: the key when it holds one)
// and the hairpin elements (Role::kHairpin).
void AppendAdd(const Config& config, bool assert_netcfg, bool create_markers, Plan& plan);

// The usual DEL, which carries the ADD's mappings and prevResult: the owner's family markers
// in `families`, its records, map elements and hairpin elements, each deleted (the kernel
// refuses the whole DEL, ENOENT, when any is missing). False (nothing added) when the config
// cannot name them: no mapping in one of the families, or no container subnet where hairpin
// elements were written.
bool AppendDelete(const Config& config, const std::vector<net::Family>& families, Plan& plan);

// Deletes elements whose existence is known from a listing, with their ownership records
// (`records`: the dnat elements' tags) and the owner's `markers`. Records and markers are
// added before being deleted, so the plan succeeds whether or not they exist.
void AppendForget(const std::string& owner, const std::vector<ListedElement>& elements,
                  const std::vector<std::string>& record_tags,
                  const std::vector<net::Family>& markers, Plan& plan);
// The tags of `owner`'s ownership records among the owned set's elements (its family markers
// left out).
std::vector<std::string> RecordTagsOf(const std::string& owner,
                                      const std::vector<netfilter::SetElement>& owned);
// The family and shape of one of our dnat maps by name (n<h>_dnat_any_v4 ...); nullopt for
// other sets.
struct DnatMapShape {
  net::Family family = net::Family::kV4;
  bool with_host_ip = false;
};
std::optional<DnatMapShape> DnatMapShapeOf(const std::string& set_name);
// The container address of a dnat element's value.
std::optional<net::IpAddress> DnatValueAddress(const std::vector<uint8_t>& data,
                                               net::Family family);

// CHECK: every object ADD made, to be read back. A key looked up in `set` must be there, and
// `data` (maps) must equal.
struct Expected {
  std::string set;
  std::vector<uint8_t> key;
  std::vector<uint8_t> data;  // maps
  std::string what;           // "element tcp . 8080 in map n..._dnat_any_v4"
};
std::vector<Expected> ExpectedObjects(const Config& config);

// The rule count of each of the network's chains after ADD (whose hairpin sets have
// `lengths`), for CHECK.
struct ChainRuleCount {
  std::string chain;
  size_t rules = 0;
  bool operator==(const ChainRuleCount&) const = default;
};
std::vector<ChainRuleCount> NetworkChainRuleCounts(const Config& config,
                                                   const HairpinLengths& lengths);

// The families of the reference's tables.
inline constexpr uint8_t kReferenceFamilies[] = {2 /*NFPROTO_IPV4*/, 10 /*NFPROTO_IPV6*/};
// Deletes, by handle, the rules the reference left for `container_id` in its chains of
// `family cni_hostport` (comment = the bare ID). Returns how many.
size_t AppendReferenceLeftovers(uint8_t family, const std::vector<netfilter::RuleRecord>& rules,
                                const std::string& container_id, Plan& plan);

}  // namespace nodegate::portmap::nft
