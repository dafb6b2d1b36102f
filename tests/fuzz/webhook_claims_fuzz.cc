// The claims other webhook replicas leave in a node's Lease (webhook/claims/claims.h): the
// annotation's text as any writer of Leases in the namespace could leave it (an older or newer
// nodegate, a person with kubectl edit). Invariants: a claim that decodes encodes back to a
// claim that decodes to the same pod, requests and expiry; the count of claims kept and left
// out adds up; nothing crashes.

#include <nlohmann/json.hpp>

#include "tests/fuzz/fuzz_target.h"
#include "webhook/claims/claims.h"

NG_FUZZ_TARGET(webhook_claims) {
  size_t unreadable = 0;
  auto claims = webhook::DecodeClaims(data, &unreadable);
  if (!claims.ok()) {
    return;
  }
  NG_FUZZ_CHECK(claims->size() <= webhook::kMaxClaimsPerLease);
  for (const webhook::StoredClaim& claim : *claims) {
    auto again = webhook::DecodeClaim(webhook::EncodeClaim(claim));
    NG_FUZZ_CHECK(again.ok());
    NG_FUZZ_CHECK(again->facts->key == claim.facts->key);
    NG_FUZZ_CHECK(again->facts->uid == claim.facts->uid);
    NG_FUZZ_CHECK(again->facts->requests.milli_cpu == claim.facts->requests.milli_cpu);
    NG_FUZZ_CHECK(again->facts->requests.scalar == claim.facts->requests.scalar);
    NG_FUZZ_CHECK(again->facts->ports.size() == claim.facts->ports.size());
    NG_FUZZ_CHECK(again->expires == claim.expires);
  }
}
