// The nftables backend: one libnftables transaction per change. Every command comes from
// nftables/rules.h as data (a Script of commands with their roles); this file reads the sets
// and maps it needs, sequences the scripts and tells failures apart.
// The fast paths add or delete a fixed number of map elements and never list anything (in
// nft 1.0.x a listing fetches every element of the table); listing is used only on the rare
// paths: re-ADD, DEL whose mappings differ from the ADD's, CHECK, GC and the reference's
// leftovers.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>

#include "lib/netfilter/element_batch.h"
#include "lib/netfilter/nft.h"
#include "lib/netfilter/query.h"
#include "plugins/portmap/nftables/rules.h"
#include "plugins/portmap/port_mapper.h"

namespace nodegate::portmap {
namespace {

using netfilter::Nft;
using netfilter::NftRun;
using nft::Element;
using nft::Script;
using Json = nlohmann::json;

std::string JsonScalar(const Json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_number_integer()) return std::to_string(value.get<int64_t>());
  return value.dump();
}

std::string JsonKey(const Json& value) {
  if (value.is_object() && value.contains("concat")) {
    std::string out;
    for (const auto& part : value["concat"]) {
      out += (out.empty() ? "" : " . ") + JsonScalar(part);
    }
    return out;
  }
  return JsonScalar(value);
}

struct ListedElement {
  Element element;
  std::string comment;
};

// Every element of the network's maps of `family` (all when nullopt). A missing table or map
// is an empty list.
Result<std::vector<ListedElement>> ListNetworkElements(Nft& nft, const std::string& network,
                                                       std::optional<net::Family> family) {
  const nft::NetworkNames names = nft::NamesFor(network);
  std::vector<ListedElement> out;
  for (const auto f : {net::Family::kV4, net::Family::kV6}) {
    if (family && *family != f) continue;
    for (const auto& map : {names.DnatAny(f), names.DnatIp(f)}) {
      NftRun run = nft.Run(nft::ListMapCommand(map), {.json_output = true});
      if (!run.ok()) {
        if (run.HasErrno(ENOENT)) continue;
        return run.ToError("nftables: list map " + map);
      }
      const Json doc = Json::parse(run.output(), nullptr, false);
      if (doc.is_discarded() || !doc.contains("nftables")) {
        return Error(kErrKernel, "nftables: unreadable listing of map " + map);
      }
      for (const auto& object : doc["nftables"]) {
        if (!object.contains("map") || !object["map"].contains("elem")) continue;
        for (const auto& pair : object["map"]["elem"]) {
          if (!pair.is_array() || pair.size() != 2) continue;
          ListedElement listed;
          listed.element.family = f;
          listed.element.map = map;
          const Json& key = pair[0];
          if (key.is_object() && key.contains("elem")) {
            listed.element.key = JsonKey(key["elem"]["val"]);
            if (key["elem"].contains("comment")) {
              listed.comment = key["elem"]["comment"].get<std::string>();
            }
          } else {
            listed.element.key = JsonKey(key);
          }
          listed.element.value = JsonKey(pair[1]);
          out.push_back(std::move(listed));
        }
      }
    }
  }
  return out;
}

// The element values of one of our sets, as nft's JSON gives them (a commented element is
// unwrapped); a missing table or set is an empty list.
Result<std::vector<Json>> ListSetElements(Nft& nft, const std::string& set) {
  std::vector<Json> out;
  NftRun run = nft.Run(nft::ListSetCommand(set), {.json_output = true});
  if (!run.ok()) {
    if (run.HasErrno(ENOENT)) return out;
    return run.ToError("nftables: list set " + set);
  }
  const Json doc = Json::parse(run.output(), nullptr, false);
  if (doc.is_discarded() || !doc.contains("nftables")) {
    return Error(kErrKernel, "nftables: unreadable listing of set " + set);
  }
  for (const auto& object : doc["nftables"]) {
    if (!object.contains("set") || !object["set"].contains("elem")) continue;
    for (Json elem : object["set"]["elem"]) {
      if (elem.is_object() && elem.contains("elem")) elem = elem["elem"]["val"];
      out.push_back(std::move(elem));
    }
  }
  return out;
}

// The elements of one of our sets as (first field, second field) text pairs.
Result<std::vector<std::pair<std::string, std::string>>> ListPairs(Nft& nft,
                                                                   const std::string& set) {
  NG_ASSIGN_OR_RETURN(const auto elements, ListSetElements(nft, set));
  std::vector<std::pair<std::string, std::string>> out;
  for (const Json& elem : elements) {
    if (!elem.is_object() || !elem.contains("concat") || elem["concat"].size() != 2) continue;
    out.emplace_back(JsonScalar(elem["concat"][0]), JsonScalar(elem["concat"][1]));
  }
  return out;
}

// The elements of the network's hairpin set of `family` (prefixes and single addresses; ranges,
// which we never write, are skipped).
Result<std::vector<net::IpPrefix>> ListHairpin(Nft& nft, const std::string& network,
                                               net::Family family) {
  NG_ASSIGN_OR_RETURN(const auto elements,
                      ListSetElements(nft, nft::NamesFor(network).Hairpin(family)));
  std::vector<net::IpPrefix> out;
  for (const Json& elem : elements) {
    std::optional<net::IpPrefix> prefix;
    if (elem.is_string()) {
      prefix = net::IpPrefix::Parse(elem.get<std::string>(), true);
    } else if (elem.is_object() && elem.contains("prefix")) {
      const Json& p = elem["prefix"];
      prefix = net::IpPrefix::Parse(JsonScalar(p.value("addr", Json(""))) + "/" +
                                    JsonScalar(p.value("len", Json(0))));
    }
    if (prefix) out.push_back(*prefix);
  }
  return out;
}

// The hairpin changes of an ADD, from a listing of the network's hairpin sets.
Result<nft::HairpinPlan> PlanHairpin(Nft& nft, const Config& config) {
  nft::HairpinPlan plan;
  if (!config.snat || config.masq_all) return plan;
  for (const auto f : {net::Family::kV4, net::Family::kV6}) {
    if (!config.container(f)) continue;
    NG_ASSIGN_OR_RETURN(auto existing, ListHairpin(nft, config.network_name, f));
    (f == net::Family::kV4 ? plan.v4 : plan.v6) = nft::PlanHairpin(existing, *config.container(f));
  }
  return plan;
}

// The container's elements as listed: comment equals its ID.
Result<std::vector<Element>> OwnedByListing(Nft& nft, const Config& config,
                                            std::optional<net::Family> family) {
  NG_ASSIGN_OR_RETURN(auto listed, ListNetworkElements(nft, config.network_name, family));
  std::vector<Element> out;
  const std::string comment = nft::ElementComment(config.container_id);
  for (auto& l : listed) {
    if (l.comment == comment) out.push_back(std::move(l.element));
  }
  return out;
}

// The first of the ADD's keys that another container holds, by listing the network's maps;
// empty when none is (any more).
std::string FirstTakenKey(Nft& nft, const Config& config) {
  const auto listed = ListNetworkElements(nft, config.network_name, std::nullopt);
  if (!listed.ok()) return "";
  const std::string comment = nft::ElementComment(config.container_id);
  for (const auto f : {net::Family::kV4, net::Family::kV6}) {
    if (!config.container(f)) continue;
    for (const auto& e : nft::ContainerElements(config, f)) {
      const bool taken = std::any_of(listed->begin(), listed->end(), [&](const ListedElement& l) {
        return l.element.map == e.map && l.element.key == e.key && l.comment != comment;
      });
      if (taken) return e.key;
    }
  }
  return "";
}

// The ADD failed with EEXIST on a map element: a host port of it maps to another container.
// `taken` is the key when the refused command held one element; else the listing tells (rare).
Error Conflict(Nft& nft, const Config& config, std::string taken) {
  if (taken.empty()) taken = FirstTakenKey(nft, config);
  return Error(kErrAddressInUse, "nftables: host port " +
                                     (taken.empty() ? std::string("of this pod") : taken) +
                                     " is already mapped to another container");
}

bool AnyLineHas(const NftRun& run, int error, const std::vector<int>& lines) {
  for (int line : lines) {
    if (run.HasErrno(error, line)) return true;
  }
  return false;
}

// The rules of the reference nftables backend's table `family cni_hostport`; nullopt when the
// table is absent or unreadable (nothing was left there).
std::optional<std::vector<nft::ListedRule>> ListReferenceRules(Nft& nft,
                                                               const std::string& family) {
  NftRun listing = nft.Run(nft::ListReferenceTableCommand(family), {.json_output = true});
  if (!listing.ok()) return std::nullopt;
  const Json doc = Json::parse(listing.output(), nullptr, false);
  if (doc.is_discarded() || !doc.contains("nftables")) return std::nullopt;
  std::vector<nft::ListedRule> rules;
  for (const auto& object : doc["nftables"]) {
    if (!object.contains("rule")) continue;
    const Json& rule = object["rule"];
    rules.push_back({.chain = rule.value("chain", ""),
                     .comment = rule.value("comment", ""),
                     .handle = rule.value("handle", uint64_t{0})});
  }
  return rules;
}

// The reference nftables backend's rules for this container ID (tables ip/ip6 cni_hostport,
// comment = the bare ID). Deleted by handle in one transaction per family.
Status RemoveReferenceLeftovers(Nft& nft, const std::string& container_id) {
  for (const char* family : nft::kReferenceFamilies) {
    const auto rules = ListReferenceRules(nft, family);
    if (!rules) continue;
    const Script s = nft::ReferenceLeftovers(family, *rules, container_id);
    if (s.lines() == 0) continue;
    spdlog::info("nftables: removing {} rules of the reference plugin for {}", s.lines(),
                 container_id);
    NftRun run = nft.Run(s.text());
    if (!run.ok()) {
      return run.ToError("nftables: remove reference rules in " + nft::ReferenceTable(family));
    }
  }
  return OkStatus();
}

// What a refused ADD transaction says, from the roles of what the kernel refused (a script's
// lines or an element batch's changes): nothing of it was applied.
struct AddRefusal {
  bool readd = false;       // the owner's family marker exists (EEXIST): replace
  bool need_setup = false;  // something is missing (ENOENT): the network's chains, or of
                            // another config
  bool conflict = false;    // a map element's key is held by another container (EEXIST)
  // Only hairpin ranges were refused: the container subnet overlaps a hairpin element (another
  // container's subnet, or this network's before it changed).
  bool hairpin_only = false;
  std::string taken;  // the taken key, when a refused map change held only it
  Error error;        // the refusal as an error, for anything else
  bool Understood() const { return readd || need_setup || conflict || hairpin_only; }
};

AddRefusal RefusalOfScript(const Script& script, const NftRun& run) {
  AddRefusal r;
  r.readd = AnyLineHas(run, EEXIST, script.LinesOf(nft::Role::kMarker));
  r.need_setup = run.HasErrno(ENOENT);
  for (int line : script.LinesOf(nft::Role::kElement)) {
    if (!run.HasErrno(EEXIST, line)) continue;
    if (!r.conflict) r.taken = script.Line(line)->subject;
    r.conflict = true;
  }
  const std::vector<int> hairpin = script.LinesOf(nft::Role::kHairpin);
  r.hairpin_only = !hairpin.empty() && !run.errors().empty() &&
                   std::all_of(run.errors().begin(), run.errors().end(), [&](const auto& e) {
                     return std::find(hairpin.begin(), hairpin.end(), e.line) != hairpin.end();
                   });
  r.error = run.ToError("nftables: add mappings");
  return r;
}

AddRefusal RefusalOfBatch(const nft::ElementPlan& plan,
                          const std::vector<netfilter::ElementRefusal>& refusals) {
  AddRefusal r;
  r.hairpin_only = !refusals.empty();
  for (const auto& refusal : refusals) {
    const nft::Role role = plan.roles[refusal.change];
    r.readd |= role == nft::Role::kMarker && refusal.error == EEXIST;
    r.need_setup |= refusal.error == ENOENT;
    if (role == nft::Role::kElement && refusal.error == EEXIST) {
      if (!r.conflict) r.taken = plan.subjects[refusal.change];
      r.conflict = true;
    }
    r.hairpin_only &= role == nft::Role::kHairpin;
  }
  const auto& first = refusals.front();
  r.error = Error(kErrKernel, "nftables: add mappings: " + plan.changes[first.change].set + ": " +
                                  std::strerror(first.error) +
                                  (first.ext_ack.empty() ? "" : " (" + first.ext_ack + ")"));
  return r;
}

// ADD's slow path: the network's chains are missing or of another config (`need_setup`),
// or the owner has mappings already (`readd`, which replaces them).
Status ForwardSlow(Nft& nft, const Config& config, bool need_setup, bool readd) {
  Script slow;
  if (need_setup) {
    spdlog::info("nftables: writing chains of network {}", config.network_name);
    nft::AppendSetup(config, slow);
    // Drop the records of this network's earlier configs (rare path: a listing is fine).
    NG_ASSIGN_OR_RETURN(const auto records, ListPairs(nft, nft::kNetcfgSet));
    nft::AppendDropOtherConfigs(config, records, slow);
  }
  if (readd) {
    // Re-ADD replaces: forget everything this owner has, then add the new mappings.
    NG_ASSIGN_OR_RETURN(const auto old, OwnedByListing(nft, config, std::nullopt));
    nft::AppendForget(nft::OwnerTag(config.network_name, config.container_id), old, {}, slow);
  }
  NG_ASSIGN_OR_RETURN(const nft::HairpinPlan plan, PlanHairpin(nft, config));
  nft::AppendAdd(config, false, !readd, slow, plan);
  NftRun run = nft.Run(slow.text());
  if (run.ok()) return OkStatus();
  if (const AddRefusal refused = RefusalOfScript(slow, run); refused.conflict) {
    return Conflict(nft, config, refused.taken);
  }
  return run.ToError("nftables: add mappings");
}

// CHECK 1 and 2: everything ADD created exists (a dry run of deleting it succeeds), and each
// element maps to this container (adding the same value again is a no-op).
Status CheckElements(Nft& nft, const Config& config) {
  const nft::CheckScripts check = nft::BuildCheck(config);
  NftRun run = nft.Run(check.exists.text(), {.dry_run = true});
  if (!run.ok()) {
    for (const auto& e : run.errors()) {
      if (const nft::Command* command = check.exists.Line(e.line)) {
        return Error(kErrCheckFailed, "nftables: missing " + command->subject);
      }
    }
    return Error(kErrCheckFailed, "nftables: " + run.ToError("check").msg);
  }
  if (check.values.lines() > 0) {
    NftRun same = nft.Run(check.values.text(), {.dry_run = true});
    if (!same.ok()) {
      return Error(kErrCheckFailed,
                   "nftables: a host port maps elsewhere: " + same.ToError("check").msg);
    }
  }
  return OkStatus();
}

// CHECK 3: an element of the hairpin set covers the container's subnet (it may be another,
// larger container subnet of the network: ADD keeps only the outermost ones).
Status CheckHairpin(Nft& nft, const Config& config) {
  if (!config.snat || config.masq_all) return OkStatus();
  for (const auto f : {net::Family::kV4, net::Family::kV6}) {
    if (!config.container(f)) continue;
    NG_ASSIGN_OR_RETURN(auto existing, ListHairpin(nft, config.network_name, f));
    if (nft::PlanHairpin(existing, *config.container(f)).add) {
      return Error(kErrCheckFailed,
                   "nftables: missing hairpin source " + config.container(f)->Masked().ToString());
    }
  }
  return OkStatus();
}

// CHECK 4: the network's chains hold their rules.
Status CheckChains(Nft& nft, const Config& config) {
  for (const auto& [chain, expected] : nft::NetworkChainRuleCounts(config)) {
    NftRun listing = nft.Run(nft::ListChainCommand(chain), {.json_output = true});
    if (!listing.ok()) return Error(kErrCheckFailed, "nftables: chain " + chain + " not found");
    const Json doc = Json::parse(listing.output(), nullptr, false);
    size_t rules = 0;
    if (!doc.is_discarded() && doc.contains("nftables")) {
      for (const auto& object : doc["nftables"]) rules += object.contains("rule") ? 1 : 0;
    }
    if (rules != expected) {
      return Error(kErrCheckFailed, "nftables: chain " + chain + " has " + std::to_string(rules) +
                                        " rules, expected " + std::to_string(expected));
    }
  }
  return OkStatus();
}

// The families `owner` has mappings in: its markers, read without a transaction (a failing
// transaction would cost a grace period under the commit mutex).
Result<std::vector<net::Family>> OwnedFamilies(const std::string& owner) {
  std::vector<net::Family> out;
  for (const auto f : {net::Family::kV4, net::Family::kV6}) {
    NG_ASSIGN_OR_RETURN(
        const bool has,
        netfilter::HasElement(
            {.family = netfilter::kNfprotoInet, .table = nft::kTable, .set = nft::kOwnedSet},
            netfilter::IfnameKey({owner, nft::FamilyMarker(f)})));
    if (has) out.push_back(f);
  }
  return out;
}

// DEL of an owner with mappings in `families`: the ADD's elements when the DEL names exactly
// them (unless the element batch already found that it does not), else whatever a listing
// finds for the owner.
Status DeleteOwned(Nft& nft, const Config& config, const std::string& owner,
                   const std::vector<net::Family>& families, bool try_exact) {
  Script s;
  bool exact = try_exact;  // the DEL names the owner's mappings (it carries the ADD's)
  for (const auto f : families) {
    const auto elements = nft::ContainerElements(config, f);
    exact &= !elements.empty();
    nft::AppendDelete(owner, elements, f, s);
  }
  if (exact && nft.Run(s.text()).ok()) return OkStatus();
  // The owner has mappings, but not exactly these (DEL without the ADD's portMappings):
  // find its elements and ownership records by listing.
  spdlog::info("nftables: DEL of {} falls back to listing", config.container_id);
  NG_ASSIGN_OR_RETURN(const auto owned, OwnedByListing(nft, config, std::nullopt));
  NG_ASSIGN_OR_RETURN(const auto records, ListPairs(nft, nft::kOwnedSet));
  Script forget;
  nft::AppendDeleteListed(owner, records, owned, forget);
  if (forget.lines() == 0) return OkStatus();
  NftRun run = nft.Run(forget.text());
  if (!run.ok()) return run.ToError("nftables: delete mappings");
  return OkStatus();
}

// GC: hairpin sources no remaining container of the network is in (DEL leaves them: knowing
// that no other container needs one takes a listing of the network's maps, which DEL's fast
// path avoids).
Status AppendUnneededHairpin(Nft& nft, const std::string& network_name,
                             const std::vector<net::IpAddress>& kept, Script& s) {
  for (const auto f : {net::Family::kV4, net::Family::kV6}) {
    NG_ASSIGN_OR_RETURN(auto hairpin, ListHairpin(nft, network_name, f));
    for (const auto& source : hairpin) {
      const bool needed = std::any_of(kept.begin(), kept.end(), [&](const net::IpAddress& ip) {
        return ip.family() == source.family() && source.Contains(ip);
      });
      if (needed) continue;
      spdlog::info("gc: removing hairpin source {} of network {}", source.Masked().ToString(),
                   network_name);
      nft::AppendDeleteHairpin(network_name, source, s);
    }
  }
  return OkStatus();
}

class NftablesMapper : public PortMapper {
 public:
  Status Forward(const Config& config) override {
    std::optional<AddRefusal> refused;
    // Most ADDs: the network's chains are there and the container is new. Its elements go
    // straight over netlink, without loading libnftables; a refusal (nothing applied) is
    // classified like a failed script.
    if (const auto plan = nft::AddElementPlan(config)) {
      auto written = netfilter::WriteElements(netfilter::kNfprotoInet, nft::kTable, plan->changes);
      if (written.ok() && written->empty()) return OkStatus();
      if (written.ok()) {
        refused = RefusalOfBatch(*plan, *written);
        spdlog::debug("nftables: element batch refused ({}); {}", refused->error.msg,
                      refused->Understood() ? "taking the path for it" : "running the script");
      } else {
        spdlog::debug("nftables: element batch failed ({}); running the script",
                      written.error().msg);
      }
    }
    NG_ASSIGN_OR_RETURN(Nft nft, Nft::Open());
    if (!refused || !refused->Understood()) {
      // The whole ADD as a script: the fallback when the batch could not be sent or was
      // refused for a reason the classification does not cover.
      Script script;
      nft::AppendAdd(config, true, true, script);
      NftRun run = nft.Run(script.text());
      if (run.ok()) return OkStatus();
      refused = RefusalOfScript(script, run);
    }
    if (refused->hairpin_only) {
      // Rare: read the hairpin sets and add only what is not covered yet.
      NG_ASSIGN_OR_RETURN(const nft::HairpinPlan plan, PlanHairpin(nft, config));
      Script retry;
      nft::AppendAdd(config, true, true, retry, plan);
      NftRun run = nft.Run(retry.text());
      if (run.ok()) return OkStatus();
      refused = RefusalOfScript(retry, run);
    }
    if (refused->conflict && !refused->readd) return Conflict(nft, config, refused->taken);
    if (!refused->readd && !refused->need_setup) return refused->error;
    return ForwardSlow(nft, config, refused->need_setup, refused->readd);
  }

  Status Check(const Config& config) override {
    NG_ASSIGN_OR_RETURN(Nft nft, Nft::Open());
    NG_RETURN_IF_ERROR(CheckElements(nft, config));
    NG_RETURN_IF_ERROR(CheckHairpin(nft, config));
    return CheckChains(nft, config);
  }

  Status Unforward(const Config& config) override {
    const std::string owner = nft::OwnerTag(config.network_name, config.container_id);
    NG_ASSIGN_OR_RETURN(const auto owned_families, OwnedFamilies(owner));
    // The usual DEL names the ADD's mappings: their elements go straight over netlink, as
    // ADD's do. A refusal (some of them missing) applied nothing; the listing path follows.
    bool deleted = owned_families.empty(), exact_refused = false;
    if (!deleted) {
      if (const auto plan = nft::DeleteElementPlan(config, owned_families)) {
        auto written =
            netfilter::WriteElements(netfilter::kNfprotoInet, nft::kTable, plan->changes);
        deleted = written.ok() && written->empty();
        exact_refused = written.ok() && !written->empty();
      }
    }
    // The reference's tables (`ip`/`ip6 cni_hostport`) are on few nodes: look before loading
    // libnftables to list them.
    NG_ASSIGN_OR_RETURN(const auto reference,
                        netfilter::HasTables({{netfilter::kNfprotoIpv4, nft::kTable},
                                              {netfilter::kNfprotoIpv6, nft::kTable}}));
    const bool any_reference = reference[0] || reference[1];
    if (deleted && !any_reference) return OkStatus();
    NG_ASSIGN_OR_RETURN(Nft nft, Nft::Open());
    if (!deleted) {
      NG_RETURN_IF_ERROR(DeleteOwned(nft, config, owner, owned_families, !exact_refused));
    }
    return any_reference ? RemoveReferenceLeftovers(nft, config.container_id) : OkStatus();
  }

  Status Gc(const std::string& network_name, const std::set<std::string>& valid) override {
    NG_ASSIGN_OR_RETURN(Nft nft, Nft::Open());
    NG_ASSIGN_OR_RETURN(auto listed, ListNetworkElements(nft, network_name, std::nullopt));
    std::map<std::string, std::vector<Element>> stale;  // container ID -> elements
    std::vector<net::IpAddress> kept;  // addresses of the remaining containers' mappings
    for (auto& l : listed) {
      bool keep = false;
      for (const auto& id : valid) keep |= nft::ElementComment(id) == l.comment;
      if (keep) {
        const std::string addr = l.element.value.substr(0, l.element.value.find(' '));
        if (auto ip = net::IpAddress::Parse(addr)) kept.push_back(*ip);
      } else {
        stale[l.comment].push_back(std::move(l.element));
      }
    }
    Script s;
    for (const auto& [id, elements] : stale) {
      spdlog::info("gc: removing nftables mappings of container {}", id);
      nft::AppendForget(nft::OwnerTag(network_name, id), elements,
                        {net::Family::kV4, net::Family::kV6}, s);
    }
    NG_RETURN_IF_ERROR(AppendUnneededHairpin(nft, network_name, kept, s));
    if (s.lines() == 0) return OkStatus();
    NftRun run = nft.Run(s.text());
    if (!run.ok()) return run.ToError("nftables: gc");
    return OkStatus();
  }

  // libnftables loads and nf_tables answers. A read, not a dry-run transaction: STATUS runs
  // often, and an aborted transaction holds the commit mutex for a grace period.
  Status Usable() override {
    auto nft = Nft::Open();
    if (!nft.ok()) return Error(kErrPluginNotAvailable, nft.error().msg);
    if (Status probe = netfilter::ProbeNfTables(); !probe.ok()) {
      return Error(kErrPluginNotAvailable, "nftables is not usable: " + probe.error().msg);
    }
    return OkStatus();
  }
};

}  // namespace

std::unique_ptr<PortMapper> MakeNftablesMapper() { return std::make_unique<NftablesMapper>(); }

}  // namespace nodegate::portmap
