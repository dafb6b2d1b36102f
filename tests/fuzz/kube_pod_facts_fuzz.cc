// A pod as the API server sends it, read by the compact decoder that explain's and the
// webhook's caches use (kube/decode/objects.h: simdjson copies out what admit's decoder reads)
// against admit's decoder on the whole object: whatever the input, both agree on what the pod
// holds on a node (key, owner, priority, start time, requests, host ports), or the compact one
// refuses it. The input is one object, or a List whose items are each checked.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "admit/api/decode.h"
#include "admit/check/pod_facts.h"
#include "kube/decode/list_stream.h"
#include "kube/decode/objects.h"
#include "tests/fuzz/fuzz_target.h"

namespace {

void Check(nodegate::kube::ObjectDecoder& decoder, const nodegate::admit::FeatureGates& gates,
           std::string_view item) {
  auto record = decoder.Pod(item);
  if (!record.ok()) {
    return;
  }
  NG_FUZZ_CHECK(record->facts != nullptr);
  const nlohmann::json object = nlohmann::json::parse(item, nullptr, false);
  if (object.is_discarded()) {
    return;  // simdjson and nlohmann differ on some edge cases of the grammar
  }
  if (!record->required_anti_affinity.empty()) {
    NG_FUZZ_CHECK(nlohmann::json::parse(record->required_anti_affinity, nullptr, false).is_array());
  }
  auto pod = nodegate::admit::DecodePod(object, "pod");
  if (!pod.ok()) {
    return;
  }
  auto facts = nodegate::admit::MakePodFacts(*pod, gates, /*already_on_node=*/true);
  const nodegate::admit::PodFacts& got = *record->facts;
  NG_FUZZ_CHECK(facts->key == got.key);
  NG_FUZZ_CHECK(facts->owner == got.owner);
  NG_FUZZ_CHECK(facts->priority == got.priority);
  NG_FUZZ_CHECK(facts->start_time == got.start_time);
  NG_FUZZ_CHECK(facts->requests.milli_cpu == got.requests.milli_cpu);
  NG_FUZZ_CHECK(facts->requests.memory == got.requests.memory);
  NG_FUZZ_CHECK(facts->requests.scalar == got.requests.scalar);
  NG_FUZZ_CHECK(facts->ports.size() == got.ports.size());
  for (size_t i = 0; i < facts->ports.size(); ++i) {
    NG_FUZZ_CHECK(facts->ports[i].port == got.ports[i].port);
  }
}

}  // namespace

NG_FUZZ_TARGET(kube_pod_facts) {
  const nodegate::admit::FeatureGates gates;
  nodegate::kube::ObjectDecoder decoder(gates);
  Check(decoder, gates, data);
  std::vector<std::string> items;
  nodegate::kube::ListStream list([&](std::string_view item) { items.emplace_back(item); });
  if (list.Feed(data).ok() && list.Finish().ok()) {
    for (const std::string& item : items) {
      Check(decoder, gates, item);
    }
  }
}
