#include "ipam/cluster/admin.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <map>

#include "ipam/range.h"
#include "ipam/store.h"
#include "lib/sys/fd.h"
#include "lib/sys/io.h"

namespace nodegate::ipam::cluster {
namespace {

using etcd::Compare;
using etcd::DeleteRequest;
using etcd::RangeRequest;
using etcd::TxnRequest;

constexpr int64_t kPage = 2000;

std::optional<std::string_view> Under(std::string_view key, std::string_view prefix) {
  if (key.substr(0, prefix.size()) != prefix) return std::nullopt;
  return key.substr(prefix.size());
}

// The pool a snapshot is read against: the stored one, else the configuration's.
const Pool& PoolOf(const Snapshot& snapshot, const Pool& configured) {
  return snapshot.pool ? *snapshot.pool : configured;
}

uint64_t UsableInBlock(const Pool& pool, const net::IpPrefix& block) {
  const auto place = LocateBlock(pool, block);
  return place ? UsableCount(block, pool.sets[place->set].range_set.ranges[place->range]) : 0;
}

}  // namespace

Result<Snapshot> ReadSnapshot(etcd::Kv& kv, const Keys& keys, const std::string& network) {
  Snapshot snapshot;
  snapshot.network = network;
  const std::string& root = keys.network_root();
  const std::string end = etcd::PrefixEnd(root);
  std::string from = root;
  for (;;) {
    NG_ASSIGN_OR_RETURN(
        etcd::RangeResponse page,
        kv.Range(RangeRequest{
            .key = from, .range_end = end, .limit = kPage, .revision = snapshot.revision}));
    if (snapshot.revision == 0) snapshot.revision = page.revision;
    for (const auto& kv_entry : page.kvs) {
      const std::string& key = kv_entry.key;
      const std::string& value = kv_entry.value;
      auto note = [&](const Error& e) { snapshot.unreadable.push_back(e.msg); };
      if (key == keys.Pool()) {
        auto pool = DecodePool(key, value);
        pool.ok() ? void(snapshot.pool = std::move(pool).value()) : note(pool.error());
      } else if (keys.BlockOfClaim(key)) {
        auto claim = DecodeClaim(key, value);
        if (!claim.ok()) {
          note(claim.error());
        } else if (claim->block != *keys.BlockOfClaim(key)) {
          snapshot.unreadable.push_back(key + ": names block " + claim->block.ToString());
        } else {
          snapshot.claims.push_back({key, std::move(claim).value(), kv_entry.mod_revision});
        }
      } else if (const auto node_block = keys.NodeBlockOf(key)) {
        auto block = DecodeBlock(key, value);
        if (!block.ok()) {
          note(block.error());
        } else if (block->block != node_block->second || block->node != node_block->first) {
          snapshot.unreadable.push_back(key + ": holds block " + block->block.ToString() +
                                        " of node " + block->node);
        } else {
          snapshot.blocks.push_back(
              {key, node_block->first, std::move(block).value(), kv_entry.mod_revision});
        }
      } else if (const auto handle_name = keys.HandleOf(key)) {
        auto handle = DecodeHandle(key, value);
        if (!handle.ok()) {
          note(handle.error());
        } else if (handle->container_id != handle_name->first ||
                   handle->ifname != handle_name->second) {
          snapshot.unreadable.push_back(key + ": names another attachment");
        } else {
          snapshot.handles.push_back({key, std::move(handle).value(), kv_entry.mod_revision});
        }
      } else if (const auto rest = Under(key, keys.NodesPrefix())) {
        const size_t slash = rest->find("/handles/");
        std::optional<std::pair<std::string, std::string>> parsed;
        if (slash != std::string_view::npos && slash > 0) {
          parsed = keys.NodeHandleOf(rest->substr(0, slash), key);
        }
        if (parsed) {
          snapshot.index.push_back(
              {key, std::string(rest->substr(0, slash)), parsed->first, parsed->second});
        } else {
          snapshot.unreadable.push_back(key + ": not a key cluster-ipam writes");
        }
      } else {
        snapshot.unreadable.push_back(key + ": not a key cluster-ipam writes");
      }
    }
    if (!page.more || page.kvs.empty()) break;
    from = page.kvs.back().key + std::string(1, '\0');
  }
  return snapshot;
}

Usage Summarize(const Snapshot& snapshot, const Pool& configured) {
  const Pool& pool = PoolOf(snapshot, configured);
  Usage usage;
  usage.network = snapshot.network;
  usage.revision = snapshot.revision;
  for (size_t s = 0; s < pool.sets.size(); ++s) {
    Usage::SetRow row;
    row.set = s;
    const auto& ranges = pool.sets[s].range_set.ranges;
    for (size_t r = 0; r < ranges.size(); ++r) {
      row.ranges += (r ? ", " : "") + ranges[r].subnet.ToString() + " blockSize " +
                    std::to_string(pool.sets[s].block_sizes[r]);
    }
    row.blocks = SetBlocks(pool.sets[s]).count();
    usage.sets.push_back(row);
  }
  std::map<std::string, Usage::NodeRow> nodes;
  for (const auto& b : snapshot.blocks) {
    Usage::BlockRow row{b.block.block, b.node, UsableInBlock(pool, b.block.block),
                        b.block.allocations.size(), 0};
    for (const auto& [ordinal, a] : b.block.allocations) {
      if (!a.node.empty() && a.node != b.node) {
        ++row.lent;
        usage.borrowed.push_back(
            {AddressAt(b.block.block, ordinal), b.block.block, b.node, a.node, a.handle});
        ++nodes[a.node].borrowed;
      }
    }
    Usage::NodeRow& node = nodes[b.node];
    ++node.blocks;
    node.addresses += row.addresses;
    node.allocated += row.allocated;
    node.lent += row.lent;
    if (const auto place = LocateBlock(pool, b.block.block)) {
      Usage::SetRow& set = usage.sets[place->set];
      ++set.claimed;
      set.addresses += row.addresses;
      set.allocated += row.allocated;
    }
    usage.blocks.push_back(row);
  }
  for (const auto& h : snapshot.handles) ++nodes[h.handle.node].handles;
  for (auto& [name, row] : nodes) {
    row.node = name;
    usage.nodes.push_back(row);
  }
  std::sort(usage.blocks.begin(), usage.blocks.end(), [](const auto& a, const auto& b) {
    return std::tie(a.node, a.block) < std::tie(b.node, b.block);
  });
  std::sort(usage.borrowed.begin(), usage.borrowed.end(),
            [](const auto& a, const auto& b) { return a.ip < b.ip; });
  return usage;
}

namespace {

// ProblemFinder: FindProblems' passes over one snapshot, sharing what each learns (the handles
// by name, every holder of every address).
class ProblemFinder {
 public:
  ProblemFinder(const Snapshot& snapshot, const Pool& pool, const CheckInputs& inputs)
      : snapshot_(snapshot), pool_(pool), inputs_(inputs) {
    for (const auto& h : snapshot.handles) handles_[h.handle.name()] = &h;
  }

  // Blocks: each block in the pool, claimed by its node, not overlapping another, and its
  // entries held by handles; each claim with a block.
  void Blocks() {
    std::map<net::IpPrefix, const Snapshot::ClaimEntry*> claims;
    for (const auto& c : snapshot_.claims) claims[c.claim.block] = &c;
    std::set<net::IpPrefix> with_content;
    std::vector<net::IpPrefix> all_blocks;
    for (const auto& b : snapshot_.blocks) {
      const net::IpPrefix& cidr = b.block.block;
      with_content.insert(cidr);
      all_blocks.push_back(cidr);
      if (!LocateBlock(pool_, cidr)) {
        Add("not-in-pool", cidr.ToString(), b.key + ": not a block of the pool");
      }
      const auto claim = claims.find(cidr);
      if (claim == claims.end()) {
        Add("claim-mismatch", cidr.ToString(), b.key + " has no claim");
      } else if (claim->second->claim.node != b.node) {
        Add("claim-mismatch", cidr.ToString(),
            "claimed by " + claim->second->claim.node + ", held under node " + b.node);
      }
      Entries(b);
    }
    for (const auto& c : snapshot_.claims) {
      if (!with_content.count(c.claim.block)) {
        Add("claim-mismatch", c.claim.block.ToString(),
            "claimed by " + c.claim.node + " with no block under the node");
      }
    }
    std::sort(all_blocks.begin(), all_blocks.end());
    for (size_t i = 1; i < all_blocks.size(); ++i) {
      if (all_blocks[i - 1].Overlaps(all_blocks[i])) {
        Add("duplicate", all_blocks[i].ToString(),
            "blocks " + all_blocks[i - 1].ToString() + " and " + all_blocks[i].ToString() +
                " overlap");
      }
    }
  }

  // Handles: each handle's addresses recorded for it by their blocks, listed in the node's
  // index, and (with the inputs) still attached on its node, of a node that exists.
  void Handles() {
    std::set<std::string> indexed;
    for (const auto& i : snapshot_.index) {
      indexed.insert(i.node + "/" + i.container_id + "/" + i.ifname);
    }
    for (const auto& h : snapshot_.handles) {
      const Handle& handle = h.handle;
      for (const auto& a : handle.addresses) {
        holders_[a.ip].insert(handle.name());
        if (!Records(a, handle)) {
          Add("handle-mismatch", handle.name(),
              "holds " + a.ip.ToString() + ", which block " + a.block.ToString() + " of node " +
                  a.block_node + " does not record for it");
        }
      }
      if (!indexed.count(handle.node + "/" + handle.name())) {
        Add("index-missing", handle.name(), "not listed under node " + handle.node);
      }
      if (inputs_.node && inputs_.live && handle.node == *inputs_.node &&
          !inputs_.live->count(handle.name())) {
        std::string ips;
        for (const auto& a : handle.addresses) ips += (ips.empty() ? "" : ",") + a.ip.ToString();
        Add("leaked", handle.name(),
            "node " + handle.node + "'s runtime has no such attachment; holds " + ips);
      }
      if (inputs_.nodes && !inputs_.nodes->count(handle.node)) {
        Add("node-gone", handle.name(), "of node " + handle.node);
      }
    }
  }

  // Rest: stale index entries, addresses with several holders, blocks of nodes that are gone.
  std::vector<Problem> Rest() && {
    for (const auto& i : snapshot_.index) {
      const auto h = handles_.find(i.container_id + "/" + i.ifname);
      if (h == handles_.end() || h->second->handle.node != i.node) {
        Add("index-stale", i.key, "no such handle of node " + i.node);
      }
    }
    for (const auto& [ip, names] : holders_) {
      if (names.size() > 1) {
        std::string list;
        for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
        Add("duplicate", ip.ToString(), "held by " + list);
      }
    }
    if (inputs_.nodes) {
      for (const auto& b : snapshot_.blocks) {
        if (!inputs_.nodes->count(b.node)) {
          Add("node-gone", b.block.block.ToString(), "block of node " + b.node);
        }
      }
    }
    return std::move(problems_);
  }

  void Add(std::string kind, std::string subject, std::string detail) {
    problems_.push_back({std::move(kind), std::move(subject), std::move(detail)});
  }

 private:
  // Entries: each allocation of block `b` held by a handle, the same allocation.
  void Entries(const Snapshot::BlockEntry& b) {
    const net::IpPrefix& cidr = b.block.block;
    for (const auto& [ordinal, a] : b.block.allocations) {
      const net::IpAddress ip = AddressAt(cidr, ordinal);
      holders_[ip].insert(a.handle);
      const auto h = handles_.find(a.handle);
      if (h == handles_.end()) {
        Add("orphan-entry", ip.ToString(),
            "block " + cidr.ToString() + " gives it to " + a.handle + ", which has no handle");
      } else if (h->second->handle.aid != a.aid) {
        Add("orphan-entry", ip.ToString(),
            "block " + cidr.ToString() + " gives it to an earlier allocation of " + a.handle);
      }
    }
  }

  // Records: the block entry of the handle's address names this handle and allocation.
  template <typename Address>
  bool Records(const Address& a, const Handle& handle) const {
    const Snapshot::BlockEntry* block = nullptr;
    for (const auto& b : snapshot_.blocks) {
      if (b.block.block == a.block && b.node == a.block_node) block = &b;
    }
    if (block == nullptr) return false;
    const auto entry = block->block.allocations.find(OrdinalOf(a.block, a.ip));
    return entry != block->block.allocations.end() && entry->second.handle == handle.name() &&
           entry->second.aid == handle.aid;
  }

  const Snapshot& snapshot_;
  const Pool& pool_;
  const CheckInputs& inputs_;
  std::map<std::string, const Snapshot::HandleEntry*> handles_;
  // Every holder of every address: block entries and handles.
  std::map<net::IpAddress, std::set<std::string>> holders_;
  std::vector<Problem> problems_;
};

}  // namespace

std::vector<Problem> FindProblems(const Snapshot& snapshot, const Pool& configured,
                                  const CheckInputs& inputs) {
  ProblemFinder finder(snapshot, PoolOf(snapshot, configured), inputs);
  for (const auto& u : snapshot.unreadable) {
    finder.Add("unreadable", u.substr(0, u.find(": ")), u);
  }
  if (snapshot.pool && !SamePool(*snapshot.pool, configured)) {
    finder.Add(
        "pool-differs", "pool",
        "stored: " + DescribePool(*snapshot.pool) + "; configured: " + DescribePool(configured));
  }
  finder.Blocks();
  finder.Handles();
  return std::move(finder).Rest();
}

Result<NodeRelease> ReleaseNode(etcd::Kv& kv, const ClusterConfig& cfg, const std::string& node,
                                bool with_handles) {
  const Keys keys = cfg.keys();
  NodeRelease out;
  if (with_handles) {
    NG_ASSIGN_OR_RETURN(
        etcd::RangeResponse index,
        kv.Range(RangeRequest{.key = keys.NodeHandlesPrefix(node),
                              .range_end = etcd::PrefixEnd(keys.NodeHandlesPrefix(node)),
                              .keys_only = true}));
    ClusterConfig as_node = cfg;
    as_node.node_name = node;
    for (const auto& entry : index.kvs) {
      const auto handle = keys.NodeHandleOf(node, entry.key);
      if (!handle) continue;
      Allocator allocator(kv, as_node);
      NG_RETURN_IF_ERROR(allocator.Release(handle->first, handle->second));
      out.released_handles.push_back(handle->first + "/" + handle->second);
    }
  }
  NG_ASSIGN_OR_RETURN(
      etcd::RangeResponse blocks,
      kv.Range(RangeRequest{.key = keys.NodeBlocksPrefix(node),
                            .range_end = etcd::PrefixEnd(keys.NodeBlocksPrefix(node))}));
  for (const auto& entry : blocks.kvs) {
    NG_ASSIGN_OR_RETURN(Block block, DecodeBlock(entry.key, entry.value));
    // Which entries belong to a live handle (one that exists and carries the entry's id)?
    TxnRequest read;
    std::vector<std::string> names;
    for (const auto& [ordinal, a] : block.allocations) {
      if (std::find(names.begin(), names.end(), a.handle) != names.end()) continue;
      names.push_back(a.handle);
      read.success.push_back(RangeRequest{.key = keys.HandlesPrefix() + a.handle});
    }
    read.success.push_back(RangeRequest{.key = keys.Claim(block.block)});
    NG_ASSIGN_OR_RETURN(etcd::TxnResponse state, kv.Txn(read));
    std::string live;
    TxnRequest release;
    release.compare = {Compare::ModRevision(entry.key, entry.mod_revision)};
    for (size_t i = 0; i < names.size(); ++i) {
      const auto* found = state.RangeAt(i);
      if (found == nullptr || found->kvs.empty()) {
        release.compare.push_back(Compare::Absent(keys.HandlesPrefix() + names[i]));
        continue;
      }
      NG_ASSIGN_OR_RETURN(Handle handle, DecodeHandle(found->kvs[0].key, found->kvs[0].value));
      const bool holds = std::any_of(
          block.allocations.begin(), block.allocations.end(),
          [&](const auto& e) { return e.second.handle == names[i] && e.second.aid == handle.aid; });
      if (holds) {
        live += (live.empty() ? "" : ", ") + names[i];
      } else {
        release.compare.push_back(
            Compare::ModRevision(found->kvs[0].key, found->kvs[0].mod_revision));
      }
    }
    if (!live.empty()) {
      out.kept_blocks.emplace_back(block.block, "held by " + live);
      continue;
    }
    release.success = {DeleteRequest{entry.key, ""}};
    const auto* claim = state.RangeAt(names.size());
    if (claim && !claim->kvs.empty()) {
      auto owner = DecodeClaim(claim->kvs[0].key, claim->kvs[0].value);
      if (owner.ok() && owner->node == node) {
        release.compare.push_back(
            Compare::ModRevision(claim->kvs[0].key, claim->kvs[0].mod_revision));
        release.success.push_back(DeleteRequest{claim->kvs[0].key, ""});
      }
    }
    NG_ASSIGN_OR_RETURN(etcd::TxnResponse done, kv.Txn(release));
    if (done.succeeded) {
      out.released_blocks.push_back(block.block);
    } else {
      out.kept_blocks.emplace_back(block.block, "changed meanwhile; run the release again");
    }
  }
  return out;
}

Result<std::vector<ImportEntry>> ReadHostLocalState(const std::string& data_dir,
                                                    const std::string& network,
                                                    const std::string& legacy_ifname) {
  const std::string dir = data_dir + "/" + network;
  // host-local's lock (flock on <dir>/lock, ours and the reference's): shared, so that no
  // ADD or DEL changes the reservations while they are read.
  sys::UniqueFd lock(::open((dir + "/lock").c_str(), O_RDONLY | O_CLOEXEC));
  if (lock.valid()) (void)::flock(lock.get(), LOCK_SH);
  DIR* listing = ::opendir(dir.c_str());
  if (listing == nullptr) return Error(kErrIo, dir + ": no host-local state of that network");
  std::vector<std::string> names;
  while (const dirent* e = ::readdir(listing)) names.push_back(e->d_name);
  ::closedir(listing);
  std::sort(names.begin(), names.end());
  std::vector<ImportEntry> out;
  for (const auto& name : names) {
    const auto ip = net::IpAddress::Parse(name);
    if (!ip || ip->ToString() != name) continue;  // lock, last_reserved_ip.N, .nodegate
    auto content = sys::ReadRegularFile(dir + "/" + name, 4096);
    if (!content.ok()) continue;
    const auto owner = DecodeOwner(*content);
    if (!owner) continue;  // a crash leftover holds no owner
    out.push_back(
        {CanonicalIp(*ip), owner->container_id, owner->legacy() ? legacy_ifname : owner->ifname});
  }
  return out;
}

std::vector<ImportOutcome> ImportHostLocal(etcd::Kv& kv, const ClusterConfig& cfg,
                                           const std::vector<ImportEntry>& entries, bool dry_run) {
  std::vector<std::pair<std::string, std::vector<net::IpAddress>>> by_handle;
  for (const auto& e : entries) {
    const std::string name = e.container_id + "/" + e.ifname;
    auto it = std::find_if(by_handle.begin(), by_handle.end(),
                           [&](const auto& h) { return h.first == name; });
    if (it == by_handle.end()) {
      by_handle.emplace_back(name, std::vector<net::IpAddress>{});
      it = by_handle.end() - 1;
    }
    it->second.push_back(e.ip);
  }
  std::vector<ImportOutcome> out;
  for (const auto& [name, ips] : by_handle) {
    ImportOutcome outcome{name, ips, ""};
    const size_t slash = name.find('/');
    if (dry_run) {
      for (const auto& ip : ips) {
        if (!LocateAddress(cfg.pool, ip)) outcome.error = ip.ToString() + " is not in the pool";
      }
    } else {
      Allocator allocator(kv, cfg);
      auto assigned = allocator.Assign(name.substr(0, slash), name.substr(slash + 1), ips);
      if (!assigned.ok()) outcome.error = assigned.error().msg;
    }
    out.push_back(std::move(outcome));
  }
  return out;
}

}  // namespace nodegate::ipam::cluster
