#pragma once
// Claims: how the webhook's replicas agree. A pod a replica allows is not in the API server's
// watch until the API server has stored it, so until then every replica must count it on its
// node: each allowed pod is recorded as a *claim* in a coordination.k8s.io/v1 Lease per node
// (`nodegate-claims-<node>` in the webhook's namespace), written with the resourceVersion it
// was read at. The API server refuses a write based on an older version (409 Conflict), so of
// two replicas racing for a node's last slot exactly one records its claim; the other reads the
// Lease again, counts the winner's claim and judges again (webhook/claims/coordinator.h).
//
// A claim holds the pod's PodFacts (what it holds on the node) and when it lapses (the assume
// time limit: the watch shows the pod well before); writers drop lapsed claims and claims of
// pods their watch already shows. The claims live in the Lease's annotation
// `nodegate.io/claims` (a JSON list), so `kubectl get lease -n nodegate -o yaml` shows them.
//
//   ClaimStore store(client, {"nodegate", "webhook-7d9f-abcde"});
//   auto lease = store.Read("node-1", deadline);
//   auto wrote = store.Write("node-1", *lease, claims, deadline);   // kRecorded / kConflict

#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "admit/framework/pod_facts.h"
#include "kube/client/client.h"
#include "lib/base/result.h"

namespace nodegate::webhook {

using WallClock = std::chrono::system_clock;

inline constexpr std::string_view kClaimsAnnotation = "nodegate.io/claims";
inline constexpr std::string_view kClaimsNodeAnnotation = "nodegate.io/node";
inline constexpr size_t kMaxClaimsPerLease = 1000;

struct StoredClaim {
  admit::PodFactsPtr facts;
  WallClock::time_point expires;
  std::string by;  // the replica that recorded it
};

struct LeaseState {
  bool exists = false;
  std::string resource_version;
  nlohmann::json object;  // as read (kept, so a write changes only what it owns)
  std::vector<StoredClaim> claims;
  size_t unreadable = 0;  // claims left out because they could not be read
};

struct ClaimsOptions {
  std::string namespace_name;
  std::string identity;  // this replica (the pod's name), written as holderIdentity and `by`
};

enum class WriteOutcome { kRecorded, kConflict };

class ClaimStore {
 public:
  ClaimStore(kube::ApiClient& client, ClaimsOptions options);

  // Read: the node's Lease and its claims (none when it does not exist yet).
  Result<LeaseState> Read(const std::string& node, kube::Clock::time_point deadline);
  // Write: the read Lease with `claims` in place of its claims (the caller's choice: the read
  // ones still wanted, and its new one); kConflict when another writer came first since the
  // read (read again and judge again).
  Result<WriteOutcome> Write(const std::string& node, const LeaseState& read,
                             const std::vector<StoredClaim>& claims,
                             kube::Clock::time_point deadline);

  const ClaimsOptions& options() const { return options_; }

 private:
  std::string LeasePath(const std::string& node) const;

  kube::ApiClient& client_;
  const ClaimsOptions options_;
};

// LeaseName: nodegate-claims-<node>, or, when that would pass the 253 characters of an object
// name, nodegate-claims-<sha512 of the node, 64 hex digits>.
std::string LeaseName(std::string_view node);

// The claim codec (exposed for tests and the fuzz target): a hostile or foreign value is an
// error, never a crash.
nlohmann::json EncodeClaim(const StoredClaim& claim);
Result<StoredClaim> DecodeClaim(const nlohmann::json& value);
// DecodeClaims: the annotation's text; unreadable entries are counted and left out.
Result<std::vector<StoredClaim>> DecodeClaims(std::string_view text, size_t* unreadable);

// RFC 3339 (UTC, seconds) and back; nullopt for anything else.
std::string FormatTime(WallClock::time_point t);
std::optional<WallClock::time_point> ParseTime(std::string_view text);

}  // namespace nodegate::webhook
