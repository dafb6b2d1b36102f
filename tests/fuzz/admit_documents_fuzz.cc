// admit's inputs (admit/api/load.h, decode.h): JSON or YAML text, single or multi-document,
// split into documents, then every document decoded as a Pod, a workload's pod template and a
// Node, and the pods of all of them collected with and without workloads.

#include "admit/api/decode.h"
#include "admit/api/load.h"
#include "tests/fuzz/fuzz_target.h"

NG_FUZZ_TARGET(admit_documents) {
  const auto documents = admit::ParseDocuments(data, "fuzz");
  if (!documents.ok()) {
    return;
  }
  for (const auto& document : *documents) {
    (void)admit::DecodePod(document.value, document.where);
    (void)admit::DecodePodTemplate(document.value, document.where);
    (void)admit::DecodeNode(document.value, document.where);
  }
  (void)admit::PodsFromDocuments(*documents, false);
  (void)admit::PodsFromDocuments(*documents, true);
}
