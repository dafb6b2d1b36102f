#pragma once
// The iptables backend's rules as data: what the reference plugin installs in table nat
// (observed from Debian's reference portmap, v1.1.1; README.md shows the layout), built
// without touching the kernel, so tests can compare them with the reference's observed
// `iptables-save` lines.
//
//   PREROUTING, OUTPUT --(-m addrtype --dst-type LOCAL)--> CNI-HOSTPORT-DNAT
//   CNI-HOSTPORT-DNAT  --(-p P -m comment -m multiport --dports ...)--> CNI-DN-<hash>
//   CNI-DN-<hash>:  [-s hairpin/127.0.0.1 -j CNI-HOSTPORT-SETMARK] -j DNAT --to-destination
//   POSTROUTING (first) --> CNI-HOSTPORT-MASQ: -m mark --mark M/M -j MASQUERADE
//   CNI-HOSTPORT-SETMARK: -j MARK --set-xmark M/M
//
// These names never change: a node that ran the reference (or an older nodegate) is cleaned up
// and checked by name.

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "lib/base/result.h"
#include "lib/net/ip.h"
#include "plugins/portmap/config.h"

namespace nodegate::portmap::ipt {

inline constexpr char kTable[] = "nat";
inline constexpr char kDnatChain[] = "CNI-HOSTPORT-DNAT";
inline constexpr char kSetMarkChain[] = "CNI-HOSTPORT-SETMARK";
inline constexpr char kMasqChain[] = "CNI-HOSTPORT-MASQ";
inline constexpr char kLegacySnatChain[] = "CNI-HOSTPORT-SNAT";
inline constexpr char kSetMarkComment[] = "CNI portfwd masquerade mark";
inline constexpr char kMasqComment[] = "CNI portfwd requiring masquerade";
// Ports per multiport match (the kernel's XT_MULTI_PORTS).
inline constexpr size_t kMultiportMax = 15;

// Header, the ip/ip6 part of a rule, is in config.h (iptables conditions are parsed into one).

struct CommentMatch {
  std::string text;
  bool operator==(const CommentMatch&) const = default;
};
// -m tcp|udp|sctp --dport N (iptables loads it implicitly for -p P --dport N).
struct PortMatch {
  Protocol protocol = Protocol::kTcp;
  int dport = 0;
  bool operator==(const PortMatch&) const = default;
};
struct MultiportMatch {
  std::vector<int> dports;
  bool operator==(const MultiportMatch&) const = default;
};
struct AddrtypeLocalMatch {  // -m addrtype --dst-type LOCAL
  bool operator==(const AddrtypeLocalMatch&) const = default;
};
struct MarkMatch {
  uint32_t mark = 0;
  uint32_t mask = 0;
  bool operator==(const MarkMatch&) const = default;
};
using Match = std::variant<CommentMatch, PortMatch, MultiportMatch, AddrtypeLocalMatch, MarkMatch>;

// -j ACCEPT (the bridge plugin's masquerade chains): a JumpTarget to this name, printed as
// iptables-save prints it; each writer encodes it as the standard verdict it is.
inline constexpr char kAcceptTarget[] = "ACCEPT";

struct JumpTarget {
  std::string chain;
  bool operator==(const JumpTarget&) const = default;
};
struct SetMarkTarget {  // -j MARK --set-xmark value/mask
  uint32_t value = 0;
  uint32_t mask = 0;
  bool operator==(const SetMarkTarget&) const = default;
};
struct MasqueradeTarget {
  bool operator==(const MasqueradeTarget&) const = default;
};
struct DnatTarget {
  net::IpAddress address;
  int port = 0;
  bool operator==(const DnatTarget&) const = default;
};
using Target = std::variant<JumpTarget, SetMarkTarget, MasqueradeTarget, DnatTarget>;

struct Rule {
  Header header;
  std::vector<Match> matches;
  Target target;
  bool operator==(const Rule&) const = default;

  // The rule as `iptables-save` prints it after "-A <chain> ".
  std::string ToString() const;
};

// A rule that must be present in a shared chain; added only when absent.
struct SharedRule {
  std::string chain;
  Rule rule;
  bool insert_first = false;  // POSTROUTING's jump goes first, the rest are appended
};

// Everything ADD and CHECK need for one family, in the reference's insertion order.
struct Plan {
  net::Family family = net::Family::kV4;
  std::vector<std::string> shared_chains;  // created when missing
  std::vector<SharedRule> shared_rules;
  std::string container_chain;        // CNI-DN-<hash>
  std::vector<Rule> container_rules;  // the whole content of container_chain
  std::vector<Rule> entry_rules;      // this container's rules in CNI-HOSTPORT-DNAT
};

// "CNI-DN-" + sha512(name + id), 28 characters; "CNI-SN-..." for the legacy SNAT chain.
std::string ContainerChainName(const std::string& network_name, const std::string& container_id);
std::string LegacySnatChainName(const std::string& network_name, const std::string& container_id);
// `dnat name: "<name>" id: "<id>"`, cut to the kernel's comment size.
std::string EntryComment(const std::string& network_name, const std::string& container_id);
// Inverse of EntryComment; nullopt for other comments or cut ones.
struct CommentOwner {
  std::string network_name;
  std::string container_id;
};
std::optional<CommentOwner> ParseEntryComment(const std::string& comment);

// The ADD plan for `family`; requires config.container(family).
Plan BuildPlan(const Config& config, net::Family family);

// conditionsV4/V6 in iptables syntax, reduced to the header fields libiptc can express
// without iptables' extension loader: [!] -s/--source, [!] -d/--destination,
// [!] -i/--in-interface, [!] -o/--out-interface. Anything else is an error (invalid config).
// ParseConfig calls it once; BuildPlan reads the result from Config::conditions().
Result<Header> ParseIptablesConditions(const std::vector<std::string>& tokens, net::Family family);

}  // namespace nodegate::portmap::ipt
