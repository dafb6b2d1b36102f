#include "webhook/claims/coordinator.h"

#include <functional>
#include <utility>

#include "admit/check/pod_facts.h"

namespace nodegate::webhook {
namespace {

// As steady-clock time: a claim lapses on this replica when it lapses on the writer's clock
// (clocks of a cluster's nodes agree to well under the assume time limit).
Clock::time_point SteadyFromWall(WallClock::time_point wall) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(wall - WallClock::now());
}

}  // namespace

Coordinator::Coordinator(NodeStates& states, ClaimStore& store, Clock::duration assume_ttl,
                         Clock::duration margin)
    : states_(states), store_(store), assume_ttl_(assume_ttl), margin_(margin) {}

std::mutex& Coordinator::LockFor(const std::string& node) {
  return node_locks_[std::hash<std::string>{}(node) % node_locks_.size()];
}

ClaimCounters Coordinator::counters() const {
  return ClaimCounters{recorded_.load(), conflicts_.load(), failed_.load()};
}

std::vector<StoredClaim> Coordinator::ClaimsToWrite(const LeaseState& read,
                                                    const admit::Pod& candidate) {
  const auto now = WallClock::now();
  const std::string mine = NodeStates::PodIdentity(candidate);
  std::vector<StoredClaim> out;
  for (const StoredClaim& claim : read.claims) {
    const std::string& id = claim.facts->uid;
    // Lapsed, or the watch shows the pod: it counts from the cache now.
    if (claim.expires > now && id != mine && !states_.Watched(id)) {
      out.push_back(claim);
    }
  }
  StoredClaim own;
  own.facts = admit::MakePodFacts(candidate, states_.gates(), /*already_on_node=*/false);
  own.expires = now + std::chrono::duration_cast<WallClock::duration>(assume_ttl_);
  own.by = store_.options().identity;
  out.push_back(std::move(own));
  return out;
}

CoordinatedVerdict Coordinator::Judge(const admit::Pod& candidate, bool dry_run,
                                      Clock::time_point deadline) {
  std::lock_guard lock(LockFor(candidate.node_name));
  CoordinatedVerdict out;
  out.judged = states_.JudgeCached(candidate, /*assume=*/false);
  if (!out.judged.node_known || !out.judged.verdict.admitted || dry_run) {
    return out;  // refused by what this replica knows, or a dry run: no claim to make
  }
  const Clock::time_point stop = deadline - margin_;
  std::string why;
  int conflicts = 0;
  while (Clock::now() < stop) {
    auto read = store_.Read(candidate.node_name, stop);
    if (!read.ok()) {
      why = read.error().msg;
      break;
    }
    std::vector<Claim> others;
    for (const StoredClaim& claim : read->claims) {
      others.push_back(Claim{claim.facts, SteadyFromWall(claim.expires)});
    }
    states_.AdoptClaims(candidate.node_name, others);
    out.judged = states_.JudgeCached(candidate, /*assume=*/false);
    if (!out.judged.node_known || !out.judged.verdict.admitted) {
      return out;  // another replica's claim took what the pod needs
    }
    auto wrote = store_.Write(candidate.node_name, *read, ClaimsToWrite(*read, candidate), stop);
    if (!wrote.ok()) {
      why = wrote.error().msg;
      break;
    }
    if (*wrote == WriteOutcome::kRecorded) {
      ++recorded_;
      states_.Assume(candidate);
      return out;
    }
    ++conflicts_;
    ++conflicts;
  }
  if (why.empty()) {
    why = "no time left after " + std::to_string(conflicts) + " conflicting write(s)";
  }
  ++failed_;
  states_.Assume(candidate);  // this replica at least counts it
  out.warning = "nodegate: allowed without agreement of the other webhook replicas (" + why + ")";
  return out;
}

}  // namespace nodegate::webhook
