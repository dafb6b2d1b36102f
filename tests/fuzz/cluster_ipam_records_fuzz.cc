// The values cluster-ipam reads from etcd (ipam/cluster/records.h), as anyone with write
// access to etcd may have left them: the input is decoded as a pool, a claim, a block and a
// handle. Each decoder either refuses it with a printable error naming the key, or gives a
// value whose encoding decodes to the same value. Block and handle names in keys are parsed
// too (keys.h).

#include "ipam/cluster/keys.h"
#include "ipam/cluster/records.h"
#include "tests/fuzz/fuzz_support.h"
#include "tests/fuzz/fuzz_target.h"

namespace nodegate::fuzz {
namespace {

constexpr char kKey[] = "/nodegate/ipam/fuzz/nodes/n1/blocks/10.0.0.0-26";

template <typename T, typename Decode, typename Encode>
void RoundTrip(std::string_view data, Decode decode, Encode encode) {
  const Result<T> decoded = decode(kKey, data);
  if (!decoded.ok()) {
    CheckErrorPrints(decoded.error());
    NG_FUZZ_CHECK(decoded.error().msg.rfind(kKey, 0) == 0);
    return;
  }
  const Result<T> again = decode(kKey, encode(*decoded));
  NG_FUZZ_CHECK(again.ok() && *again == *decoded);
}

}  // namespace
}  // namespace nodegate::fuzz

NG_FUZZ_TARGET(cluster_ipam_records) {
  using namespace nodegate::ipam::cluster;
  RoundTrip<Claim>(data, DecodeClaim, EncodeClaim);
  RoundTrip<Block>(data, DecodeBlock, EncodeBlock);
  RoundTrip<Handle>(data, DecodeHandle, EncodeHandle);
  const auto pool = DecodePool(kKey, data);
  if (!pool.ok()) {
    CheckErrorPrints(pool.error());
  } else {
    const auto again = DecodePool(kKey, EncodePool(*pool, "2026-12-06T05:00:00Z"));
    NG_FUZZ_CHECK(again.ok() && SamePool(*again, *pool));
  }
  const Keys keys("/nodegate/ipam", "fuzz");
  const std::string key(data.substr(0, 512));
  if (const auto block = ParseBlockName(key)) NG_FUZZ_CHECK(BlockName(*block) == key);
  if (const auto handle = keys.HandleOf(key)) {
    NG_FUZZ_CHECK(keys.Handle(handle->first, handle->second) == key);
  }
  (void)keys.NodeBlockOf(key);
  (void)keys.BlockOfClaim(key);
}
