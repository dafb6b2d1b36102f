#include "ipam/cluster/keys.h"

#include <charconv>

namespace nodegate::ipam::cluster {
namespace {

std::optional<std::string_view> After(std::string_view key, std::string_view prefix) {
  if (key.substr(0, prefix.size()) != prefix) return std::nullopt;
  return key.substr(prefix.size());
}

std::optional<std::pair<std::string, std::string>> SplitHandle(std::string_view rest) {
  const size_t slash = rest.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == rest.size() ||
      rest.find('/', slash + 1) != std::string_view::npos) {
    return std::nullopt;
  }
  return std::make_pair(std::string(rest.substr(0, slash)), std::string(rest.substr(slash + 1)));
}

}  // namespace

std::string BlockName(const net::IpPrefix& block) {
  return block.address().ToString() + "-" + std::to_string(block.length());
}

std::optional<net::IpPrefix> ParseBlockName(std::string_view name) {
  const size_t dash = name.rfind('-');
  if (dash == std::string_view::npos) return std::nullopt;
  auto ip = net::IpAddress::Parse(name.substr(0, dash));
  const std::string_view length_text = name.substr(dash + 1);
  int length = -1;
  const auto [end, ec] =
      std::from_chars(length_text.data(), length_text.data() + length_text.size(), length);
  if (!ip || ec != std::errc() || end != length_text.data() + length_text.size() || length < 0 ||
      length > ip->bit_length()) {
    return std::nullopt;
  }
  net::IpPrefix block(*ip, length);
  // Only the name we write: the network address, in canonical text.
  if (block.Network() != *ip || BlockName(block) != name) return std::nullopt;
  return block;
}

Keys::Keys(std::string_view prefix, std::string_view network) {
  while (!prefix.empty() && prefix.back() == '/') prefix.remove_suffix(1);
  root_ = std::string(prefix) + "/" + std::string(network) + "/";
}

std::optional<net::IpPrefix> Keys::BlockOfClaim(std::string_view key) const {
  const auto rest = After(key, ClaimsPrefix());
  if (!rest) return std::nullopt;
  return ParseBlockName(*rest);
}

std::optional<std::pair<std::string, net::IpPrefix>> Keys::NodeBlockOf(std::string_view key) const {
  const auto rest = After(key, NodesPrefix());
  if (!rest) return std::nullopt;
  const size_t slash = rest->find("/blocks/");
  if (slash == std::string_view::npos || slash == 0) return std::nullopt;
  const std::string_view node = rest->substr(0, slash);
  if (node.find('/') != std::string_view::npos) return std::nullopt;
  const auto block = ParseBlockName(rest->substr(slash + 8));
  if (!block) return std::nullopt;
  return std::make_pair(std::string(node), *block);
}

std::optional<std::pair<std::string, std::string>> Keys::HandleOf(std::string_view key) const {
  const auto rest = After(key, HandlesPrefix());
  if (!rest) return std::nullopt;
  return SplitHandle(*rest);
}

std::optional<std::pair<std::string, std::string>> Keys::NodeHandleOf(std::string_view node,
                                                                      std::string_view key) const {
  const auto rest = After(key, NodeHandlesPrefix(node));
  if (!rest) return std::nullopt;
  return SplitHandle(*rest);
}

}  // namespace nodegate::ipam::cluster
