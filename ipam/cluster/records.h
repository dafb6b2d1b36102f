#pragma once
// The values cluster-ipam stores in etcd (README.md, "Data model"), their JSON encoding and
// strict decoding. A decoder accepts exactly what an encoder of this format writes, with every
// name, address and number checked: a value another program wrote, or a hand-edited one, is
// refused with kErrStoreCorrupt naming the key, and the verb that read it changes nothing.
//
//   pool    {"format":1,"created":T,"rangeSets":[[{"subnet","rangeStart","rangeEnd","gateway",
//            "blockSize"}]]}
//   claim   {"format":1,"block":"10.244.0.64/26","node":"node-1","claimed":T}
//   block   {"format":1,"block":"10.244.0.64/26","node":"node-1","next":5,
//            "allocations":{"2":{"handle":"<id>/<ifname>","aid":"<16 hex>","node":"node-2"?}}}
//   handle  {"format":1,"network":N,"containerID":I,"ifname":F,"node":"node-1","aid":A,
//            "addresses":[{"ip","block","blockNode"}],"pod":{...}?,"created":T}
//
// "aid" is a random 64-bit allocation id, the same in a handle and in each of its block
// entries: a release removes an entry only when its aid is the handle's, so an address freed
// and taken again by another attachment in between is never released by a stale reader.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "ipam/cluster/pool.h"
#include "lib/base/result.h"
#include "lib/net/ip.h"

namespace nodegate::ipam::cluster {

// A stored value that is not one cluster-ipam writes (CNI plugin-specific code).
inline constexpr int kErrStoreCorrupt = 104;

inline constexpr int kFormat = 1;

// The attachment's pod, from CNI_ARGS (K8S_POD_NAMESPACE, K8S_POD_NAME, K8S_POD_UID,
// K8S_POD_INFRA_CONTAINER_ID); each empty when not given.
struct PodAttributes {
  std::string namespace_name;
  std::string name;
  std::string uid;
  std::string infra_container_id;
  bool empty() const {
    return namespace_name.empty() && name.empty() && uid.empty() && infra_container_id.empty();
  }
  bool operator==(const PodAttributes&) const = default;
};

struct Claim {
  net::IpPrefix block;
  std::string node;
  std::string claimed;  // RFC 3339 UTC
  bool operator==(const Claim&) const = default;
};

struct Allocation {
  std::string handle;  // "<container id>/<ifname>"
  std::string aid;
  std::string node;  // the attachment's node when it is not the block's (a borrowed address)
  bool operator==(const Allocation&) const = default;
};

struct Block {
  net::IpPrefix block;
  std::string node;
  uint64_t next = 0;  // where the next search starts (round robin, as host-local's cursor)
  std::map<uint64_t, Allocation> allocations;  // by ordinal
  bool operator==(const Block&) const = default;
};

struct HandleAddress {
  net::IpAddress ip;
  net::IpPrefix block;
  std::string block_node;
  bool operator==(const HandleAddress&) const = default;
};

struct Handle {
  std::string network;
  std::string container_id;
  std::string ifname;
  std::string node;
  std::string aid;
  std::vector<HandleAddress> addresses;
  PodAttributes pod;
  std::string created;
  std::string name() const { return container_id + "/" + ifname; }
  bool operator==(const Handle&) const = default;
};

std::string EncodePool(const Pool& pool, std::string_view created);
std::string EncodeClaim(const Claim& claim);
std::string EncodeBlock(const Block& block);
std::string EncodeHandle(const Handle& handle);

// Each names `key` in its errors. A decoded pool is canonical (host-local's checks) and every
// block size allowed; a block's ordinals are below its capacity; a handle's addresses lie in
// their blocks.
Result<Pool> DecodePool(std::string_view key, std::string_view value);
Result<Claim> DecodeClaim(std::string_view key, std::string_view value);
Result<Block> DecodeBlock(std::string_view key, std::string_view value);
Result<Handle> DecodeHandle(std::string_view key, std::string_view value);

// Two pools allocate the same addresses the same way (same sets, ranges, gateways, blocks).
bool SamePool(const Pool& a, const Pool& b);
// "range set 0: 10.244.0.0/16 blockSize 26" ... for messages.
std::string DescribePool(const Pool& pool);

// Node names as Kubernetes and hostnames have them: 1 to 253 of [A-Za-z0-9._-].
bool ValidNodeName(std::string_view name);
// A fresh allocation id: 16 lowercase hex digits from getrandom.
std::string NewAllocationId();
// Now, as "2026-12-06T05:00:00Z".
std::string NowRfc3339();

}  // namespace nodegate::ipam::cluster
