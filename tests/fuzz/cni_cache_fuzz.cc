// libcni's result cache entries (runtime/chain/cache.h), which other tools write too.
// Invariant: an entry that decodes encodes and decodes again to the same entry.

#include "lib/base/base64.h"
#include "runtime/chain/cache.h"
#include "tests/fuzz/fuzz_support.h"
#include "tests/fuzz/fuzz_target.h"

namespace nodegate::fuzz {
namespace {

bool SameEntry(const runtime::CachedAttachment& a, const runtime::CachedAttachment& b) {
  return a.container_id == b.container_id && a.network_name == b.network_name &&
         a.ifname == b.ifname && a.netns == b.netns && a.config == b.config &&
         a.cni_args == b.cni_args && a.capability_args == b.capability_args && a.result == b.result;
}

}  // namespace
}  // namespace nodegate::fuzz

NG_FUZZ_TARGET(cni_cache) {
  const auto entry = runtime::DecodeCacheEntry(data);
  if (!entry.ok()) {
    CheckErrorPrints(entry.error());
    return;
  }
  const std::string encoded = runtime::EncodeCacheEntry(*entry);
  NG_FUZZ_CHECK(IsValidUtf8(encoded));
  const auto again = runtime::DecodeCacheEntry(encoded);
  NG_FUZZ_CHECK(again.ok() && SameEntry(*again, *entry));
  const auto base64 = Base64Decode(Base64Encode(entry->config));
  NG_FUZZ_CHECK(base64 && *base64 == entry->config);
}
