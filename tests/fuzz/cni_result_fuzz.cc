// The result model: a plugin result or prevResult of any version (lib/cni/types.h) decoded,
// converted to every version, and the JSON reader under it (lib/cni/go_json.h Decode, Refold).
// Invariants: what decodes prints as valid UTF-8; each version's encoding is a fixed point
// (decoding it and encoding again in that version gives the same JSON); Refold is idempotent.

#include <string>

#include "lib/cni/go_json.h"
#include "lib/cni/types.h"
#include "lib/cni/version.h"
#include "tests/fuzz/fuzz_support.h"
#include "tests/fuzz/fuzz_target.h"

namespace nodegate::fuzz {
namespace {

// Decoding `version`'s encoding and encoding it again in `version` changes nothing.
void CheckFixedPoint(const cni::OrderedJson& encoded, const std::string& version) {
  const std::string printed = cni::FormatJson(encoded);
  NG_FUZZ_CHECK(IsValidUtf8(printed));
  const auto reread = cni::gojson::Decode(encoded.dump(), cni::ResultShape());
  NG_FUZZ_CHECK(reread.ok());
  const auto redecoded = cni::DecodeResult(*reread, version);
  NG_FUZZ_CHECK(redecoded.ok());
  const auto reencoded = cni::EncodeResult(*redecoded, version);
  NG_FUZZ_CHECK(reencoded.ok() && *reencoded == encoded);
}

void ConvertToEveryVersion(const cni::CniResult& result) {
  for (const std::string& version : cni::AllVersions()) {
    const auto encoded = cni::EncodeResult(result, version);
    if (encoded.ok()) {
      CheckFixedPoint(*encoded, version);
    } else {
      CheckErrorPrints(encoded.error());
    }
  }
}

}  // namespace
}  // namespace nodegate::fuzz

NG_FUZZ_TARGET(cni_result) {
  const auto json = cni::gojson::Decode(data, cni::ResultShape());
  if (!json.ok()) {
    CheckErrorPrints(json.error());
    return;
  }
  (void)json->dump();  // throws on invalid UTF-8: Decode must have replaced it
  const cni::Json refolded = cni::gojson::Refold(*json, cni::ResultShape());
  NG_FUZZ_CHECK(cni::gojson::Refold(refolded, cni::ResultShape()) == refolded);

  const auto result = cni::DecodeResult(*json, "1.1.0");
  if (result.ok()) {
    ConvertToEveryVersion(*result);
  } else {
    CheckErrorPrints(result.error());
  }
  for (const std::string& version : cni::AllVersions()) {
    const auto prev = cni::DecodePrevResult(*json, version);
    if (prev.ok()) {
      ConvertToEveryVersion(*prev);
    } else {
      CheckErrorPrints(prev.error());
    }
  }
}
