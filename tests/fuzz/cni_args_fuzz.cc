// CNI_ARGS ("K=V;K2=V2", lib/cni/args.h) as the dispatcher checks it and as a plugin parses it
// against the keys it knows (host-local's IP=, the keys Kubernetes runtimes send).
// Invariants: a parsed string passes the syntax check; a known key reads as its last value.

#include <string>
#include <string_view>
#include <vector>

#include "lib/cni/args.h"
#include "tests/fuzz/fuzz_support.h"
#include "tests/fuzz/fuzz_target.h"

namespace nodegate::fuzz {
namespace {

const std::vector<std::string>& KnownKeys() {
  static const std::vector<std::string> keys = {"IP", "K8S_POD_NAME", "K8S_POD_NAMESPACE",
                                                "K8S_POD_INFRA_CONTAINER_ID", "K8S_POD_UID"};
  return keys;
}

// The value the last "key=..." piece gives, by a plain scan of the text.
std::optional<std::string> LastValue(std::string_view text, std::string_view key) {
  std::optional<std::string> value;
  while (true) {
    const size_t end = text.find(';');
    const std::string_view piece = text.substr(0, end);
    if (piece.size() > key.size() && piece.starts_with(key) && piece[key.size()] == '=') {
      value = std::string(piece.substr(key.size() + 1));
    }
    if (end == std::string_view::npos) {
      return value;
    }
    text.remove_prefix(end + 1);
  }
}

}  // namespace
}  // namespace nodegate::fuzz

NG_FUZZ_TARGET(cni_args) {
  const auto syntax = cni::CniArgs::CheckSyntax(data);
  const auto args = cni::CniArgs::Parse(data, KnownKeys());
  if (!args.ok()) {
    CheckErrorPrints(args.error());
    return;
  }
  NG_FUZZ_CHECK(syntax.ok());
  for (const std::string& key : KnownKeys()) {
    NG_FUZZ_CHECK(args->Get(key) == LastValue(data, key));
  }
}
