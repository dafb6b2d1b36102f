#include "ipam/cluster/allocator.h"

#include <algorithm>
#include <map>

#include "lib/cni/logging.h"

namespace nodegate::ipam::cluster {

// Everything one read tells about the handle and the blocks the verb may write.
struct Allocator::View {
  bool pool_exists = false;
  int64_t pool_revision = 0;
  std::optional<Pool> stored_pool;
  std::optional<Handle> handle;
  int64_t handle_revision = 0;  // 0: no handle
  struct BlockState {
    Block block;
    int64_t revision = 0;
    Place place;
  };
  std::map<std::string, BlockState> blocks;  // by node-block key: this node's, and others' read
};

// What one attempt of ADD would write.
struct Allocator::Plan {
  std::map<std::string, Block> changed;                 // node-block key -> new value
  std::vector<std::pair<size_t, HandleAddress>> added;  // (range set, address)
};

namespace {

using etcd::Compare;
using etcd::DeleteRequest;
using etcd::PutRequest;
using etcd::RangeRequest;
using etcd::TxnRequest;

RangeRequest Key(std::string key, bool serializable = false) {
  return RangeRequest{.key = std::move(key), .serializable = serializable};
}

RangeRequest Prefix(const std::string& prefix, bool serializable = false, bool keys_only = false) {
  return RangeRequest{.key = prefix,
                      .range_end = etcd::PrefixEnd(prefix),
                      .keys_only = keys_only,
                      .serializable = serializable};
}

Error TooManyConflicts(const std::string& what) {
  return Error(kErrTryAgainLater, what + ": gave up after " + std::to_string(kMaxAttempts) +
                                      " attempts, each overtaken by a concurrent writer");
}

std::string Join(const std::vector<std::string>& parts, const char* separator) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : separator) + p;
  return out;
}

}  // namespace

const Range& Allocator::RangeOf(const Place& place) const {
  return cfg_.pool.sets[place.set].range_set.ranges[place.range];
}

Result<Place> Allocator::PlaceOfBlock(const std::string& key, const net::IpPrefix& block) const {
  auto place = LocateBlock(cfg_.pool, block);
  if (!place) {
    return Error(kErrStoreCorrupt,
                 key + ": block " + block.ToString() + " is not a block of this pool",
                 "run nodegate ipam check");
  }
  return *place;
}

std::optional<uint64_t> Allocator::FreeOrdinal(const Block& block, const Range& range,
                                               const std::set<uint64_t>& taken) const {
  const uint64_t capacity = BlockCapacity(block.block);
  for (uint64_t k = 0; k < capacity; ++k) {
    const uint64_t ordinal = (block.next + k) % capacity;
    if (block.allocations.count(ordinal) || taken.count(ordinal)) continue;
    if (Usable(range, AddressAt(block.block, ordinal))) return ordinal;
  }
  return std::nullopt;
}

Status Allocator::DecodeNodeBlocks(const etcd::RangeResponse& range, View& view) {
  for (auto it = view.blocks.begin(); it != view.blocks.end();) {
    it = it->second.block.node == cfg_.node_name ? view.blocks.erase(it) : std::next(it);
  }
  for (const auto& kv : range.kvs) {
    const auto where = keys_.NodeBlockOf(kv.key);
    if (!where || where->first != cfg_.node_name) {
      return Error(kErrStoreCorrupt, kv.key + ": not a key cluster-ipam writes");
    }
    NG_ASSIGN_OR_RETURN(Block block, DecodeBlock(kv.key, kv.value));
    if (block.block != where->second || block.node != cfg_.node_name) {
      return Error(kErrStoreCorrupt,
                   kv.key + ": holds block " + block.block.ToString() + " of node " + block.node);
    }
    NG_ASSIGN_OR_RETURN(Place place, PlaceOfBlock(kv.key, block.block));
    view.blocks[kv.key] = View::BlockState{std::move(block), kv.mod_revision, place};
  }
  return OkStatus();
}

Result<Allocator::View> Allocator::Read(const std::string& container_id, const std::string& ifname,
                                        bool serializable) {
  TxnRequest read;
  // Without a handle, an empty range of the pool key takes its place.
  read.success = {
      Key(keys_.Pool(), serializable),
      container_id.empty()
          ? RangeRequest{.key = keys_.Pool(), .count_only = true, .serializable = serializable}
          : Key(keys_.Handle(container_id, ifname), serializable),
      Prefix(keys_.NodeBlocksPrefix(cfg_.node_name), serializable)};
  NG_ASSIGN_OR_RETURN(etcd::TxnResponse response, kv_.Txn(read));
  View view;
  if (const auto* pool = response.RangeAt(0); pool && !pool->kvs.empty()) {
    NG_ASSIGN_OR_RETURN(view.stored_pool, DecodePool(pool->kvs[0].key, pool->kvs[0].value));
    view.pool_exists = true;
    view.pool_revision = pool->kvs[0].mod_revision;
  }
  if (const auto* handle = response.RangeAt(1);
      !container_id.empty() && handle && !handle->kvs.empty()) {
    NG_ASSIGN_OR_RETURN(view.handle, DecodeHandle(handle->kvs[0].key, handle->kvs[0].value));
    view.handle_revision = handle->kvs[0].mod_revision;
    if (view.handle->container_id != container_id || view.handle->ifname != ifname ||
        view.handle->network != cfg_.network_name) {
      return Error(kErrStoreCorrupt, handle->kvs[0].key + ": names another attachment");
    }
  }
  const auto* blocks = response.RangeAt(2);
  if (blocks == nullptr) return Error(kErrIo, "etcd answered a read incompletely");
  NG_RETURN_IF_ERROR(DecodeNodeBlocks(*blocks, view));
  return view;
}

Status Allocator::CheckPool(const View& view) const {
  if (view.stored_pool && !SamePool(*view.stored_pool, cfg_.pool)) {
    return Error(kErrInvalidConfig,
                 "the pool of network \"" + cfg_.network_name + "\" in etcd (" + keys_.Pool() +
                     ") differs from this configuration",
                 "stored: " + DescribePool(*view.stored_pool) +
                     "; configured: " + DescribePool(cfg_.pool) +
                     ". Every node must configure the same ranges and block sizes.");
  }
  return OkStatus();
}

Result<std::vector<Versioned<Block>>> Allocator::ReadBlocks(
    const std::vector<std::pair<std::string, net::IpPrefix>>& where, bool serializable) {
  std::vector<Versioned<Block>> out;
  for (size_t first = 0; first < where.size(); first += etcd::kMaxTxnOps / 2) {
    TxnRequest read;
    const size_t last = std::min(where.size(), first + etcd::kMaxTxnOps / 2);
    for (size_t i = first; i < last; ++i) {
      read.success.push_back(Key(where[i].first, serializable));
    }
    NG_ASSIGN_OR_RETURN(etcd::TxnResponse response, kv_.Txn(read));
    for (size_t i = first; i < last; ++i) {
      const auto* range = response.RangeAt(i - first);
      if (range == nullptr || range->kvs.empty()) {
        out.push_back(Versioned<Block>{Block{where[i].second, "", 0, {}}, 0});
        continue;
      }
      NG_ASSIGN_OR_RETURN(Block block, DecodeBlock(range->kvs[0].key, range->kvs[0].value));
      if (block.block != where[i].second) {
        return Error(kErrStoreCorrupt,
                     range->kvs[0].key + ": holds block " + block.block.ToString());
      }
      out.push_back(Versioned<Block>{std::move(block), range->kvs[0].mod_revision});
    }
  }
  return out;
}

Result<std::set<net::IpPrefix>> Allocator::ListClaims() {
  if (claimed_) return *claimed_;
  NG_ASSIGN_OR_RETURN(etcd::RangeResponse range,
                      kv_.Range(Prefix(keys_.ClaimsPrefix(), true, /*keys_only=*/true)));
  std::set<net::IpPrefix> claimed;
  for (const auto& kv : range.kvs) {
    if (auto block = keys_.BlockOfClaim(kv.key)) claimed.insert(*block);
  }
  claimed_ = std::move(claimed);
  return *claimed_;
}

Result<bool> Allocator::ClaimBlock(size_t set_index, View& view) {
  NG_ASSIGN_OR_RETURN(std::set<net::IpPrefix> claimed, ListClaims());
  const PoolSet& set = cfg_.pool.sets[set_index];
  const SetBlocks blocks(set);
  uint64_t claimed_here = 0;
  for (const auto& b : claimed) {
    if (auto place = LocateBlock(cfg_.pool, b); place && place->set == set_index) ++claimed_here;
  }
  if (claimed_here >= blocks.count()) return false;
  // Nodes start their search at different blocks, so that concurrent claims rarely meet;
  // within the pool's first 65,536 blocks, so that an IPv6 pool of 2^62 blocks is used from
  // its start rather than at random places all over it.
  const uint64_t start = StableHash(cfg_.node_name + "/" + std::to_string(set_index)) %
                         std::min<uint64_t>(blocks.count(), 65536);
  for (uint64_t i = 0; i < blocks.count(); ++i) {
    const auto [block, r] = blocks.At((start + i) % blocks.count());
    if (claimed_->count(block) || UsableCount(block, set.range_set.ranges[r]) == 0) continue;
    NG_ASSIGN_OR_RETURN(bool claimed, TryClaim(block, Place{set_index, r}, view));
    (void)claimed;
    // A concurrent ADD of this node may have claimed it: its blocks are read again next.
    return true;
  }
  return false;
}

Result<bool> Allocator::TryClaim(const net::IpPrefix& block, const Place& place, View& view) {
  if (!claimed_) claimed_.emplace();
  const std::string claim_key = keys_.Claim(block);
  const std::string block_key = keys_.NodeBlock(cfg_.node_name, block);
  TxnRequest txn;
  txn.compare = {Compare::Absent(claim_key), Compare::Absent(block_key)};
  if (view.pool_exists) {
    txn.compare.push_back(Compare::ModRevision(keys_.Pool(), view.pool_revision));
  } else {
    // The first claim of the network writes its pool; every later one must find the same.
    txn.compare.push_back(Compare::Absent(keys_.Pool()));
    txn.success.push_back(PutRequest{keys_.Pool(), EncodePool(cfg_.pool, NowRfc3339())});
  }
  const Block empty{block, cfg_.node_name, 0, {}};
  txn.success.push_back(PutRequest{claim_key, EncodeClaim({block, cfg_.node_name, NowRfc3339()})});
  txn.success.push_back(PutRequest{block_key, EncodeBlock(empty)});
  txn.failure = {Key(keys_.Pool())};
  ++counters_.transactions;
  NG_ASSIGN_OR_RETURN(etcd::TxnResponse response, kv_.Txn(txn));
  if (response.succeeded) {
    ++counters_.claims;
    claimed_->insert(block);
    if (!view.pool_exists) {
      view.pool_exists = true;
      view.pool_revision = response.revision;
      view.stored_pool = cfg_.pool;
    }
    view.blocks[block_key] = View::BlockState{empty, response.revision, place};
    cni::LogDebug("cluster-ipam: node {} claimed block {}", cfg_.node_name, block.ToString());
    return true;
  }
  ++counters_.conflicts;
  claimed_->insert(block);  // someone else's now (or this node's, from a concurrent ADD)
  if (const auto* pool = response.RangeAt(0); pool && !pool->kvs.empty()) {
    NG_ASSIGN_OR_RETURN(view.stored_pool, DecodePool(pool->kvs[0].key, pool->kvs[0].value));
    view.pool_exists = true;
    view.pool_revision = pool->kvs[0].mod_revision;
    NG_RETURN_IF_ERROR(CheckPool(view));
  }
  return false;
}

Result<bool> Allocator::Borrow(size_t set_index, View& view, Plan& plan,
                               const std::string& handle_name, const std::string& aid) {
  NG_ASSIGN_OR_RETURN(etcd::RangeResponse claims, kv_.Range(Prefix(keys_.ClaimsPrefix(), true)));
  std::vector<std::pair<std::string, net::IpPrefix>> candidates;
  for (const auto& kv : claims.kvs) {
    NG_ASSIGN_OR_RETURN(Claim claim, DecodeClaim(kv.key, kv.value));
    const auto place = LocateBlock(cfg_.pool, claim.block);
    if (!place || place->set != set_index || claim.node == cfg_.node_name) continue;
    candidates.emplace_back(keys_.NodeBlock(claim.node, claim.block), claim.block);
  }
  if (candidates.empty()) return false;
  // Borrowers start at different blocks too.
  std::rotate(candidates.begin(),
              candidates.begin() +
                  static_cast<long>(StableHash("borrow/" + cfg_.node_name) % candidates.size()),
              candidates.end());
  for (size_t first = 0; first < candidates.size(); first += etcd::kMaxTxnOps / 2) {
    const std::vector<std::pair<std::string, net::IpPrefix>> batch(
        candidates.begin() + static_cast<long>(first),
        candidates.begin() +
            static_cast<long>(std::min(candidates.size(), first + etcd::kMaxTxnOps / 2)));
    NG_ASSIGN_OR_RETURN(std::vector<Versioned<Block>> blocks, ReadBlocks(batch, true));
    for (size_t i = 0; i < batch.size(); ++i) {
      if (blocks[i].revision == 0) continue;  // released meanwhile
      NG_ASSIGN_OR_RETURN(Place place, PlaceOfBlock(batch[i].first, blocks[i].value.block));
      const std::string& key = batch[i].first;
      auto state = view.blocks.find(key);
      if (state == view.blocks.end()) {
        state =
            view.blocks.emplace(key, View::BlockState{blocks[i].value, blocks[i].revision, place})
                .first;
      }
      const Block current = plan.changed.count(key) ? plan.changed[key] : state->second.block;
      const auto ordinal = FreeOrdinal(current, RangeOf(place), {});
      if (!ordinal) continue;
      Block next = current;
      next.allocations[*ordinal] = Allocation{handle_name, aid, cfg_.node_name};
      next.next = (*ordinal + 1) % BlockCapacity(current.block);
      plan.changed[key] = std::move(next);
      plan.added.emplace_back(set_index, HandleAddress{AddressAt(current.block, *ordinal),
                                                       current.block, current.node});
      ++counters_.borrowed;
      return true;
    }
  }
  return false;
}

Result<std::optional<std::vector<AddressInRange>>> Allocator::Confirm(const Handle& handle,
                                                                      View& view) {
  const std::string handle_key = keys_.Handle(handle.container_id, handle.ifname);
  std::vector<std::pair<std::string, net::IpPrefix>> missing;
  for (const auto& a : handle.addresses) {
    const std::string key = keys_.NodeBlock(a.block_node, a.block);
    if (!view.blocks.count(key)) missing.emplace_back(key, a.block);
  }
  if (!missing.empty()) {
    // Other nodes' blocks, read with the handle itself: both as of one revision.
    TxnRequest read;
    read.success.push_back(Key(handle_key));
    for (const auto& [key, block] : missing) read.success.push_back(Key(key));
    NG_ASSIGN_OR_RETURN(etcd::TxnResponse response, kv_.Txn(read));
    const auto* now = response.RangeAt(0);
    if (now == nullptr || now->kvs.empty() || now->kvs[0].mod_revision != view.handle_revision) {
      return std::optional<std::vector<AddressInRange>>();
    }
    for (size_t i = 0; i < missing.size(); ++i) {
      const auto* range = response.RangeAt(i + 1);
      if (range == nullptr || range->kvs.empty()) {
        return Error(kErrStoreCorrupt,
                     handle_key + ": its block " + missing[i].second.ToString() + " is not in etcd",
                     "run nodegate ipam check");
      }
      NG_ASSIGN_OR_RETURN(Block block, DecodeBlock(range->kvs[0].key, range->kvs[0].value));
      NG_ASSIGN_OR_RETURN(Place place, PlaceOfBlock(missing[i].first, block.block));
      view.blocks[missing[i].first] =
          View::BlockState{std::move(block), range->kvs[0].mod_revision, place};
    }
  }
  std::vector<std::pair<size_t, AddressInRange>> out;
  for (const auto& a : handle.addresses) {
    const auto& state = view.blocks[keys_.NodeBlock(a.block_node, a.block)];
    const auto entry = state.block.allocations.find(OrdinalOf(a.block, a.ip));
    if (entry == state.block.allocations.end() || entry->second.aid != handle.aid ||
        entry->second.handle != handle.name()) {
      return Error(
          kErrStoreCorrupt,
          handle_key + " holds " + a.ip.ToString() + ", which its block does not record for it",
          "run nodegate ipam check");
    }
    out.emplace_back(state.place.set, AddressInRange{a.ip, &RangeOf(state.place)});
  }
  std::sort(out.begin(), out.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<AddressInRange> addresses;
  for (auto& [set, a] : out) addresses.push_back(a);
  return std::optional<std::vector<AddressInRange>>(std::move(addresses));
}

Result<std::optional<std::vector<AddressInRange>>> Allocator::Commit(
    View& view, const Plan& plan, const std::string& container_id, const std::string& ifname,
    const std::string& aid) {
  const std::string handle_key = keys_.Handle(container_id, ifname);
  Handle handle = view.handle ? *view.handle : Handle{cfg_.network_name, container_id, ifname,
                                                      cfg_.node_name,    aid,          {},
                                                      cfg_.pod,          NowRfc3339()};
  std::vector<std::pair<size_t, HandleAddress>> all;
  for (const auto& a : handle.addresses) all.emplace_back(LocateAddress(cfg_.pool, a.ip)->set, a);
  all.insert(all.end(), plan.added.begin(), plan.added.end());
  std::sort(all.begin(), all.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  handle.addresses.clear();
  for (const auto& [set, a] : all) handle.addresses.push_back(a);

  TxnRequest txn;
  txn.compare.push_back(view.handle ? Compare::ModRevision(handle_key, view.handle_revision)
                                    : Compare::Absent(handle_key));
  for (const auto& [key, block] : plan.changed) {
    txn.compare.push_back(Compare::ModRevision(key, view.blocks[key].revision));
    txn.success.push_back(PutRequest{key, EncodeBlock(block)});
  }
  txn.success.push_back(PutRequest{handle_key, EncodeHandle(handle)});
  txn.success.push_back(
      PutRequest{keys_.NodeHandle(handle.node, container_id, ifname), handle.aid});
  txn.failure = {Key(handle_key), Prefix(keys_.NodeBlocksPrefix(cfg_.node_name))};
  std::vector<std::string> foreign;
  for (const auto& [key, block] : plan.changed) {
    if (block.node != cfg_.node_name) {
      foreign.push_back(key);
      txn.failure.push_back(Key(key));
    }
  }
  ++counters_.transactions;
  NG_ASSIGN_OR_RETURN(etcd::TxnResponse response, kv_.Txn(txn));
  if (response.succeeded) {
    CacheView(view, plan.changed, response.revision);
    std::vector<AddressInRange> out;
    for (const auto& a : handle.addresses) {
      out.push_back({a.ip, &RangeOf(*LocateAddress(cfg_.pool, a.ip))});
    }
    return std::optional<std::vector<AddressInRange>>(std::move(out));
  }
  ++counters_.conflicts;
  NG_RETURN_IF_ERROR(RefreshFromFailure(response, foreign, view));
  return std::optional<std::vector<AddressInRange>>();
}

// The failure branch read what overtook the attempt: the handle, the node's blocks and the
// borrowed blocks, as they are now.
Status Allocator::RefreshFromFailure(const etcd::TxnResponse& response,
                                     const std::vector<std::string>& foreign, View& view) {
  const auto* handle_now = response.RangeAt(0);
  const auto* blocks_now = response.RangeAt(1);
  if (handle_now == nullptr || blocks_now == nullptr) {
    return Error(kErrIo, "etcd answered a transaction incompletely");
  }
  view.handle.reset();
  view.handle_revision = 0;
  if (!handle_now->kvs.empty()) {
    NG_ASSIGN_OR_RETURN(view.handle,
                        DecodeHandle(handle_now->kvs[0].key, handle_now->kvs[0].value));
    view.handle_revision = handle_now->kvs[0].mod_revision;
  }
  NG_RETURN_IF_ERROR(DecodeNodeBlocks(*blocks_now, view));
  for (size_t i = 0; i < foreign.size(); ++i) {
    const auto* range = response.RangeAt(2 + i);
    view.blocks.erase(foreign[i]);
    if (range && !range->kvs.empty()) {
      NG_ASSIGN_OR_RETURN(Block block, DecodeBlock(range->kvs[0].key, range->kvs[0].value));
      NG_ASSIGN_OR_RETURN(Place place, PlaceOfBlock(foreign[i], block.block));
      view.blocks[foreign[i]] =
          View::BlockState{std::move(block), range->kvs[0].mod_revision, place};
    }
  }
  return OkStatus();
}

Result<std::vector<std::pair<Place, net::IpAddress>>> Allocator::PlacesOf(
    const std::vector<net::IpAddress>& ips, const std::string& handle_name) const {
  std::vector<std::pair<Place, net::IpAddress>> wanted;
  for (const auto& ip : ips) {
    const auto place = LocateAddress(cfg_.pool, ip);
    if (!place || !Usable(RangeOf(*place), ip)) {
      return ConfigError(ip.ToString() + " is not an address of the pool (" +
                         DescribePool(cfg_.pool) + ")");
    }
    for (const auto& [other, other_ip] : wanted) {
      if (other.set == place->set) {
        return ConfigError(handle_name + ": " + other_ip.ToString() + " and " + ip.ToString() +
                           " are of one range set");
      }
    }
    wanted.emplace_back(*place, ip);
  }
  return wanted;
}

Result<std::vector<AddressInRange>> Allocator::Assign(const std::string& container_id,
                                                      const std::string& ifname,
                                                      const std::vector<net::IpAddress>& ips) {
  (void)TakeCachedView();
  const std::string handle_key = keys_.Handle(container_id, ifname);
  const std::string handle_name = container_id + "/" + ifname;
  const std::string fresh_aid = NewAllocationId();
  NG_ASSIGN_OR_RETURN(const auto wanted, PlacesOf(ips, handle_name));
  NG_ASSIGN_OR_RETURN(View view, Read(container_id, ifname, /*serializable=*/false));
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    NG_RETURN_IF_ERROR(CheckPool(view));
    const std::string aid = view.handle ? view.handle->aid : fresh_aid;
    Plan plan;
    bool again = false;
    for (const auto& want : wanted) {
      const Place& place = want.first;
      const net::IpAddress& ip = want.second;
      if (view.handle) {
        const size_t set = place.set;
        const auto held = std::find_if(
            view.handle->addresses.begin(), view.handle->addresses.end(),
            [&](const HandleAddress& a) { return LocateAddress(cfg_.pool, a.ip)->set == set; });
        if (held != view.handle->addresses.end()) {
          if (held->ip == ip) continue;
          return Error(kErrAddressInUse, handle_name + " already holds " + held->ip.ToString() +
                                             " in the range set of " + ip.ToString());
        }
      }
      const net::IpPrefix block = BlockOf(ip, cfg_.pool.sets[place.set].block_sizes[place.range]);
      NG_ASSIGN_OR_RETURN(etcd::RangeResponse claim, kv_.Range(Key(keys_.Claim(block))));
      if (claim.kvs.empty()) {
        NG_ASSIGN_OR_RETURN(bool claimed, TryClaim(block, place, view));
        (void)claimed;
        again = true;
        break;
      }
      NG_ASSIGN_OR_RETURN(Claim owner, DecodeClaim(claim.kvs[0].key, claim.kvs[0].value));
      const std::string key = keys_.NodeBlock(owner.node, block);
      if (!view.blocks.count(key)) {
        NG_ASSIGN_OR_RETURN(auto read, ReadBlocks({{key, block}}, /*serializable=*/false));
        if (read[0].revision == 0) {
          return Error(kErrStoreCorrupt, keys_.Claim(block) + " names node " + owner.node +
                                             ", which has no such block");
        }
        view.blocks[key] = View::BlockState{read[0].value, read[0].revision, place};
      }
      Block current = plan.changed.count(key) ? plan.changed[key] : view.blocks[key].block;
      const uint64_t ordinal = OrdinalOf(block, ip);
      if (const auto taken = current.allocations.find(ordinal);
          taken != current.allocations.end()) {
        return Error(kErrAddressInUse, ip.ToString() + " is held by " + taken->second.handle +
                                           " (block " + block.ToString() + " of node " +
                                           owner.node + ")");
      }
      const bool borrowed = owner.node != cfg_.node_name;
      current.allocations[ordinal] = Allocation{handle_name, aid, borrowed ? cfg_.node_name : ""};
      plan.changed[key] = std::move(current);
      plan.added.emplace_back(place.set, HandleAddress{ip, block, owner.node});
      if (borrowed) ++counters_.borrowed;
    }
    if (again) {
      NG_ASSIGN_OR_RETURN(view, Read(container_id, ifname, /*serializable=*/false));
      continue;
    }
    if (plan.added.empty()) {
      if (!view.handle) return std::vector<AddressInRange>{};
      NG_ASSIGN_OR_RETURN(auto confirmed, Confirm(*view.handle, view));
      if (confirmed) return std::move(*confirmed);
      NG_ASSIGN_OR_RETURN(view, Read(container_id, ifname, /*serializable=*/false));
      continue;
    }
    NG_ASSIGN_OR_RETURN(auto committed, Commit(view, plan, container_id, ifname, aid));
    if (committed) return std::move(*committed);
  }
  return TooManyConflicts("assign " + handle_key);
}

ViewCache::ViewCache() = default;
ViewCache::~ViewCache() = default;

std::optional<Allocator::View> Allocator::TakeCachedView() {
  if (cache_ == nullptr) return std::nullopt;
  auto it = cache_->views_.find(keys_.NodeBlocksPrefix(cfg_.node_name));
  if (it == cache_->views_.end()) return std::nullopt;
  View view = std::move(*it->second);
  cache_->views_.erase(it);
  return view;
}

void Allocator::CacheView(const View& view, const std::map<std::string, Block>& written,
                          int64_t revision) {
  if (cache_ == nullptr) return;
  auto kept = std::make_unique<View>();
  kept->pool_exists = view.pool_exists;
  kept->pool_revision = view.pool_revision;
  kept->stored_pool = view.stored_pool;
  for (const auto& [key, state] : view.blocks) {
    if (state.block.node != cfg_.node_name) continue;  // others' blocks: read when borrowing
    kept->blocks[key] = state;
    if (auto w = written.find(key); w != written.end()) {
      kept->blocks[key].block = w->second;
      kept->blocks[key].revision = revision;  // every key a transaction puts gets its revision
    }
  }
  cache_->views_[keys_.NodeBlocksPrefix(cfg_.node_name)] = std::move(kept);
}

void Allocator::PatchCachedView(const std::vector<std::pair<std::string, Block>>& written,
                                int64_t revision) {
  if (cache_ == nullptr) return;
  auto it = cache_->views_.find(keys_.NodeBlocksPrefix(cfg_.node_name));
  if (it == cache_->views_.end()) return;
  for (const auto& [key, block] : written) {
    auto state = it->second->blocks.find(key);
    if (state != it->second->blocks.end()) {
      state->second.block = block;
      state->second.revision = revision;
    } else if (block.node == cfg_.node_name) {
      cache_->views_.erase(it);  // a block of this node the view does not know: read next time
      return;
    }
  }
}

Result<std::vector<AddressInRange>> Allocator::Add(const std::string& container_id,
                                                   const std::string& ifname) {
  const std::string handle_key = keys_.Handle(container_id, ifname);
  const std::string fresh_aid = NewAllocationId();
  // Cheap (the member's own state), or none at all with the agent's cached view: every write
  // below re-checks what this read saw. A cached view knows no handle: when this one exists
  // (a repeated ADD), the compare that it is absent fails and brings it.
  View view;
  if (auto cached = TakeCachedView()) {
    view = std::move(*cached);
  } else {
    NG_ASSIGN_OR_RETURN(view, Read(container_id, ifname, /*serializable=*/true));
  }
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    NG_RETURN_IF_ERROR(CheckPool(view));
    NG_ASSIGN_OR_RETURN(std::vector<bool> covered, CoveredSets(view, handle_key));
    if (view.handle && std::all_of(covered.begin(), covered.end(), [](bool c) { return c; })) {
      cni::LogInfo("cluster-ipam: {} already holds its addresses (idempotent ADD)", handle_key);
      NG_ASSIGN_OR_RETURN(auto confirmed, Confirm(*view.handle, view));
      if (confirmed) return std::move(*confirmed);
      NG_ASSIGN_OR_RETURN(view, Read(container_id, ifname, /*serializable=*/false));
      continue;
    }
    const std::string aid = view.handle ? view.handle->aid : fresh_aid;
    Plan plan;
    NG_ASSIGN_OR_RETURN(bool planned,
                        PlanAddresses(covered, view, plan, container_id + "/" + ifname, aid));
    if (!planned) {
      // The claim re-reads the node's blocks only through its own view; a concurrent ADD of
      // this node may have claimed the block the failed compare saw.
      NG_ASSIGN_OR_RETURN(view, Read(container_id, ifname, /*serializable=*/false));
      continue;
    }
    NG_ASSIGN_OR_RETURN(auto committed, Commit(view, plan, container_id, ifname, aid));
    if (committed) return std::move(*committed);
  }
  return TooManyConflicts("ADD " + handle_key);
}

Result<std::vector<bool>> Allocator::CoveredSets(const View& view,
                                                 const std::string& handle_key) const {
  std::vector<bool> covered(cfg_.pool.sets.size(), false);
  if (!view.handle) return covered;
  for (const auto& a : view.handle->addresses) {
    const auto place = LocateAddress(cfg_.pool, a.ip);
    if (!place || covered[place->set]) {
      return Error(kErrStoreCorrupt, handle_key + ": holds " + a.ip.ToString() +
                                         ", not one address per range set of this pool");
    }
    covered[place->set] = true;
  }
  return covered;
}

Result<bool> Allocator::PlanAddresses(const std::vector<bool>& covered, View& view, Plan& plan,
                                      const std::string& handle_name, const std::string& aid) {
  for (size_t s = 0; s < cfg_.pool.sets.size(); ++s) {
    if (covered[s] || TakeFromOwnBlocks(s, view, plan, handle_name, aid)) continue;
    NG_ASSIGN_OR_RETURN(bool claimed, ClaimBlock(s, view));
    if (claimed) return false;  // plan again with the node's blocks as they are now
    const auto& set = cfg_.pool.sets[s].range_set;
    if (cfg_.strict_affinity) {
      return Error(kErrAddressExhausted,
                   "no IP addresses available in range set: " + set.ToString(),
                   "node " + cfg_.node_name +
                       "'s blocks are full, every block of the pool is claimed, and "
                       "strictAffinity forbids borrowing from other nodes' blocks");
    }
    NG_ASSIGN_OR_RETURN(bool borrowed, Borrow(s, view, plan, handle_name, aid));
    if (!borrowed) {
      return Error(kErrAddressExhausted,
                   "no IP addresses available in range set: " + set.ToString(),
                   "every address of every block of the pool is allocated");
    }
  }
  return true;
}

bool Allocator::TakeFromOwnBlocks(size_t set, const View& view, Plan& plan,
                                  const std::string& handle_name, const std::string& aid) const {
  for (const auto& [key, state] : view.blocks) {
    if (state.block.node != cfg_.node_name || state.place.set != set) continue;
    const Block current = plan.changed.count(key) ? plan.changed[key] : state.block;
    if (const auto ordinal = FreeOrdinal(current, RangeOf(state.place), {})) {
      Block next = current;
      next.allocations[*ordinal] = Allocation{handle_name, aid, ""};
      next.next = (*ordinal + 1) % BlockCapacity(current.block);
      plan.changed[key] = std::move(next);
      plan.added.emplace_back(
          set, HandleAddress{AddressAt(current.block, *ordinal), current.block, cfg_.node_name});
      return true;
    }
  }
  return false;
}

namespace {

// The release's writes: each held block without this allocation's entries, compared at the
// revision it was read. Blocks that are gone (revision 0) and blocks the handle no longer has an
// entry in are left alone.
void PlanRelease(const Handle& handle, const std::vector<HeldBlock>& held, TxnRequest& txn,
                 std::vector<std::pair<std::string, Block>>& written) {
  for (const HeldBlock& h : held) {
    if (h.stored.revision == 0) continue;  // the block is gone, and its entries with it
    Block block = h.stored.value;
    bool changed = false;
    for (const auto& a : handle.addresses) {
      if (a.block != block.block) continue;
      const auto entry = block.allocations.find(OrdinalOf(a.block, a.ip));
      // Only this allocation's entry: an address released and taken again meanwhile carries
      // another allocation id, and stays.
      if (entry != block.allocations.end() && entry->second.aid == handle.aid &&
          entry->second.handle == handle.name()) {
        block.allocations.erase(entry);
        changed = true;
      }
    }
    if (!changed) continue;
    txn.compare.push_back(Compare::ModRevision(h.key, h.stored.revision));
    txn.success.push_back(PutRequest{h.key, EncodeBlock(block)});
    written.emplace_back(h.key, std::move(block));
  }
}

}  // namespace

Status Allocator::Release(const std::string& container_id, const std::string& ifname) {
  const std::string handle_key = keys_.Handle(container_id, ifname);
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    // The handle and this node's blocks, where its addresses usually are, in one read.
    TxnRequest read;
    read.success = {Key(handle_key), Prefix(keys_.NodeBlocksPrefix(cfg_.node_name))};
    NG_ASSIGN_OR_RETURN(etcd::TxnResponse reads, kv_.Txn(read));
    const etcd::RangeResponse* found = reads.RangeAt(0);
    const etcd::RangeResponse* own = reads.RangeAt(1);
    if (found == nullptr || own == nullptr) {
      return Error(kErrIo, "etcd answered a read incompletely");
    }
    if (found->kvs.empty()) return OkStatus();  // nothing held: DEL is idempotent
    NG_ASSIGN_OR_RETURN(Handle handle, DecodeHandle(handle_key, found->kvs[0].value));
    if (handle.container_id != container_id || handle.ifname != ifname) {
      return Error(kErrStoreCorrupt, handle_key + ": names another attachment");
    }
    NG_ASSIGN_OR_RETURN(std::vector<HeldBlock> held, HeldBlocks(handle, *own));
    TxnRequest txn;
    std::vector<std::pair<std::string, Block>> written;
    txn.compare = {Compare::ModRevision(handle_key, found->kvs[0].mod_revision)};
    txn.success = {DeleteRequest{handle_key, ""},
                   DeleteRequest{keys_.NodeHandle(handle.node, container_id, ifname), ""}};
    PlanRelease(handle, held, txn, written);
    ++counters_.transactions;
    NG_ASSIGN_OR_RETURN(etcd::TxnResponse response, kv_.Txn(txn));
    if (response.succeeded) {
      ++counters_.released;
      PatchCachedView(written, response.revision);
      return OkStatus();
    }
    ++counters_.conflicts;
  }
  return TooManyConflicts("DEL " + handle_key);
}

Result<std::vector<HeldBlock>> Allocator::HeldBlocks(const Handle& handle,
                                                     const etcd::RangeResponse& own) {
  std::vector<HeldBlock> held;
  for (const auto& a : handle.addresses) {
    const std::string key = keys_.NodeBlock(a.block_node, a.block);
    if (std::none_of(held.begin(), held.end(), [&](const HeldBlock& h) { return h.key == key; })) {
      held.push_back(HeldBlock{key, a.block, {}});
    }
  }
  // Most are this node's, read with the handle; the others (borrowed) are read now.
  std::vector<std::pair<std::string, net::IpPrefix>> elsewhere;
  for (HeldBlock& h : held) {
    const auto kv = std::find_if(own.kvs.begin(), own.kvs.end(),
                                 [&](const etcd::KeyValue& k) { return k.key == h.key; });
    if (kv == own.kvs.end()) {
      elsewhere.emplace_back(h.key, h.block);
      continue;
    }
    NG_ASSIGN_OR_RETURN(Block block, DecodeBlock(kv->key, kv->value));
    h.stored = Versioned<Block>{std::move(block), kv->mod_revision};
  }
  if (elsewhere.empty()) return held;
  NG_ASSIGN_OR_RETURN(std::vector<Versioned<Block>> read_blocks, ReadBlocks(elsewhere, false));
  for (size_t i = 0, j = 0; i < held.size(); ++i) {
    if (held[i].stored.revision == 0 && j < elsewhere.size() && elsewhere[j].first == held[i].key) {
      held[i].stored = std::move(read_blocks[j++]);
    }
  }
  return held;
}

Status Allocator::Check(const std::string& container_id, const std::string& ifname,
                        const std::optional<cni::CniResult>& prev_result) {
  std::vector<AddressInRange> held;
  for (int attempt = 0;; ++attempt) {
    NG_ASSIGN_OR_RETURN(View view, Read(container_id, ifname, /*serializable=*/false));
    NG_RETURN_IF_ERROR(CheckPool(view));
    if (!view.handle) {
      return Error(kErrCheckFailed, "cluster-ipam: container " + container_id + " (" + ifname +
                                        ") holds no address in network " + cfg_.network_name);
    }
    NG_ASSIGN_OR_RETURN(auto confirmed, Confirm(*view.handle, view));
    if (confirmed) {
      held = std::move(*confirmed);
      break;
    }
    if (attempt + 1 == kMaxAttempts) return TooManyConflicts("CHECK");
  }
  if (!prev_result) return OkStatus();
  std::vector<net::IpAddress> in_result;
  for (const auto& ip : prev_result->ips) {
    const net::IpAddress address = CanonicalIp(ip.address.address());
    if (!LocateAddress(cfg_.pool, address)) continue;  // another plugin's
    in_result.push_back(address);
    if (std::none_of(held.begin(), held.end(), [&](const auto& h) { return h.ip == address; })) {
      return Error(kErrCheckFailed, "cluster-ipam: " + address.ToString() +
                                        " of the result is not held by container " + container_id +
                                        " (" + ifname + ")");
    }
  }
  for (const auto& h : held) {
    if (std::find(in_result.begin(), in_result.end(), h.ip) == in_result.end()) {
      return Error(kErrCheckFailed, "cluster-ipam: container " + container_id + " (" + ifname +
                                        ") holds " + h.ip.ToString() +
                                        ", which the result does not list");
    }
  }
  return OkStatus();
}

Status Allocator::ReleaseOrphans() {
  // Entries of this node's blocks whose handle does not exist (or carries another allocation
  // id): nothing any of our transactions leaves, but what a hand edit or a restore may.
  NG_ASSIGN_OR_RETURN(etcd::RangeResponse blocks,
                      kv_.Range(Prefix(keys_.NodeBlocksPrefix(cfg_.node_name))));
  for (const auto& kv : blocks.kvs) {
    NG_ASSIGN_OR_RETURN(Block block, DecodeBlock(kv.key, kv.value));
    std::vector<std::string> handles;
    for (const auto& [ordinal, a] : block.allocations) {
      if (std::find(handles.begin(), handles.end(), a.handle) == handles.end()) {
        handles.push_back(a.handle);
      }
    }
    std::map<std::string, Versioned<std::string>> aid_of;  // handle name -> aid, revision
    for (size_t first = 0; first < handles.size(); first += etcd::kMaxTxnOps / 2) {
      TxnRequest read;
      const size_t last = std::min(handles.size(), first + etcd::kMaxTxnOps / 2);
      for (size_t i = first; i < last; ++i) {
        read.success.push_back(Key(keys_.HandlesPrefix() + handles[i]));
      }
      NG_ASSIGN_OR_RETURN(etcd::TxnResponse response, kv_.Txn(read));
      for (size_t i = first; i < last; ++i) {
        const auto* range = response.RangeAt(i - first);
        if (range && !range->kvs.empty()) {
          auto handle = DecodeHandle(range->kvs[0].key, range->kvs[0].value);
          if (handle.ok()) aid_of[handles[i]] = {handle->aid, range->kvs[0].mod_revision};
        }
      }
    }
    Block kept = block;
    TxnRequest txn;
    for (const auto& [ordinal, a] : block.allocations) {
      const auto it = aid_of.find(a.handle);
      if (it != aid_of.end() && it->second.value == a.aid) continue;
      kept.allocations.erase(ordinal);
      cni::LogInfo("cluster-ipam GC: releasing {} of block {} (handle {} {})",
                   AddressAt(block.block, ordinal).ToString(), block.block.ToString(), a.handle,
                   it == aid_of.end() ? "gone" : "reallocated");
    }
    if (kept.allocations.size() == block.allocations.size()) continue;
    txn.compare.push_back(Compare::ModRevision(kv.key, kv.mod_revision));
    // The handles judged gone must still be gone, and those judged other still the same.
    for (const auto& name : handles) {
      const auto it = aid_of.find(name);
      txn.compare.push_back(it == aid_of.end() ? Compare::Absent(keys_.HandlesPrefix() + name)
                                               : Compare::ModRevision(keys_.HandlesPrefix() + name,
                                                                      it->second.revision));
    }
    txn.success = {PutRequest{kv.key, EncodeBlock(kept)}};
    ++counters_.transactions;
    NG_ASSIGN_OR_RETURN(etcd::TxnResponse response, kv_.Txn(txn));
    if (!response.succeeded) {
      ++counters_.conflicts;  // changed meanwhile: the next GC judges it again
      continue;
    }
    counters_.released += static_cast<int>(block.allocations.size() - kept.allocations.size());
  }
  return OkStatus();
}

Status Allocator::Gc(const std::vector<cni::Attachment>& live) {
  (void)TakeCachedView();  // GC rewrites blocks of this node: the next ADD reads them
  NG_ASSIGN_OR_RETURN(
      etcd::RangeResponse listed,
      kv_.Range(Prefix(keys_.NodeHandlesPrefix(cfg_.node_name), false, /*keys_only=*/true)));
  std::vector<std::string> errors;
  for (const auto& kv : listed.kvs) {
    const auto handle = keys_.NodeHandleOf(cfg_.node_name, kv.key);
    if (!handle) continue;
    const std::string container_id = handle->first;
    const std::string ifname = handle->second;
    const bool is_live = std::any_of(live.begin(), live.end(), [&](const cni::Attachment& a) {
      return a.container_id == container_id && (a.ifname.empty() || a.ifname == ifname);
    });
    if (is_live) continue;
    if (Status s = Release(container_id, ifname); !s.ok()) {
      errors.push_back(container_id + "/" + ifname + ": " + s.error().msg);
      continue;
    }
    cni::LogInfo("cluster-ipam GC: released {}/{} (not a valid attachment)", container_id, ifname);
    // A handle already gone leaves its index key behind only by a hand edit: remove it too.
    TxnRequest cleanup;
    cleanup.compare = {Compare::Absent(keys_.Handle(container_id, ifname))};
    cleanup.success = {DeleteRequest{kv.key, ""}};
    if (auto done = kv_.Txn(cleanup); !done.ok()) errors.push_back(done.error().msg);
  }
  if (Status s = ReleaseOrphans(); !s.ok()) errors.push_back(s.error().msg);
  if (!errors.empty()) {
    return Error(kErrIo, "GC failed for " + std::to_string(errors.size()) +
                             " item(s): " + Join(errors, "; "));
  }
  return OkStatus();
}

Status Allocator::Availability() {
  auto view = Read("", "", /*serializable=*/true);
  if (!view.ok()) {
    return Error(kErrPluginNotAvailable, view.error().msg, view.error().details);
  }
  if (Status pool = CheckPool(*view); !pool.ok()) {
    return Error(kErrPluginNotAvailable, pool.error().msg, pool.error().details);
  }
  for (size_t s = 0; s < cfg_.pool.sets.size(); ++s) {
    bool room = false;
    for (const auto& [key, state] : view->blocks) {
      if (state.place.set == s && FreeOrdinal(state.block, RangeOf(state.place), {})) {
        room = true;
        break;
      }
    }
    if (room) continue;
    auto claimed = ListClaims();
    if (!claimed.ok()) return Error(kErrPluginNotAvailable, claimed.error().msg);
    const SetBlocks blocks(cfg_.pool.sets[s]);
    uint64_t claimed_here = 0;
    for (const auto& b : *claimed) {
      if (auto place = LocateBlock(cfg_.pool, b); place && place->set == s) ++claimed_here;
    }
    if (claimed_here < blocks.count()) continue;
    if (!cfg_.strict_affinity) {
      Plan plan;
      auto borrowed = Borrow(s, *view, plan, "status/status", "0000000000000000");
      if (!borrowed.ok()) return Error(kErrPluginNotAvailable, borrowed.error().msg);
      if (*borrowed) continue;
    }
    return Error(
        kErrPluginNotAvailable,
        "no IP addresses available in range set: " + cfg_.pool.sets[s].range_set.ToString(),
        "range set " + std::to_string(s) + " has no address left for node " + cfg_.node_name);
  }
  return OkStatus();
}

}  // namespace nodegate::ipam::cluster
