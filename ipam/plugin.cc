#include "ipam/plugin.h"

#include <algorithm>
#include <filesystem>

#include "ipam/allocator.h"
#include "ipam/disk_store.h"
#include "ipam/resolv_conf.h"
#include "ipam/result.h"
#include "lib/cni/logging.h"
#include "lib/cni/version.h"

namespace nodegate::ipam {
namespace {

Owner OwnerOf(const cni::CmdArgs& args) { return Owner{args.container_id, args.ifname}; }

// Finishes a verb on the disk store: index changes are written even after a failed verb (so
// the next call does not rebuild), but the verb's own error wins.
template <typename T>
Result<T> Finish(DiskStore& store, Result<T> result) {
  if (Status committed = store.Commit(); !committed.ok()) {
    // The reservation files are already right; only the index is left untrusted.
    cni::LogWarn("host-local: index not updated ({}); the next call rebuilds it",
                 committed.error().msg);
  }
  return result;
}

Result<cni::CniResult> Add(const cni::CmdArgs& args) {
  NG_ASSIGN_OR_RETURN(IpamConfig cfg, LoadIpamConfig(args.conf, args.args, Verb::kAdd));
  cni::Dns dns;
  if (!cfg.resolv_conf.empty()) {
    NG_ASSIGN_OR_RETURN(dns, ReadResolvConf(cfg.resolv_conf));
  }
  NG_ASSIGN_OR_RETURN(auto store, DiskStore::Open(cfg.data_dir, cfg.network_name));
  NG_ASSIGN_OR_RETURN(cni::CniResult result, Finish(*store, AddWith(cfg, OwnerOf(args), *store)));
  result.dns = dns;
  return result;
}

Status Del(const cni::CmdArgs& args) {
  auto loaded = LoadIpamConfig(args.conf, args.args, Verb::kDel);
  if (!loaded.ok()) {
    // Reservations are found by owner; only where the store is (dataDir) must be known.
    cni::LogWarn("host-local DEL: config unreadable ({}); releasing by owner only",
                 loaded.error().msg);
    NG_ASSIGN_OR_RETURN(IpamConfig where, LoadIpamConfig(args.conf, "", Verb::kGc));
    std::error_code ec;
    if (!std::filesystem::exists(where.NetworkDir(), ec)) {
      return OkStatus();  // nothing was ever reserved there; create nothing
    }
    loaded = std::move(where);
  }
  NG_ASSIGN_OR_RETURN(IpamConfig cfg, std::move(loaded));
  NG_ASSIGN_OR_RETURN(auto store, DiskStore::Open(cfg.data_dir, cfg.network_name));
  Status status = DelWith(cfg, OwnerOf(args), *store);
  if (Status committed = store->Commit(); !committed.ok()) {
    cni::LogWarn("host-local: index not updated ({})", committed.error().msg);
  }
  return status;
}

Status Check(const cni::CmdArgs& args) {
  NG_ASSIGN_OR_RETURN(IpamConfig cfg, LoadIpamConfig(args.conf, args.args, Verb::kCheck));
  NG_ASSIGN_OR_RETURN(auto store, DiskStore::Open(cfg.data_dir, cfg.network_name));
  Status status = CheckWith(cfg, OwnerOf(args), args.conf.prev_result, *store);
  (void)store->Commit();
  return status;
}

Status Gc(const cni::CmdArgs& args) {
  NG_ASSIGN_OR_RETURN(IpamConfig cfg, LoadIpamConfig(args.conf, args.args, Verb::kGc));
  NG_ASSIGN_OR_RETURN(std::vector<cni::Attachment> live, cni::ParseValidAttachments(args.conf.raw));
  NG_ASSIGN_OR_RETURN(auto store, DiskStore::Open(cfg.data_dir, cfg.network_name));
  Status status = GcWith(live, *store);
  if (Status committed = store->Commit(); !committed.ok() && status.ok()) {
    return committed;
  }
  return status;
}

Status StatusVerb(const cni::CmdArgs& args) {
  NG_ASSIGN_OR_RETURN(IpamConfig cfg, LoadIpamConfig(args.conf, args.args, Verb::kStatus));
  if (cfg.range_sets.empty()) {
    return OkStatus();
  }
  NG_ASSIGN_OR_RETURN(auto store, DiskStore::Open(cfg.data_dir, cfg.network_name));
  Status status = StatusWith(cfg, *store);
  (void)store->Commit();
  return status;
}

}  // namespace

Result<cni::CniResult> AddWith(const IpamConfig& cfg, const Owner& owner, Store& store) {
  NG_ASSIGN_OR_RETURN(std::vector<Allocation> allocations, AllocateAll(cfg, owner, store));
  std::vector<AddressInRange> addresses;
  for (const auto& a : allocations) {
    if (a.reused) {
      cni::LogInfo("host-local: {} already holds {}; returning it again (idempotent ADD)",
                   owner.container_id, a.ip.ToString());
    }
    addresses.push_back({a.ip, a.range});
  }
  return IpamResult(cfg.cni_version, addresses, cfg.routes, cni::Dns{});
}

Status DelWith(const IpamConfig& cfg, const Owner& owner, Store& store) {
  // One pass per range set, as the reference: each pass releases the exact owner's
  // reservations, or, when it found none, the legacy id-only ones.
  std::vector<std::string> errors;
  const size_t passes = std::max<size_t>(cfg.range_sets.size(), 1);
  for (size_t pass = 0; pass < passes; ++pass) {
    auto released = store.ReleaseByOwner(owner);
    if (!released.ok()) {
      errors.push_back(released.error().msg);
      continue;
    }
    if (*released == 0) {
      auto legacy = store.ReleaseByOwner(Owner{owner.container_id, ""});
      if (!legacy.ok()) {
        errors.push_back(legacy.error().msg);
      }
    }
  }
  if (!errors.empty()) {
    std::string joined;
    for (size_t i = 0; i < errors.size(); ++i) {
      joined += (i ? ";" : "") + errors[i];
    }
    return Error(kErrIo, joined);
  }
  return OkStatus();
}

Status CheckWith(const IpamConfig& cfg, const Owner& owner,
                 const std::optional<cni::CniResult>& prev_result, Store& store) {
  NG_ASSIGN_OR_RETURN(std::vector<net::IpAddress> held, store.FindByOwner(owner));
  NG_ASSIGN_OR_RETURN(std::vector<net::IpAddress> legacy,
                      store.FindByOwner(Owner{owner.container_id, ""}));
  held.insert(held.end(), legacy.begin(), legacy.end());
  if (prev_result) {
    for (const auto& ip : prev_result->ips) {
      const net::IpAddress address = CanonicalIp(ip.address.address());
      const bool ours = std::any_of(cfg.range_sets.begin(), cfg.range_sets.end(),
                                    [&](const RangeSet& s) { return s.Contains(address); });
      if (ours && std::find(held.begin(), held.end(), address) == held.end()) {
        return Error(kErrCheckFailed, "host-local: Failed to find address " + address.ToString() +
                                          " added by container " + owner.container_id);
      }
    }
  }
  if (held.empty()) {
    return Error(kErrCheckFailed,
                 "host-local: Failed to find address added by container " + owner.container_id);
  }
  return OkStatus();
}

Status GcWith(const std::vector<cni::Attachment>& live, Store& store) {
  auto is_live = [&](const Owner& owner) {
    return std::any_of(live.begin(), live.end(), [&](const cni::Attachment& a) {
      if (a.container_id != owner.container_id) {
        return false;
      }
      // An attachment without ifname keeps all of the container's reservations, and a legacy
      // id-only reservation is kept by any attachment of its container.
      return a.ifname.empty() || owner.legacy() || a.ifname == owner.ifname;
    });
  };
  NG_ASSIGN_OR_RETURN(std::vector<Store::Entry> entries, store.List());
  std::vector<std::string> errors;
  int released = 0;
  for (const auto& e : entries) {
    if (e.owner && is_live(*e.owner)) {
      continue;
    }
    if (Status s = store.Remove(e.ip); !s.ok()) {
      errors.push_back(s.error().msg);
      continue;
    }
    ++released;
    cni::LogInfo("host-local GC: released {} (owner {})", e.ip.ToString(),
                 e.owner ? e.owner->container_id + "/" + e.owner->ifname : "unreadable");
  }
  if (!errors.empty()) {
    std::string joined;
    for (size_t i = 0; i < errors.size(); ++i) {
      joined += (i ? "; " : "") + errors[i];
    }
    return Error(kErrIo, "GC released " + std::to_string(released) + " but failed: " + joined);
  }
  return OkStatus();
}

Status StatusWith(const IpamConfig& cfg, Store& store) {
  NG_ASSIGN_OR_RETURN(std::optional<size_t> full, FindFullRangeSet(cfg, store));
  if (full) {
    return Error(kErrPluginNotAvailable,
                 "no IP addresses available in range set: " + cfg.range_sets[*full].ToString(),
                 "range set " + std::to_string(*full) + " is full");
  }
  return OkStatus();
}

cni::Plugin MakePlugin() {
  return cni::SuitePlugin("host-local", cni::AllVersions(), ConfigShape(),
                          {.add = Add, .del = Del, .check = Check, .gc = Gc, .status = StatusVerb});
}

}  // namespace nodegate::ipam
