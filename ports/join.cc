#include "ports/join.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace nodegate::ports {
namespace {

// Every claim of one protocol and port: only these can overlap each other.
using GroupKey = std::pair<std::string, int>;

template <typename Claim>
bool AnyOverlaps(const PortKey& key, const std::vector<Claim>& claims) {
  return std::any_of(claims.begin(), claims.end(),
                     [&](const Claim& c) { return HostIpsOverlap(key.host_ip, c.key.host_ip); });
}

// A v4 and a v6 DNAT are separate rules for separate traffic, so only one family competes.
bool MappedByTwoContainers(const PortRow& row, const NodeClaims& group) {
  for (const MappedClaim& own : row.mapped) {
    std::set<std::string> containers;
    for (const MappedClaim& other : group.mapped) {
      if (IsV6(other.key.host_ip) == IsV6(own.key.host_ip) &&
          HostIpsOverlap(own.key.host_ip, other.key.host_ip)) {
        containers.insert(other.container_id);
      }
    }
    if (containers.size() > 1) {
      return true;
    }
  }
  return false;
}

bool IsMappingDeclared(const MappedClaim& mapping, const std::vector<DeclaredClaim>& declared) {
  return std::any_of(declared.begin(), declared.end(), [&](const DeclaredClaim& d) {
    return HostIpsOverlap(mapping.key.host_ip, d.key.host_ip) &&
           (!mapping.pod || *mapping.pod == d.pod);
  });
}

Verdict DecideVerdict(const PortRow& row, const NodeClaims& group) {
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

PortRow& RowFor(std::map<PortKey, PortRow>& rows, const PortKey& key) {
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

std::vector<PortRow> JoinClaims(const NodeClaims& claims) {
  std::map<GroupKey, NodeClaims> groups;
  std::map<PortKey, PortRow> rows;
  for (const DeclaredClaim& c : claims.declared) {
    groups[{c.key.protocol, c.key.port}].declared.push_back(c);
    RowFor(rows, c.key).declared.push_back(c);
  }
  for (const MappedClaim& c : claims.mapped) {
    groups[{c.key.protocol, c.key.port}].mapped.push_back(c);
    RowFor(rows, c.key).mapped.push_back(c);
  }
  for (const ListeningClaim& c : claims.listening) {
    groups[{c.key.protocol, c.key.port}].listening.push_back(c);
    RowFor(rows, c.key).listening.push_back(c);
  }
  std::vector<PortRow> out;
  out.reserve(rows.size());
  for (auto& [key, row] : rows) {
    row.verdict = DecideVerdict(row, groups[{key.protocol, key.port}]);
    out.push_back(std::move(row));
  }
  std::sort(out.begin(), out.end(), [](const PortRow& a, const PortRow& b) {
    return std::tie(a.key.port, a.key.protocol, a.key.host_ip) <
           std::tie(b.key.port, b.key.protocol, b.key.host_ip);
  });
  return out;
}

}  // namespace nodegate::ports
