// The nftables backend: one libnftables transaction per change, layout in nftables_rules.h.
// The fast paths add or delete a fixed number of map elements and never list anything (in
// nft 1.0.x a listing fetches every element of the table); listing is used only on the rare
// paths: re-ADD, DEL whose mappings differ from the ADD's, CHECK, GC and the reference's
// leftovers.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "lib/netfilter/nft.h"
#include "lib/netfilter/query.h"
#include "plugins/portmap/nftables_rules.h"
#include "plugins/portmap/port_mapper.h"

namespace nodegate::portmap {
namespace {

using netfilter::Nft;
using netfilter::NftRun;
using nft::Element;
using nft::Script;
using Json = nlohmann::json;

std::string Qualified(const std::string& object) {
  return std::string(nft::kFamily) + " " + nft::kTable + " " + object;
}

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
      NftRun run = nft.Run("list map " + Qualified(map), {.json_output = true});
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
  NftRun run = nft.Run("list set " + Qualified(set), {.json_output = true});
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

// Deletes elements whose existence is known from a listing, with their ownership records and
// the owner's markers. Records are added before being deleted so the script succeeds whether
// or not they exist.
void AppendForget(const std::string& owner, const std::vector<Element>& elements,
                  const std::vector<net::Family>& markers, Script& s) {
  auto forget_record = [&](const std::string& tag) {
    const std::string elem = "{ \"" + owner + "\" . \"" + tag + "\" }";
    s.Add("add element " + Qualified(nft::kOwnedSet) + " " + elem);
    s.Add("delete element " + Qualified(nft::kOwnedSet) + " " + elem);
  };
  for (const auto f : markers) forget_record(nft::FamilyMarker(f));
  for (const auto& e : elements) {
    forget_record(e.Tag());
    s.Add("delete element " + Qualified(e.map) + " { " + e.key + " }");
  }
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

Error Conflict(const Config& config, const NftRun& run, const std::vector<int>& element_lines) {
  // Element lines are in ContainerElements order, v4 first then v6.
  std::vector<Element> all = nft::ContainerElements(config, net::Family::kV4);
  if (!config.container_v4) all.clear();
  if (config.container_v6) {
    auto v6 = nft::ContainerElements(config, net::Family::kV6);
    all.insert(all.end(), v6.begin(), v6.end());
  }
  std::string which;
  for (size_t i = 0; i < element_lines.size() && i < all.size(); ++i) {
    if (run.HasErrno(EEXIST, element_lines[i])) {
      which = all[i].key;
      break;
    }
  }
  return Error(kErrAddressInUse,
               "nftables: host port " + which + " is already mapped to another container");
}

bool AnyLineHas(const NftRun& run, int error, const std::vector<int>& lines) {
  for (int line : lines) {
    if (run.HasErrno(error, line)) return true;
  }
  return false;
}

// The reference nftables backend's rules for this container ID (tables ip/ip6 cni_hostport,
// comment = the bare ID). Deleted by handle in one transaction per family.
Status RemoveReferenceLeftovers(Nft& nft, const std::string& container_id) {
  for (const char* family : {"ip", "ip6"}) {
    const std::string table = std::string(family) + " " + nft::kTable;
    NftRun listing = nft.Run("list table " + table, {.json_output = true});
    if (!listing.ok()) continue;  // absent: nothing was left there
    const Json doc = Json::parse(listing.output(), nullptr, false);
    if (doc.is_discarded() || !doc.contains("nftables")) continue;
    Script s;
    for (const auto& object : doc["nftables"]) {
      if (!object.contains("rule")) continue;
      const Json& rule = object["rule"];
      const std::string chain = rule.value("chain", "");
      bool reference_chain = false;
      for (const char* c : nft::kReferenceChains) reference_chain |= chain == c;
      if (!reference_chain || rule.value("comment", "") != container_id) continue;
      s.Add("delete rule " + table + " " + chain + " handle " +
            std::to_string(rule.value("handle", 0)));
    }
    if (s.lines() == 0) continue;
    spdlog::info("nftables: removing {} rules of the reference plugin for {}", s.lines(),
                 container_id);
    NftRun run = nft.Run(s.text());
    if (!run.ok()) return run.ToError("nftables: remove reference rules in " + table);
  }
  return OkStatus();
}

class NftablesMapper : public PortMapper {
 public:
  Status Forward(const Config& config) override {
    NG_ASSIGN_OR_RETURN(Nft nft, Nft::Open());
    Script fast;
    nft::AddLines lines = nft::AppendAdd(config, true, true, fast);
    NftRun run = nft.Run(fast.text());
    if (run.ok()) return OkStatus();
    if (!lines.hairpin.empty() && !run.errors().empty() &&
        std::all_of(run.errors().begin(), run.errors().end(), [&](const auto& e) {
          return std::find(lines.hairpin.begin(), lines.hairpin.end(), e.line) !=
                 lines.hairpin.end();
        })) {
      // The container subnet overlaps a hairpin element (another container's subnet, or this
      // network's before it changed): nft refuses the whole script before the kernel sees it.
      // Rare: read the hairpin sets and add only what is not covered yet.
      NG_ASSIGN_OR_RETURN(const nft::HairpinPlan plan, PlanHairpin(nft, config));
      Script retry;
      lines = nft::AppendAdd(config, true, true, retry, plan);
      run = nft.Run(retry.text());
      if (run.ok()) return OkStatus();
    }

    const bool readd = AnyLineHas(run, EEXIST, lines.markers);
    const bool need_setup = run.HasErrno(ENOENT);
    const bool conflict = AnyLineHas(run, EEXIST, lines.elements);
    if (conflict && !readd) return Conflict(config, run, lines.elements);
    if (!readd && !need_setup) return run.ToError("nftables: add mappings");

    Script slow;
    if (need_setup) {
      spdlog::info("nftables: writing chains of network {}", config.network_name);
      nft::AppendSetup(config, slow);
      // Drop the records of this network's earlier configs (rare path: a listing is fine).
      const std::string prefix = nft::NamesFor(config.network_name).prefix;
      NG_ASSIGN_OR_RETURN(auto records, ListPairs(nft, nft::kNetcfgSet));
      for (const auto& [network, hash] : records) {
        if (network != prefix) continue;
        char value[16];
        std::snprintf(value, sizeof(value), "0x%08x",
                      static_cast<uint32_t>(std::stoul(hash, nullptr, 0)));
        if (static_cast<uint32_t>(std::stoul(hash, nullptr, 0)) == nft::ConfigHash(config)) {
          continue;
        }
        slow.Add("delete element " + Qualified(nft::kNetcfgSet) + " { \"" + network + "\" . " +
                 value + " }");
      }
    }
    if (readd) {
      // Re-ADD replaces: forget everything this owner has, then add the new mappings.
      NG_ASSIGN_OR_RETURN(auto old, OwnedByListing(nft, config, std::nullopt));
      AppendForget(nft::OwnerTag(config.network_name, config.container_id), old, {}, slow);
    }
    NG_ASSIGN_OR_RETURN(const nft::HairpinPlan plan, PlanHairpin(nft, config));
    const nft::AddLines slow_lines = nft::AppendAdd(config, false, !readd, slow, plan);
    NftRun second = nft.Run(slow.text());
    if (second.ok()) return OkStatus();
    if (AnyLineHas(second, EEXIST, slow_lines.elements)) {
      return Conflict(config, second, slow_lines.elements);
    }
    return second.ToError("nftables: add mappings");
  }

  Status Check(const Config& config) override {
    NG_ASSIGN_OR_RETURN(Nft nft, Nft::Open());
    const nft::NetworkNames names = nft::NamesFor(config.network_name);
    const std::string owner = nft::OwnerTag(config.network_name, config.container_id);
    // 1. Everything ADD created exists (a dry run of deleting it succeeds).
    Script exists;
    std::vector<std::string> what;  // per line
    auto add = [&](const std::string& line, const std::string& description) {
      exists.Add(line);
      what.push_back(description);
    };
    char hash[16];
    std::snprintf(hash, sizeof(hash), "0x%08x", nft::ConfigHash(config));
    add("delete element " + Qualified(nft::kNetcfgSet) + " { \"" + names.prefix + "\" . " + hash +
            " }",
        "the chains of network " + config.network_name + " for this configuration");
    Script values;
    for (const auto f : {net::Family::kV4, net::Family::kV6}) {
      if (!config.container(f)) continue;
      add("delete element " + Qualified(nft::kOwnedSet) + " { \"" + owner + "\" . \"" +
              nft::FamilyMarker(f) + "\" }",
          "the ownership marker of the container");
      for (const auto& e : nft::ContainerElements(config, f)) {
        add("delete element " + Qualified(e.map) + " { " + e.key + " }",
            "element " + e.key + " in map " + e.map);
        add("delete element " + Qualified(nft::kOwnedSet) + " { \"" + owner + "\" . \"" + e.Tag() +
                "\" }",
            "the ownership record of " + e.key);
        values.Add("add element " + Qualified(e.map) + " { " + e.key + " : " + e.value + " }");
      }
    }
    NftRun run = nft.Run(exists.text(), {.dry_run = true});
    if (!run.ok()) {
      for (const auto& e : run.errors()) {
        if (e.line >= 1 && static_cast<size_t>(e.line) <= what.size()) {
          return Error(kErrCheckFailed, "nftables: missing " + what[e.line - 1]);
        }
      }
      return Error(kErrCheckFailed, "nftables: " + run.ToError("check").msg);
    }
    // 2. Each element maps to this container (adding the same value again is a no-op).
    if (values.lines() > 0) {
      NftRun same = nft.Run(values.text(), {.dry_run = true});
      if (!same.ok()) {
        return Error(kErrCheckFailed,
                     "nftables: a host port maps elsewhere: " + same.ToError("check").msg);
      }
    }
    // 3. An element of the hairpin set covers the container's subnet (it may be another,
    // larger container subnet of the network: ADD keeps only the outermost ones).
    if (config.snat && !config.masq_all) {
      for (const auto f : {net::Family::kV4, net::Family::kV6}) {
        if (!config.container(f)) continue;
        NG_ASSIGN_OR_RETURN(auto existing, ListHairpin(nft, config.network_name, f));
        if (nft::PlanHairpin(existing, *config.container(f)).add) {
          return Error(kErrCheckFailed, "nftables: missing hairpin source " +
                                            config.container(f)->Masked().ToString());
        }
      }
    }
    // 4. The network's chains hold their rules.
    const std::vector<std::pair<std::string, size_t>> chains = {
        {names.Prerouting(), 1},
        {names.Output(), 1},
        {names.Hostports(), nft::HostportsRules(config).size()},
        {names.Masquerade(), config.snat ? 1 : 0}};
    for (const auto& [chain, expected] : chains) {
      NftRun listing = nft.Run("list chain " + Qualified(chain), {.json_output = true});
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

  Status Unforward(const Config& config) override {
    const std::string owner = nft::OwnerTag(config.network_name, config.container_id);
    // Which families this owner has mappings in: its markers, read without a transaction (a
    // failing transaction would cost a grace period under the commit mutex).
    std::vector<net::Family> owned_families;
    for (const auto f : {net::Family::kV4, net::Family::kV6}) {
      NG_ASSIGN_OR_RETURN(
          const bool has,
          netfilter::HasElement(
              {.family = netfilter::kNfprotoInet, .table = nft::kTable, .set = nft::kOwnedSet},
              netfilter::IfnameKey({owner, nft::FamilyMarker(f)})));
      if (has) owned_families.push_back(f);
    }
    NG_ASSIGN_OR_RETURN(Nft nft, Nft::Open());
    if (!owned_families.empty()) {
      Script s;
      bool exact = true;  // the DEL names the owner's mappings (it carries the ADD's)
      for (const auto f : owned_families) {
        const auto elements = nft::ContainerElements(config, f);
        exact &= !elements.empty();
        nft::AppendDelete(owner, elements, f, s);
      }
      if (!exact || !nft.Run(s.text()).ok()) {
        // The owner has mappings, but not exactly these (DEL without the ADD's portMappings):
        // find its elements and ownership records by listing.
        spdlog::info("nftables: DEL of {} falls back to listing", config.container_id);
        NG_ASSIGN_OR_RETURN(auto owned, OwnedByListing(nft, config, std::nullopt));
        NG_ASSIGN_OR_RETURN(auto records, ListPairs(nft, nft::kOwnedSet));
        Script forget;
        for (const auto& [who, tag] : records) {
          if (who != owner) continue;
          forget.Add("delete element " + Qualified(nft::kOwnedSet) + " { \"" + who + "\" . \"" +
                     tag + "\" }");
        }
        for (const auto& e : owned) {
          forget.Add("delete element " + Qualified(e.map) + " { " + e.key + " }");
        }
        if (forget.lines() > 0) {
          NftRun second = nft.Run(forget.text());
          if (!second.ok()) return second.ToError("nftables: delete mappings");
        }
      }
    }
    return RemoveReferenceLeftovers(nft, config.container_id);
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
      AppendForget(nft::OwnerTag(network_name, id), elements, {net::Family::kV4, net::Family::kV6},
                   s);
    }
    // Hairpin sources no remaining container of the network is in (DEL leaves them: knowing
    // that no other container needs one takes a listing of the network's maps, which DEL's
    // fast path avoids).
    const nft::NetworkNames names = nft::NamesFor(network_name);
    for (const auto f : {net::Family::kV4, net::Family::kV6}) {
      NG_ASSIGN_OR_RETURN(auto hairpin, ListHairpin(nft, network_name, f));
      for (const auto& source : hairpin) {
        const bool needed = std::any_of(kept.begin(), kept.end(), [&](const net::IpAddress& ip) {
          return ip.family() == source.family() && source.Contains(ip);
        });
        if (needed) continue;
        spdlog::info("gc: removing hairpin source {} of network {}", source.Masked().ToString(),
                     network_name);
        s.Add("delete element " + Qualified(names.Hairpin(f)) + " { " + source.Masked().ToString() +
              " }");
      }
    }
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
