#pragma once
// Where cluster-ipam keeps one network's pool in etcd (README.md, "Data model"). With P the
// configured prefix (default /nodegate/ipam) and N the network's name:
//
//   P/N/pool                               the pool: range sets and block sizes
//   P/N/blocks/<block>                     a block's claim: which node has it
//   P/N/nodes/<node>/blocks/<block>        that block's allocations (the compare-and-swap unit)
//   P/N/handles/<container id>/<ifname>    an attachment's addresses
//   P/N/nodes/<node>/handles/<id>/<ifname> the same attachment, listed under its node (GC)
//
// <block> is the block's CIDR with "/" written as "-": 10.244.0.64-26, fd00:244::40-122.
// Container IDs, interface and node names never hold "/" (they are checked before use), so
// every key parses back to what it names.

#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "lib/net/ip.h"

namespace nodegate::ipam::cluster {

inline constexpr std::string_view kDefaultPrefix = "/nodegate/ipam";

// "10.244.0.64-26" for 10.244.0.64/26, and back (nullopt for anything else).
std::string BlockName(const net::IpPrefix& block);
std::optional<net::IpPrefix> ParseBlockName(std::string_view name);

class Keys {
 public:
  // `prefix` as configured ("/nodegate/ipam", trailing slashes ignored).
  Keys(std::string_view prefix, std::string_view network);

  const std::string& network_root() const { return root_; }  // "P/N/"
  std::string Pool() const { return root_ + "pool"; }
  std::string ClaimsPrefix() const { return root_ + "blocks/"; }
  std::string Claim(const net::IpPrefix& block) const { return ClaimsPrefix() + BlockName(block); }
  std::string NodesPrefix() const { return root_ + "nodes/"; }
  std::string NodeBlocksPrefix(std::string_view node) const {
    return NodesPrefix() + std::string(node) + "/blocks/";
  }
  std::string NodeBlock(std::string_view node, const net::IpPrefix& block) const {
    return NodeBlocksPrefix(node) + BlockName(block);
  }
  std::string HandlesPrefix() const { return root_ + "handles/"; }
  std::string Handle(std::string_view container_id, std::string_view ifname) const {
    return HandlesPrefix() + std::string(container_id) + "/" + std::string(ifname);
  }
  std::string NodeHandlesPrefix(std::string_view node) const {
    return NodesPrefix() + std::string(node) + "/handles/";
  }
  std::string NodeHandle(std::string_view node, std::string_view container_id,
                         std::string_view ifname) const {
    return NodeHandlesPrefix(node) + std::string(container_id) + "/" + std::string(ifname);
  }

  // The block a claim key or a node-block key names.
  std::optional<net::IpPrefix> BlockOfClaim(std::string_view key) const;
  // (node, block) of a node-block key.
  std::optional<std::pair<std::string, net::IpPrefix>> NodeBlockOf(std::string_view key) const;
  // (container id, ifname) of a handle key, or of a node-handle key under `node`.
  std::optional<std::pair<std::string, std::string>> HandleOf(std::string_view key) const;
  std::optional<std::pair<std::string, std::string>> NodeHandleOf(std::string_view node,
                                                                  std::string_view key) const;

 private:
  std::string root_;
};

}  // namespace nodegate::ipam::cluster
