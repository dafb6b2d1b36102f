#pragma once
// Coordinator: a review judged so that the webhook's replicas agree (claims.h says how the
// claims are kept). For a pod the cache would allow:
//   1. read the node's claims and count the other replicas' as assumed pods;
//   2. judge again; a pod that no longer fits is denied;
//   3. record the pod's claim with the version read; when another replica wrote first (409),
//      back to 1, as often as the review's deadline allows.
// A pod the cache alone refuses is denied at once, with no API call. When the claims cannot be
// read or written in time (the API server is slow or refuses), the verdict stands on this
// replica's knowledge and the review is allowed with a warning saying it was not coordinated:
// never a wait past the deadline. A dry run reads nothing and writes nothing: it is judged with
// the claims this replica has already seen.
//
// Reviews of one node are taken one at a time (a lock per node, hashed into 64), so this
// replica never races itself; other nodes' reviews go on in parallel.

#include <array>
#include <atomic>
#include <mutex>
#include <optional>
#include <string>

#include "webhook/claims/claims.h"
#include "webhook/state/node_states.h"

namespace nodegate::webhook {

struct CoordinatedVerdict {
  NodeVerdict judged;
  std::optional<std::string> warning;  // the review was allowed without agreement: why
};

struct ClaimCounters {
  uint64_t recorded = 0;   // claims written
  uint64_t conflicts = 0;  // writes another replica beat (each read and judged again)
  uint64_t failed = 0;     // reviews allowed uncoordinated (read/write failed or no time)
};

class Coordinator {
 public:
  // `margin`: the part of a review's time kept back for answering.
  Coordinator(NodeStates& states, ClaimStore& store, Clock::duration assume_ttl,
              Clock::duration margin = std::chrono::milliseconds(300));

  CoordinatedVerdict Judge(const admit::Pod& candidate, bool dry_run, Clock::time_point deadline);

  ClaimCounters counters() const;

 private:
  std::mutex& LockFor(const std::string& node);
  std::vector<StoredClaim> ClaimsToWrite(const LeaseState& read, const admit::Pod& candidate);

  NodeStates& states_;
  ClaimStore& store_;
  const Clock::duration assume_ttl_;
  const Clock::duration margin_;
  std::array<std::mutex, 64> node_locks_;
  std::atomic<uint64_t> recorded_{0}, conflicts_{0}, failed_{0};
};

}  // namespace nodegate::webhook
