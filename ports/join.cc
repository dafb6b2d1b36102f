#include "ports/join.h"

#include <algorithm>
#include <map>
#include <string_view>
#include <tuple>

namespace nodegate::ports {
namespace {

// Every claim of one protocol and port: only these can overlap each other. The group refers to
// the claims (a node has tens of thousands; each row holds its own copies already).
using GroupKey = std::pair<std::string_view, int>;
struct Group {
  std::vector<const DeclaredClaim*> declared;
  std::vector<const MappedClaim*> mapped;
  std::vector<const ListeningClaim*> listening;
};

template <typename Claim>
bool AnyOverlaps(const PortKey& key, const std::vector<const Claim*>& claims) {
  return std::any_of(claims.begin(), claims.end(),
                     [&](const Claim* c) { return HostIpsOverlap(key.host_ip, c->key.host_ip); });
}

// A v4 and a v6 DNAT are separate rules for separate traffic, so only one family competes.
bool MappedByTwoContainers(const PortRow& row, const Group& group) {
  for (const MappedClaim& own : row.mapped) {
    const std::string* first = nullptr;
    for (const MappedClaim* other : group.mapped) {
      if (IsV6(other->key.host_ip) != IsV6(own.key.host_ip) ||
          !HostIpsOverlap(own.key.host_ip, other->key.host_ip)) {
        continue;
      }
      if (first == nullptr) {
        first = &other->container_id;
      } else if (*first != other->container_id) {
        return true;
      }
    }
  }
  return false;
}

bool IsMappingDeclared(const MappedClaim& mapping,
                       const std::vector<const DeclaredClaim*>& declared) {
  return std::any_of(declared.begin(), declared.end(), [&](const DeclaredClaim* d) {
    return HostIpsOverlap(mapping.key.host_ip, d->key.host_ip) &&
           (!mapping.pod || *mapping.pod == d->pod);
  });
}

Verdict DecideVerdict(const PortRow& row, const Group& group) {
  if (MappedByTwoContainers(row, group)) {
    return Verdict::kMappedTwice;
  }
  for (const MappedClaim& mapping : row.mapped) {
    if (!IsMappingDeclared(mapping, group.declared)) {
      return Verdict::kMappedNotDeclared;
    }
  }
  if (!row.declared.empty() && !AnyOverlaps(row.key, group.listening) &&
      !AnyOverlaps(row.key, group.mapped)) {
    return Verdict::kDeclaredNotListening;
  }
  if (!row.listening.empty() && !AnyOverlaps(row.key, group.declared)) {
    return Verdict::kListeningNotDeclared;
  }
  return Verdict::kOk;
}

// The rows in their output order: by port, then protocol, then host IP.
struct OutputOrder {
  bool operator()(const PortKey& a, const PortKey& b) const {
    return std::tie(a.port, a.protocol, a.host_ip) < std::tie(b.port, b.protocol, b.host_ip);
  }
};
using Rows = std::map<PortKey, PortRow, OutputOrder>;

PortRow& RowFor(Rows& rows, const PortKey& key) {
  PortRow& row = rows[key];
  row.key = key;
  return row;
}

}  // namespace

std::string_view VerdictName(Verdict verdict) {
  switch (verdict) {
    case Verdict::kOk:
      return "ok";
    case Verdict::kDeclaredNotListening:
      return "declared-not-listening";
    case Verdict::kListeningNotDeclared:
      return "listening-not-declared";
    case Verdict::kMappedNotDeclared:
      return "mapped-not-declared";
    case Verdict::kMappedTwice:
      return "mapped-twice";
  }
  return "ok";
}

std::vector<PortRow> JoinClaims(NodeClaims claims) {
  // The claims move into their rows; the groups then refer to them there.
  Rows rows;
  for (DeclaredClaim& c : claims.declared) {
    RowFor(rows, c.key).declared.push_back(std::move(c));
  }
  for (MappedClaim& c : claims.mapped) {
    RowFor(rows, c.key).mapped.push_back(std::move(c));
  }
  for (ListeningClaim& c : claims.listening) {
    RowFor(rows, c.key).listening.push_back(std::move(c));
  }
  std::map<GroupKey, Group> groups;
  for (const auto& [key, row] : rows) {
    Group& group = groups[{key.protocol, key.port}];
    for (const DeclaredClaim& c : row.declared) group.declared.push_back(&c);
    for (const MappedClaim& c : row.mapped) group.mapped.push_back(&c);
    for (const ListeningClaim& c : row.listening) group.listening.push_back(&c);
  }
  for (auto& [key, row] : rows) {
    row.verdict = DecideVerdict(row, groups[{key.protocol, key.port}]);
  }
  groups.clear();  // before the rows move out from under it
  std::vector<PortRow> out;
  out.reserve(rows.size());
  for (auto& [key, row] : rows) {
    out.push_back(std::move(row));
  }
  return out;
}

}  // namespace nodegate::ports
