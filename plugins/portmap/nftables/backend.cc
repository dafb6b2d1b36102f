// The nftables backend: every change is a plan from nftables/rules.h sent as one netlink batch;
// this file reads what a plan needs (over netlink, one set or chain at a time), sequences the
// plans and tells refusals apart by the roles of the refused changes. No libnftables, no nft.
// The fast paths (the usual ADD and DEL) read nothing but the owner's markers; reading is for
// the rarer paths: a network's first ADD or new config, re-ADD, a DEL whose mappings differ
// from the ADD's, conflicts' messages, CHECK, GC and the reference's leftovers. Reads and
// batches go through netfilter::Ruleset (lib/netfilter/ruleset.h): the kernel's, or in the
// unit tests (backend_test.cc) an in-memory one.

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

#include "lib/cni/logging.h"
#include "lib/netfilter/nft_batch.h"
#include "lib/netfilter/query.h"
#include "lib/netfilter/ruleset.h"
#include "plugins/portmap/nftables/rules.h"
#include "plugins/portmap/port_mapper.h"

namespace nodegate::portmap {
namespace {

using netfilter::BatchRefusal;
using netfilter::Ruleset;
using netfilter::TableReads;
using nft::ListedElement;
using nft::Plan;
using nft::Role;

constexpr int kStaleRetries = 20;

Result<std::unique_ptr<TableReads>> OpenOurTable(Ruleset& ruleset) {
  return ruleset.OpenTable(netfilter::kNfprotoInet, nft::kTable);
}

// Sends `plan`; the kernel's refusals (nothing applied) or an error.
Result<std::vector<BatchRefusal>> Send(Ruleset& ruleset, const Plan& plan,
                                       std::optional<uint32_t> generation = {}) {
  return ruleset.Commit(plan.ToBatch(), generation);
}

// What a refused ADD says, from the roles of what the kernel refused: nothing of it was
// applied.
struct AddRefusal {
  bool readd = false;       // the owner's family marker exists (EEXIST): replace
  bool need_setup = false;  // something is missing (ENOENT): the network's chains, or of
                            // another config
  bool conflict = false;    // a map element's key is held by another container
  bool hairpin = false;     // a hairpin element overlaps one left for one of the keys
  std::string taken;        // the taken key, when a refused map change held only it
  bool Understood(const std::vector<BatchRefusal>& refusals) const {
    return !refusals.empty() && (readd || need_setup || conflict || hairpin);
  }
};

AddRefusal Classify(const Plan& plan, const std::vector<BatchRefusal>& refusals) {
  AddRefusal r;
  for (const auto& refusal : refusals) {
    const nft::Step& step = plan.steps()[refusal.change];
    const bool exists = refusal.error == EEXIST || refusal.error == EBUSY;
    r.readd |= step.role == Role::kMarker && refusal.error == EEXIST;
    r.need_setup |= refusal.error == ENOENT && step.role != Role::kFeature;
    if (step.role == Role::kElement && exists) {
      if (!r.conflict) r.taken = step.subject;
      r.conflict = true;
    }
    r.hairpin |= step.role == Role::kHairpin && exists;
  }
  return r;
}

struct NetworkElements {
  std::vector<ListedElement> dnat;     // every element of the network's dnat maps
  std::vector<ListedElement> hairpin;  // every element of its hairpin sets
  nft::HairpinLengths lengths;         // the prefix lengths its hairpin sets are for
  bool legacy[2] = {false, false};     // it has the legacy hairpin set of IPv4, IPv6
};

// The network's hairpin sets (names only).
Result<std::vector<std::pair<std::string, nft::HairpinSetShape>>> HairpinSets(
    TableReads& reader, const std::string& network, bool* legacy = nullptr) {
  const nft::NetworkNames names = nft::NamesFor(network);
  NG_ASSIGN_OR_RETURN(const auto sets, reader.SetNames());
  std::vector<std::pair<std::string, nft::HairpinSetShape>> out;
  for (const auto& set : sets) {
    if (auto shape = nft::HairpinSetShapeOf(names.prefix, set)) out.emplace_back(set, *shape);
    if (legacy == nullptr) continue;
    if (set == names.LegacyHairpin(net::Family::kV4)) legacy[0] = true;
    if (set == names.LegacyHairpin(net::Family::kV6)) legacy[1] = true;
  }
  return out;
}

// The elements of the network's maps and hairpin sets (missing ones are empty).
Result<NetworkElements> ReadNetwork(TableReads& reader, const std::string& network) {
  const nft::NetworkNames names = nft::NamesFor(network);
  NetworkElements out;
  for (const auto f : {net::Family::kV4, net::Family::kV6}) {
    for (const auto& map : {names.DnatAny(f), names.DnatIp(f)}) {
      NG_ASSIGN_OR_RETURN(auto elements, reader.Elements(map));
      for (auto& e : elements) out.dnat.push_back({map, f, std::move(e)});
    }
  }
  NG_ASSIGN_OR_RETURN(const auto hairpin, HairpinSets(reader, network, out.legacy));
  for (const auto& [set, shape] : hairpin) {
    out.lengths.of(shape.family).insert(shape.length);
    NG_ASSIGN_OR_RETURN(auto elements, reader.Elements(set));
    for (auto& e : elements) out.hairpin.push_back({set, shape.family, std::move(e)});
  }
  return out;
}

// The first of the ADD's keys that another container holds (one get-element each); empty when
// none is (any more).
std::string FirstTakenKey(Ruleset& ruleset, const Config& config) {
  auto reader = OpenOurTable(ruleset);
  if (!reader.ok()) return "";
  const std::string comment = nft::ElementComment(config.container_id);
  for (const auto f : {net::Family::kV4, net::Family::kV6}) {
    if (!config.container(f)) continue;
    const auto mappings = config.MappingsFor(f);
    const auto elements = nft::ContainerElements(config, f);
    for (size_t i = 0; i < mappings.size(); ++i) {
      const auto found = (*reader)->Element(elements[i].map, nft::DnatKey(mappings[i]));
      if (found.ok() && *found && (*found)->comment != comment) return elements[i].key;
    }
  }
  return "";
}

// The ADD failed because a host port of it maps to another container: code 102 naming it.
Error Conflict(Ruleset& ruleset, const Config& config, std::string taken) {
  if (taken.empty()) taken = FirstTakenKey(ruleset, config);
  return Error(kErrAddressInUse, "nftables: host port " +
                                     (taken.empty() ? std::string("of this pod") : taken) +
                                     " is already mapped to another container");
}

// The key part of a hairpin element (after the container subnet), to compare with map keys.
std::vector<uint8_t> HairpinKeyTail(const ListedElement& e) {
  const size_t address = e.family == net::Family::kV4 ? 4 : 16;
  if (e.element.key.size() <= address) return {};
  return std::vector<uint8_t>(e.element.key.begin() + static_cast<std::ptrdiff_t>(address),
                              e.element.key.end());
}

// The network's elements an ADD replaces: the owner's own (by comment), and hairpin elements
// of the ADD's keys left by anyone (the map keys are the ADD's now).
std::vector<ListedElement> Replaced(const Config& config, const NetworkElements& network,
                                    bool owners_too) {
  const std::string comment = nft::ElementComment(config.container_id);
  std::vector<std::vector<uint8_t>> keys;
  for (const auto f : {net::Family::kV4, net::Family::kV6}) {
    if (!config.container(f)) continue;
    for (const auto& m : config.MappingsFor(f)) keys.push_back(nft::DnatKey(m));
  }
  std::vector<ListedElement> out;
  if (owners_too) {
    for (const auto& e : network.dnat) {
      if (e.element.comment == comment) out.push_back(e);
    }
  }
  for (const auto& e : network.hairpin) {
    const auto tail = HairpinKeyTail(e);
    const bool ours = owners_too && e.element.comment == comment;
    if (ours || std::find(keys.begin(), keys.end(), tail) != keys.end()) out.push_back(e);
  }
  return out;
}

// The network's setup, with the records of its earlier configs dropped, a legacy hairpin set
// (versions before per-mapping hairpin elements) replaced (its subnets become hairpin elements
// of the mappings already there, except the re-ADDing owner's own), and the fixed sources of
// those mappings made to follow the config. `replaced`: what the ADD deletes anyway.
Status AppendSetupFromReads(TableReads& reader, const Config& config,
                            const NetworkElements& network,
                            const std::vector<ListedElement>& replaced, Plan& plan) {
  const nft::NetworkNames names = nft::NamesFor(config.network_name);
  cni::LogInfo("nftables: writing chains of network {}", config.network_name);
  // Hairpin sets and rules for every prefix length the network has, this container's and the
  // legacy subnets' (migrated below).
  nft::HairpinLengths lengths = network.lengths;
  const nft::HairpinLengths own = nft::HairpinLengthsOf(config);
  for (const auto f : {net::Family::kV4, net::Family::kV6}) {
    lengths.of(f).insert(own.of(f).begin(), own.of(f).end());
  }
  std::vector<net::IpPrefix> legacy[2];
  for (const auto f : {net::Family::kV4, net::Family::kV6}) {
    const int i = f == net::Family::kV4 ? 0 : 1;
    if (!network.legacy[i]) continue;
    NG_ASSIGN_OR_RETURN(const auto elements, reader.Elements(names.LegacyHairpin(f)));
    legacy[i] = nft::LegacyHairpinPrefixes(elements, f);
  }
  const std::string comment = nft::ElementComment(config.container_id);
  std::vector<ListedElement> others;
  for (const auto& e : network.dnat) {
    if (e.element.comment != comment) others.push_back(e);
  }
  const auto migrated =
      nft::MigrateLegacyHairpin(config.network_name, others, legacy[0], legacy[1], lengths);
  std::vector<ListedElement> kept_hairpin;
  for (const auto& e : network.hairpin) {
    const bool goes = std::any_of(replaced.begin(), replaced.end(), [&](const ListedElement& r) {
      return r.set == e.set && r.element.key == e.element.key;
    });
    if (!goes) kept_hairpin.push_back(e);
  }
  const auto followed = nft::FollowFixedSources(config, others, kept_hairpin, lengths);
  nft::AppendSetup(config, lengths, plan);
  NG_ASSIGN_OR_RETURN(const auto netcfg, reader.Elements(nft::kNetcfgSet));
  nft::AppendDropOtherConfigs(config, nft::NetcfgHashes(names.prefix, netcfg), plan);
  // The legacy sets go once the chains no longer refer to them (flushed above).
  for (const auto f : {net::Family::kV4, net::Family::kV6}) {
    if (network.legacy[f == net::Family::kV4 ? 0 : 1]) {
      plan.Add(nft::DeleteSet{names.LegacyHairpin(f)});
    }
  }
  for (const auto& change : migrated) plan.Add(change, Role::kHairpin);
  for (const auto& change : followed) plan.Add(change, Role::kHairpin);
  return OkStatus();
}

// ADD's slow path: the network's chains are missing or of another config (`need_setup`), the
// owner has mappings already (`readd`, which replaces them), or hairpin elements of the ADD's
// keys were left behind (`hairpin`).
Status ForwardSlow(Ruleset& ruleset, const Config& config, const AddRefusal& why) {
  for (int attempt = 1;; ++attempt) {
    NG_ASSIGN_OR_RETURN(const auto opened, OpenOurTable(ruleset));
    TableReads& reader = *opened;
    // The plan rests on what is read next (the network's hairpin lengths, its records, the
    // owner's elements): it is sent with the generation read first, and refused whole when
    // another writer committed in between.
    NG_ASSIGN_OR_RETURN(const uint32_t generation, reader.Generation());
    NG_ASSIGN_OR_RETURN(const NetworkElements network, ReadNetwork(reader, config.network_name));
    Plan plan;
    // Re-ADD replaces: everything this owner has goes (its records read whole: an element may
    // have gone behind our back), then the new mappings are added.
    const std::string owner = nft::OwnerTag(config.network_name, config.container_id);
    const std::vector<ListedElement> old = Replaced(config, network, why.readd);
    if (why.need_setup) {
      NG_RETURN_IF_ERROR(AppendSetupFromReads(reader, config, network, old, plan));
    }
    std::vector<std::string> tags;
    if (why.readd) {
      NG_ASSIGN_OR_RETURN(const auto records, reader.Elements(nft::kOwnedSet));
      tags = nft::RecordTagsOf(owner, records);
    }
    nft::AppendForget(owner, old, tags, {}, plan);
    nft::AppendAdd(config, false, !why.readd, plan);
    auto sent = Send(ruleset, plan, generation);
    if (!sent.ok()) {
      if (netfilter::IsStaleGeneration(sent.error()) && attempt < kStaleRetries) continue;
      return sent.error();
    }
    const std::vector<BatchRefusal>& refusals = *sent;
    if (refusals.empty()) return OkStatus();
    const AddRefusal again = Classify(plan, refusals);
    if (again.conflict) return Conflict(ruleset, config, again.taken);
    // Another writer changed the network between the reads and the batch (a concurrent ADD
    // of the same network wrote its chains, an element went): read again.
    if ((again.need_setup || again.readd || again.hairpin) && attempt < kStaleRetries) {
      cni::LogDebug("nftables: slow ADD refused ({}); reading again",
                    nft::RefusalError(plan, refusals, "add").msg);
      continue;
    }
    return nft::RefusalError(plan, refusals, "add mappings");
  }
}

// CHECK 1 and 2: every object ADD made is there (one get-element each), and each map element
// maps to this container.
Status CheckElements(TableReads& reader, const Config& config) {
  for (const auto& expected : nft::ExpectedObjects(config)) {
    NG_ASSIGN_OR_RETURN(const auto found, reader.Element(expected.set, expected.key));
    if (!found) return Error(kErrCheckFailed, "nftables: missing " + expected.what);
    if (!expected.data.empty() && found->data != expected.data) {
      return Error(kErrCheckFailed, "nftables: a host port maps elsewhere: " + expected.what);
    }
  }
  return OkStatus();
}

// CHECK 3: the network's chains hold their rules.
Status CheckChains(TableReads& reader, const Config& config) {
  // Hairpin rules for each of the network's hairpin sets' prefix lengths.
  nft::HairpinLengths lengths;
  NG_ASSIGN_OR_RETURN(const auto hairpin, HairpinSets(reader, config.network_name));
  for (const auto& [set, shape] : hairpin) lengths.of(shape.family).insert(shape.length);
  for (const auto& [chain, expected] : nft::NetworkChainRuleCounts(config, lengths)) {
    NG_ASSIGN_OR_RETURN(const auto comment, reader.ChainComment(chain));
    if (!comment) return Error(kErrCheckFailed, "nftables: chain " + chain + " not found");
    NG_ASSIGN_OR_RETURN(const auto rules, reader.Rules(chain));
    if (rules.size() != expected) {
      return Error(kErrCheckFailed, "nftables: chain " + chain + " has " +
                                        std::to_string(rules.size()) + " rules, expected " +
                                        std::to_string(expected));
    }
  }
  return OkStatus();
}

// The families `owner` has mappings in: its markers, read without a transaction (a refused
// transaction would cost a grace period under the commit mutex).
Result<std::vector<net::Family>> OwnedFamilies(TableReads& reader, const std::string& owner) {
  std::vector<net::Family> out;
  for (const auto f : {net::Family::kV4, net::Family::kV6}) {
    NG_ASSIGN_OR_RETURN(
        const auto marker,
        reader.Element(nft::kOwnedSet, netfilter::IfnameKey({owner, nft::FamilyMarker(f)})));
    if (marker) out.push_back(f);
  }
  return out;
}

// The elements of a legacy hairpin set (versions before per-mapping hairpin elements) that no
// remaining container's address is in, as deletions of their ranges' start and end elements.
void AppendUnneededLegacyHairpin(const std::string& set, net::Family family,
                                 const std::vector<netfilter::SetElement>& elements,
                                 const std::vector<net::IpAddress>& kept, Plan& plan) {
  netfilter::ElementChange drop{netfilter::ElementVerb::kDelete, set, {}};
  for (const auto& prefix : nft::LegacyHairpinPrefixes(elements, family)) {
    const bool needed = std::any_of(kept.begin(), kept.end(), [&](const net::IpAddress& ip) {
      return ip.family() == family && prefix.Contains(ip);
    });
    if (needed) continue;
    cni::LogInfo("nftables: removing hairpin source {} of {}", prefix.Masked().ToString(), set);
    const net::IpAddress network = prefix.Network();
    const size_t len = network.byte_length();
    drop.elements.push_back(
        {.key = std::vector<uint8_t>(network.bytes().begin(), network.bytes().begin() + len)});
    const net::IpAddress after = prefix.LastAddress().Next();
    if (!after.IsZero()) {
      drop.elements.push_back(
          {.key = std::vector<uint8_t>(after.bytes().begin(), after.bytes().begin() + len),
           .interval_end = true});
    }
  }
  if (!drop.elements.empty()) plan.Add(std::move(drop));
}

// Addresses of the containers behind `elements` (dnat elements).
std::vector<net::IpAddress> Addresses(const std::vector<ListedElement>& elements) {
  std::vector<net::IpAddress> out;
  for (const auto& e : elements) {
    if (auto ip = nft::DnatValueAddress(e.element.data, e.family)) out.push_back(*ip);
  }
  return out;
}

// Legacy hairpin sources of the network nobody in `kept` needs any more.
Status AppendLegacyCleanup(TableReads& reader, const std::string& network,
                           const std::vector<net::IpAddress>& kept, Plan& plan) {
  const nft::NetworkNames names = nft::NamesFor(network);
  for (const auto f : {net::Family::kV4, net::Family::kV6}) {
    NG_ASSIGN_OR_RETURN(const auto elements, reader.Elements(names.LegacyHairpin(f)));
    AppendUnneededLegacyHairpin(names.LegacyHairpin(f), f, elements, kept, plan);
  }
  return OkStatus();
}

// DEL by listing: the owner's elements in the network's maps and hairpin sets (by comment),
// their records and its markers in `families`.
Status DeleteByListing(Ruleset& ruleset, const Config& config, const std::string& owner,
                       const std::vector<net::Family>& families) {
  cni::LogInfo("nftables: DEL of {} reads the network's elements", config.container_id);
  for (int attempt = 1;; ++attempt) {
    NG_ASSIGN_OR_RETURN(const auto opened, OpenOurTable(ruleset));
    TableReads& reader = *opened;
    NG_ASSIGN_OR_RETURN(const NetworkElements network, ReadNetwork(reader, config.network_name));
    const std::string comment = nft::ElementComment(config.container_id);
    std::vector<ListedElement> owned, others;
    // The owner's records, all of them (an element may have gone behind our back).
    NG_ASSIGN_OR_RETURN(const auto records, reader.Elements(nft::kOwnedSet));
    const std::vector<std::string> tags = nft::RecordTagsOf(owner, records);
    for (const auto& e : network.dnat) {
      (e.element.comment == comment ? owned : others).push_back(e);
    }
    for (const auto& e : network.hairpin) {
      if (e.element.comment == comment) owned.push_back(e);
    }
    Plan plan;
    nft::AppendForget(owner, owned, tags, families, plan);
    NG_RETURN_IF_ERROR(AppendLegacyCleanup(reader, config.network_name, Addresses(others), plan));
    NG_ASSIGN_OR_RETURN(const auto refusals, Send(ruleset, plan));
    if (refusals.empty()) return OkStatus();
    // An element went meanwhile (a concurrent DEL or GC): read again.
    if (attempt >= kStaleRetries) return nft::RefusalError(plan, refusals, "delete mappings");
  }
}

// The reference nftables backend's rules for this container ID (tables ip/ip6 cni_hostport,
// comment = the bare ID), deleted by handle in one transaction.
Status RemoveReferenceLeftovers(Ruleset& ruleset, const std::string& container_id) {
  for (int attempt = 1;; ++attempt) {
    Plan plan;
    size_t count = 0;
    for (const uint8_t family : nft::kReferenceFamilies) {
      NG_ASSIGN_OR_RETURN(const auto reader, ruleset.OpenTable(family, nft::kTable));
      NG_ASSIGN_OR_RETURN(const auto rules, reader->Rules(""));
      count += nft::AppendReferenceLeftovers(family, rules, container_id, plan);
    }
    if (count == 0) return OkStatus();
    cni::LogInfo("nftables: removing {} rules of the reference plugin for {}", count, container_id);
    NG_ASSIGN_OR_RETURN(const auto refusals, Send(ruleset, plan));
    if (refusals.empty()) return OkStatus();
    // A rule went meanwhile (ENOENT): read again.
    if (attempt >= kStaleRetries)
      return nft::RefusalError(plan, refusals, "remove reference rules");
  }
}

class NftablesMapper : public PortMapper {
 public:
  explicit NftablesMapper(Ruleset& ruleset) : ruleset_(ruleset) {}

  Status Forward(const Config& config) override {
    // Most ADDs: the network's chains are there and the container is new. A refusal applied
    // nothing and says by its roles which slower path applies.
    Plan fast;
    nft::AppendAdd(config, true, true, fast);
    NG_ASSIGN_OR_RETURN(const auto refusals, Send(ruleset_, fast));
    if (refusals.empty()) return OkStatus();
    const AddRefusal refused = Classify(fast, refusals);
    cni::LogDebug("nftables: element batch refused ({})",
                  nft::RefusalError(fast, refusals, "add").msg);
    if (!refused.Understood(refusals)) return nft::RefusalError(fast, refusals, "add mappings");
    if (refused.conflict && !refused.readd) return Conflict(ruleset_, config, refused.taken);
    return ForwardSlow(ruleset_, config, refused);
  }

  Status Check(const Config& config) override {
    NG_ASSIGN_OR_RETURN(const auto reader, OpenOurTable(ruleset_));
    NG_RETURN_IF_ERROR(CheckElements(*reader, config));
    return CheckChains(*reader, config);
  }

  Status Unforward(const Config& config) override {
    const std::string owner = nft::OwnerTag(config.network_name, config.container_id);
    NG_ASSIGN_OR_RETURN(const auto reader, OpenOurTable(ruleset_));
    NG_ASSIGN_OR_RETURN(const auto families, OwnedFamilies(*reader, owner));
    // The usual DEL names the ADD's mappings: their elements go in one batch, as ADD's do. A
    // refusal (some of them missing) applied nothing; the listing path follows.
    bool deleted = families.empty();
    if (!deleted) {
      Plan exact;
      if (nft::AppendDelete(config, families, exact)) {
        NG_ASSIGN_OR_RETURN(const auto refusals, Send(ruleset_, exact));
        deleted = refusals.empty();
      }
    }
    // The reference's tables (`ip`/`ip6 cni_hostport`) are on few nodes: one GETTABLE each.
    NG_ASSIGN_OR_RETURN(const auto reference,
                        ruleset_.HasTables({{netfilter::kNfprotoIpv4, nft::kTable},
                                            {netfilter::kNfprotoIpv6, nft::kTable}}));
    if (!deleted) NG_RETURN_IF_ERROR(DeleteByListing(ruleset_, config, owner, families));
    if (reference[0] || reference[1]) {
      return RemoveReferenceLeftovers(ruleset_, config.container_id);
    }
    return OkStatus();
  }

  Status Gc(const std::string& network_name, const std::set<std::string>& valid) override {
    std::set<std::string> kept_comments;
    for (const auto& id : valid) kept_comments.insert(nft::ElementComment(id));
    for (int attempt = 1;; ++attempt) {
      NG_ASSIGN_OR_RETURN(const auto opened, OpenOurTable(ruleset_));
      TableReads& reader = *opened;
      NG_ASSIGN_OR_RETURN(const NetworkElements network, ReadNetwork(reader, network_name));
      std::map<std::string, std::vector<ListedElement>> stale;  // comment -> elements
      std::vector<ListedElement> kept;
      for (const auto& e : network.dnat) {
        (kept_comments.contains(e.element.comment) ? kept : stale[e.element.comment]).push_back(e);
      }
      for (const auto& e : network.hairpin) {
        if (!kept_comments.contains(e.element.comment)) stale[e.element.comment].push_back(e);
      }
      std::vector<netfilter::SetElement> records;
      if (!stale.empty()) {
        NG_ASSIGN_OR_RETURN(records, reader.Elements(nft::kOwnedSet));
      }
      Plan plan;
      for (const auto& [comment, elements] : stale) {
        cni::LogInfo("gc: removing nftables mappings of container {}", comment);
        const std::string owner = nft::OwnerTag(network_name, comment);
        nft::AppendForget(owner, elements, nft::RecordTagsOf(owner, records),
                          {net::Family::kV4, net::Family::kV6}, plan);
      }
      NG_RETURN_IF_ERROR(AppendLegacyCleanup(reader, network_name, Addresses(kept), plan));
      if (plan.empty()) return OkStatus();
      NG_ASSIGN_OR_RETURN(const auto refusals, Send(ruleset_, plan));
      if (refusals.empty()) return OkStatus();
      if (attempt >= kStaleRetries) return nft::RefusalError(plan, refusals, "gc");
    }
  }

  // nf_tables answers. A read, not a dry-run transaction: STATUS runs often, and an aborted
  // transaction holds the commit mutex for a grace period.
  Status Usable() override {
    if (Status probe = ruleset_.Probe(); !probe.ok()) {
      return Error(kErrPluginNotAvailable, "nftables is not usable: " + probe.error().msg);
    }
    return OkStatus();
  }

 private:
  Ruleset& ruleset_;
};

}  // namespace

std::unique_ptr<PortMapper> MakeNftablesMapper() {
  return std::make_unique<NftablesMapper>(netfilter::RealRuleset());
}

std::unique_ptr<PortMapper> MakeNftablesMapper(netfilter::Ruleset& ruleset) {
  return std::make_unique<NftablesMapper>(ruleset);
}

}  // namespace nodegate::portmap
