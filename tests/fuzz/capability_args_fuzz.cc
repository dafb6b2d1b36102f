// The `nodegate cni` flags that become capability arguments (cmd/nodegate/cni/capability_args.h):
// -p port mappings, --bandwidth and its rates and bursts in tc's units. Every parser gets the
// whole input. Invariant: what parses prints as valid UTF-8 JSON.

#include "cmd/nodegate/cni/capability_args.h"
#include "tests/fuzz/fuzz_support.h"
#include "tests/fuzz/fuzz_target.h"

namespace nodegate::fuzz {
namespace {

template <typename T>
void CheckParsed(const Result<T>& parsed) {
  if (!parsed.ok()) {
    CheckErrorPrints(parsed.error());
  }
}

void CheckJson(const Result<cni::Json>& parsed) {
  CheckParsed(parsed);
  if (parsed.ok()) {
    NG_FUZZ_CHECK(IsValidUtf8(parsed->dump()));
  }
}

}  // namespace
}  // namespace nodegate::fuzz

NG_FUZZ_TARGET(capability_args) {
  CheckJson(runtime::ParsePortMapping(data));
  CheckJson(runtime::ParseBandwidth(data));
  CheckParsed(runtime::ParseRate(data));
  CheckParsed(runtime::ParseBurstBits(data));
}
