#pragma once
// What `nodegate ipam` does with a network's pool (cmd/nodegate/ipam/ prints it):
//
//   ReadSnapshot  every key of the network, read in pages at one revision
//   Summarize     pools, blocks by node with their use, borrowed addresses
//   FindProblems  duplicates, entries and handles that disagree, index keys without handles,
//                 claims without blocks, values not ours; with a node's live attachments
//                 (its runtime's CNI cache) handles it no longer has; with the cluster's node
//                 names, blocks and handles of nodes that are gone
//   ReleaseNode   the blocks of a removed node, each only when no live handle holds an address
//                 in it (its handles too, when asked: the node's pods are gone with it)
//   ImportHostLocal  a node's host-local reservations recorded as its handles in the pool
//
// Every change is a transaction with the compares allocator.h describes: a concurrent ADD,
// DEL or GC is never overwritten, and an address a live handle holds is never released.

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ipam/cluster/allocator.h"
#include "ipam/cluster/config.h"
#include "ipam/cluster/keys.h"
#include "ipam/cluster/records.h"
#include "lib/etcd/kv.h"

namespace nodegate::ipam::cluster {

struct Snapshot {
  std::string network;
  int64_t revision = 0;
  std::optional<Pool> pool;
  struct ClaimEntry {
    std::string key;
    Claim claim;
    int64_t revision;
  };
  struct BlockEntry {
    std::string key;
    std::string node;  // from the key
    Block block;
    int64_t revision;
  };
  struct HandleEntry {
    std::string key;
    Handle handle;
    int64_t revision;
  };
  struct IndexEntry {
    std::string key;
    std::string node;
    std::string container_id;
    std::string ifname;
  };
  std::vector<ClaimEntry> claims;
  std::vector<BlockEntry> blocks;
  std::vector<HandleEntry> handles;
  std::vector<IndexEntry> index;
  std::vector<std::string> unreadable;  // "key: why"
};

Result<Snapshot> ReadSnapshot(etcd::Kv& kv, const Keys& keys, const std::string& network);

struct Usage {
  struct SetRow {
    size_t set = 0;
    std::string ranges;      // "10.244.0.0/16 blockSize 26"
    uint64_t blocks = 0;     // blocks of the set (capped as pool.h says)
    uint64_t claimed = 0;    // claimed blocks
    uint64_t addresses = 0;  // usable addresses in claimed blocks
    uint64_t allocated = 0;
  };
  struct NodeRow {
    std::string node;
    uint64_t blocks = 0;
    uint64_t addresses = 0;  // usable addresses in its blocks
    uint64_t allocated = 0;  // entries in its blocks, its own and lent
    uint64_t lent = 0;       // entries in its blocks held by other nodes' attachments
    uint64_t borrowed = 0;   // its attachments' addresses in other nodes' blocks
    uint64_t handles = 0;
  };
  struct BlockRow {
    net::IpPrefix block;
    std::string node;
    uint64_t addresses = 0;
    uint64_t allocated = 0;
    uint64_t lent = 0;
  };
  struct BorrowedRow {
    net::IpAddress ip;
    net::IpPrefix block;
    std::string block_node;
    std::string node;
    std::string handle;
  };
  std::string network;
  int64_t revision = 0;
  std::vector<SetRow> sets;
  std::vector<NodeRow> nodes;
  std::vector<BlockRow> blocks;
  std::vector<BorrowedRow> borrowed;
};

// The pool used is the stored one, else `configured`.
Usage Summarize(const Snapshot& snapshot, const Pool& configured);

struct Problem {
  std::string kind;     // duplicate, leaked, node-gone, orphan-entry, handle-mismatch,
                        // index-missing, index-stale, claim-mismatch, not-in-pool, unreadable
  std::string subject;  // the address, handle, block or key
  std::string detail;
};

struct CheckInputs {
  // With a node and the attachments its runtime has (network's cached attachments, as
  // "<container id>/<ifname>"): that node's handles not among them are "leaked".
  std::optional<std::string> node;
  std::optional<std::set<std::string>> live;
  // The cluster's nodes: blocks and handles of others are "node-gone".
  std::optional<std::set<std::string>> nodes;
};

std::vector<Problem> FindProblems(const Snapshot& snapshot, const Pool& configured,
                                  const CheckInputs& inputs);

struct NodeRelease {
  std::vector<std::string> released_handles;
  std::vector<net::IpPrefix> released_blocks;
  std::vector<std::pair<net::IpPrefix, std::string>> kept_blocks;  // block, why
};

// `cfg` names the network, prefix and pool; its node_name is ignored.
Result<NodeRelease> ReleaseNode(etcd::Kv& kv, const ClusterConfig& cfg, const std::string& node,
                                bool with_handles);

struct ImportEntry {
  net::IpAddress ip;
  std::string container_id;
  std::string ifname;
};

// host-local's reservations of `network` under `data_dir` (read under its lock, as the
// reference's files say: <ip> holding "<id>\r\n<ifname>"; an id-only legacy file gets
// `legacy_ifname`). Files whose names are not addresses are skipped.
Result<std::vector<ImportEntry>> ReadHostLocalState(const std::string& data_dir,
                                                    const std::string& network,
                                                    const std::string& legacy_ifname);

struct ImportOutcome {
  std::string handle;
  std::vector<net::IpAddress> ips;
  std::string error;  // empty: recorded (or already there)
};

// Records each attachment's addresses for `cfg.node_name` (Allocator::Assign). With dry_run,
// only says what it would do (whether each address lies in the pool).
std::vector<ImportOutcome> ImportHostLocal(etcd::Kv& kv, const ClusterConfig& cfg,
                                           const std::vector<ImportEntry>& entries, bool dry_run);

}  // namespace nodegate::ipam::cluster
