#pragma once
// The join of a node's three kinds of host-port claims into one row per (host IP, protocol,
// port), each with a verdict. Claims on the same protocol and port whose host IPs overlap
// (ports/claims.h HostIpsOverlap) judge each other even when they sit in different rows: a
// port declared on 0.0.0.0 is served by a listener on 10.0.0.5 or on "::". The first rule that
// holds is the verdict:
//
//   mapped-twice            mappings of two or more containers overlap one of the row's
//                           mappings in the same family: only the first DNAT gets traffic;
//   mapped-not-declared     one of the row's mappings has no overlapping declared claim of its
//                           pod (of any pod when the CNI cache does not name its pod): a
//                           leaked DNAT, or one that steals the declaring pod's traffic;
//   declared-not-listening  the row has a declared claim and no overlapping listener or
//                           mapping serves it (portmap's DNAT answers, so a mapping serves);
//   listening-not-declared  the row has a listener and no overlapping declared claim;
//   ok                      otherwise.

#include <string_view>
#include <vector>

#include "ports/claims.h"

namespace nodegate::ports {

enum class Verdict {
  kOk,
  kDeclaredNotListening,
  kListeningNotDeclared,
  kMappedNotDeclared,
  kMappedTwice,
};

// "ok", "declared-not-listening", ... (the JSON contract of issue 12).
std::string_view VerdictName(Verdict verdict);

struct NodeClaims {
  std::vector<DeclaredClaim> declared;
  std::vector<MappedClaim> mapped;
  std::vector<ListeningClaim> listening;
};

struct PortRow {
  PortKey key;
  Verdict verdict = Verdict::kOk;
  std::vector<DeclaredClaim> declared;
  std::vector<MappedClaim> mapped;
  std::vector<ListeningClaim> listening;
};

// Rows ordered by port, then protocol, then host IP. The claims move into the rows.
std::vector<PortRow> JoinClaims(NodeClaims claims);

}  // namespace nodegate::ports
