#pragma once
// cluster-ipam's verbs on the datastore (README.md, "Data model" and "Why each step is safe").
// Every write is one etcd transaction whose compares make it apply only to the state it was
// computed from; a failed compare answers with the current state (its failure branch reads it)
// and the step is computed again, up to kMaxAttempts times within the etcd deadline.
//
//   ADD      one read (the pool, the handle, the node's blocks), then one transaction that
//            takes an address in a block of the node for each range set and writes the
//            blocks, the handle and its node index together. A node without room first claims
//            a free block (one more transaction); with no free block left, and strictAffinity
//            off, it borrows a free address in another node's block. The same handle gets
//            the same addresses again (idempotent), and a handle missing a range set's
//            address (a partial import) gets it.
//   DEL      one read, one transaction removing the handle, its index and its block entries
//            (only entries carrying the handle's allocation id). Nothing held: success.
//   CHECK    the handle's addresses, confirmed in their blocks and against prevResult.
//   GC       releases this node's handles not in the live list, and entries of this node's
//            blocks whose handle no longer exists.
//   STATUS   fails (code 50) when etcd does not answer, the stored pool differs from the
//            config, or a range set has no address left for this node.
//
// Works against any etcd::Kv: the real client, or the fake in testing/fake_kv.h.

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ipam/cluster/config.h"
#include "ipam/cluster/records.h"
#include "ipam/result.h"
#include "lib/base/result.h"
#include "lib/cni/conf.h"
#include "lib/cni/types.h"
#include "lib/etcd/kv.h"

namespace nodegate::ipam::cluster {

// Calico's datastoreRetries: attempts of one step against concurrent writers.
inline constexpr int kMaxAttempts = 100;

template <typename T>
struct Versioned {
  T value;
  int64_t revision = 0;  // the key's mod_revision when read
};

// A block that holds some address of a handle being released, as stored (revision 0: gone).
struct HeldBlock {
  std::string key;  // its node-block key
  net::IpPrefix block;
  Versioned<Block> stored;
};

// What a verb did, for logs and tests.
struct Counters {
  int transactions = 0;  // write transactions sent
  int conflicts = 0;     // of which failed their compares
  int claims = 0;        // blocks claimed
  int borrowed = 0;      // addresses taken in another node's block
  int released = 0;      // handles or entries released (DEL, GC)
};

class ViewCache;

class Allocator {
 public:
  Allocator(etcd::Kv& kv, const ClusterConfig& cfg) : kv_(kv), cfg_(cfg), keys_(cfg.keys()) {}

  // The agent's (agent.h): ADD starts from the view this node's previous ADD or DEL left in
  // `cache` instead of reading it (one etcd round trip fewer).
  void set_view_cache(ViewCache* cache) { cache_ = cache; }

  // One address per range set, in range-set order. Errors: 101 exhausted, 7 a stored pool
  // that differs from the config, 104 stored values not ours, 11 etcd unreachable or too many
  // conflicting writers.
  Result<std::vector<AddressInRange>> Add(const std::string& container_id,
                                          const std::string& ifname);
  Status Release(const std::string& container_id, const std::string& ifname);
  // Records `ips` (one per range set at most) for the attachment, as ADD would have chosen
  // them: an unclaimed block is claimed for this node, an address in another node's block is
  // borrowed. For `nodegate ipam import`. Already held by the attachment: nothing to do.
  // Errors: 102 an address held by another attachment, 7 an address outside the pool or two
  // of one range set.
  Result<std::vector<AddressInRange>> Assign(const std::string& container_id,
                                             const std::string& ifname,
                                             const std::vector<net::IpAddress>& ips);
  Status Check(const std::string& container_id, const std::string& ifname,
               const std::optional<cni::CniResult>& prev_result);
  Status Gc(const std::vector<cni::Attachment>& live);
  // STATUS's judgement: OK, or error 50 saying why ADD could not succeed now.
  Status Availability();

  const Counters& counters() const { return counters_; }

 private:
  struct View;
  struct Plan;

  // The pool, the handle (when container_id is not empty) and this node's blocks.
  Result<View> Read(const std::string& container_id, const std::string& ifname, bool serializable);
  Status DecodeNodeBlocks(const etcd::RangeResponse& range, View& view);
  Status CheckPool(const View& view) const;
  // The handle's addresses, each confirmed in its block as of one revision. nullopt: the
  // handle changed since `view` was read (read again).
  Result<std::optional<std::vector<AddressInRange>>> Confirm(const Handle& handle, View& view);
  // Claims some free block of `set` for this node. false: none is free. true: claimed, or
  // lost to a concurrent claimer (read the node's blocks again either way).
  Result<bool> ClaimBlock(size_t set, View& view);
  // Tries to claim this block for this node; false when the compare failed.
  Result<bool> TryClaim(const net::IpPrefix& block, const Place& place, View& view);
  // Writes the plan with the handle in one transaction. nullopt: a compare failed, and `view`
  // now holds what overtook it.
  Result<std::optional<std::vector<AddressInRange>>> Commit(View& view, const Plan& plan,
                                                            const std::string& container_id,
                                                            const std::string& ifname,
                                                            const std::string& aid);
  Status RefreshFromFailure(const etcd::TxnResponse& response,
                            const std::vector<std::string>& foreign, View& view);
  Result<std::set<net::IpPrefix>> ListClaims();
  // Takes a free address of another node's block of `set` into `plan` for the handle.
  Result<bool> Borrow(size_t set, View& view, Plan& plan, const std::string& handle_name,
                      const std::string& aid);
  // Which range sets of the pool the view's handle already holds an address of; an error when
  // it holds one outside the pool or two of one set.
  Result<std::vector<bool>> CoveredSets(const View& view, const std::string& handle_key) const;
  // Plans an address of every uncovered range set: from this node's blocks, a block claimed for
  // it, or another node's block. false: a block was claimed (or lost to a concurrent claimer),
  // so read the node's blocks again and plan afresh.
  Result<bool> PlanAddresses(const std::vector<bool>& covered, View& view, Plan& plan,
                             const std::string& handle_name, const std::string& aid);
  // Takes a free address of this node's blocks of `set` into `plan`; false when all are full.
  bool TakeFromOwnBlocks(size_t set, const View& view, Plan& plan, const std::string& handle_name,
                         const std::string& aid) const;
  // The blocks that hold the handle's addresses, from `own` (this node's blocks, read with the
  // handle) or else read now; a block that is gone has revision 0.
  Result<std::vector<HeldBlock>> HeldBlocks(const Handle& handle, const etcd::RangeResponse& own);
  // The blocks at these node-block keys; revision 0 for one that does not exist.
  Result<std::vector<Versioned<Block>>> ReadBlocks(
      const std::vector<std::pair<std::string, net::IpPrefix>>& where, bool serializable);
  std::optional<uint64_t> FreeOrdinal(const Block& block, const Range& range,
                                      const std::set<uint64_t>& taken) const;
  const Range& RangeOf(const Place& place) const;
  // PlacesOf: where each requested address is in the pool; an error for one outside it or two
  // of one range set.
  Result<std::vector<std::pair<Place, net::IpAddress>>> PlacesOf(
      const std::vector<net::IpAddress>& ips, const std::string& handle_name) const;
  Result<Place> PlaceOfBlock(const std::string& key, const net::IpPrefix& block) const;
  Status ReleaseOrphans();

  friend class ViewCache;
  // The cached view of this node (taken out of the cache: a verb that fails leaves none), and
  // what a successful write puts back.
  std::optional<View> TakeCachedView();
  void CacheView(const View& view, const std::map<std::string, Block>& written, int64_t revision);
  void PatchCachedView(const std::vector<std::pair<std::string, Block>>& written, int64_t revision);

  etcd::Kv& kv_;
  const ClusterConfig& cfg_;
  ViewCache* cache_ = nullptr;
  Keys keys_;
  Counters counters_;
  std::optional<std::set<net::IpPrefix>> claimed_;  // claims listed during this verb
};

// What the agent keeps between the verbs of its node, per network: the pool and the node's
// blocks with their revisions, as the node's own last successful ADD or DEL wrote them. A view
// gone stale (another node borrowed from a block, GC, an operator's release, an exec'd plugin
// working directly) costs one failed compare, whose failure branch brings the current state:
// never a wrong answer, as every write compares the revisions it was computed from. Not
// thread-safe: the agent runs one verb at a time.
class ViewCache {
 public:
  ViewCache();
  ~ViewCache();
  ViewCache(const ViewCache&) = delete;
  ViewCache& operator=(const ViewCache&) = delete;
  size_t size() const { return views_.size(); }

 private:
  friend class Allocator;
  std::map<std::string, std::unique_ptr<Allocator::View>> views_;  // by node-blocks prefix
};

}  // namespace nodegate::ipam::cluster
