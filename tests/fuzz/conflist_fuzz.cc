// Network configuration lists as the runtime side loads them (runtime/conflist/conflist.h):
// the input as a .conflist and as a single-plugin .conf. Invariant: the bytes a list keeps
// for libcni's cache (the upconverted list for a .conf) parse again to the same list.

#include "runtime/conflist/conflist.h"
#include "tests/fuzz/fuzz_support.h"
#include "tests/fuzz/fuzz_target.h"

namespace nodegate::fuzz {
namespace {

void CheckList(const Result<runtime::NetworkConfigList>& list) {
  if (!list.ok()) {
    CheckErrorPrints(list.error());
    return;
  }
  for (const auto& plugin : list->plugins) {
    (void)runtime::PluginDescription(plugin);
  }
  const auto again = runtime::ParseConfList(list->bytes);
  NG_FUZZ_CHECK(again.ok());
  NG_FUZZ_CHECK(again->name == list->name && again->cni_version == list->cni_version);
  NG_FUZZ_CHECK(again->plugins.size() == list->plugins.size());
}

}  // namespace
}  // namespace nodegate::fuzz

NG_FUZZ_TARGET(conflist) {
  CheckList(runtime::ParseConfList(data));
  CheckList(runtime::ParseSingleConf(data));
}
