// What the API server sends the webhook and `nodegate explain` (kube/decode/): a List response
// fed to ListStream in pieces, each item decoded by ObjectDecoder as a pod and as a node, and
// the same bytes as one watch event line. A hostile or broken API server (or a man in the
// middle of a misconfigured TLS setup) must give errors, never a crash. Invariants: every item
// handed over is balanced JSON text starting with '{' and ending with '}'; a decoded pod has
// facts with a NAMESPACE/NAME key; the split does not change what is decoded.

#include <string>
#include <vector>

#include "kube/decode/list_stream.h"
#include "kube/decode/objects.h"
#include "tests/fuzz/fuzz_target.h"

NG_FUZZ_TARGET(kube_list) {
  kube::ObjectDecoder decoder{admit::FeatureGates()};
  std::vector<std::string> whole;
  kube::ListStream at_once([&](std::string_view item) {
    NG_FUZZ_CHECK(item.size() >= 2 && item.front() == '{' && item.back() == '}');
    whole.emplace_back(item);
    auto pod = decoder.Pod(item);
    if (pod.ok()) {
      NG_FUZZ_CHECK(pod->facts != nullptr);
      NG_FUZZ_CHECK(pod->facts->key.find('/') != std::string::npos);
    }
    (void)decoder.Node(item);
  });
  const bool ok = at_once.Feed(data).ok() && at_once.Finish().ok();
  // The same bytes in pieces of 7: the same items, the same verdict.
  std::vector<std::string> pieces;
  kube::ListStream split([&](std::string_view item) { pieces.emplace_back(item); });
  bool split_ok = true;
  for (size_t off = 0; off < data.size() && split_ok; off += 7) {
    split_ok = split.Feed(data.substr(off, 7)).ok();
  }
  split_ok = split_ok && split.Finish().ok();
  NG_FUZZ_CHECK(ok == split_ok);
  if (ok) {
    NG_FUZZ_CHECK(pieces == whole);
  }
  for (kube::Kind kind : {kube::Kind::kPod, kube::Kind::kNode}) {
    auto event = decoder.Event(data, kind);
    if (event.ok() && event->pod) {
      NG_FUZZ_CHECK(event->pod->facts != nullptr);
    }
  }
}
