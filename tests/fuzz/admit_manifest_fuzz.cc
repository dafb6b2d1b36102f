// Static-pod manifests (admit/api/load.h): a folder the input describes (fuzz_support.h)
// loaded as the kubelet's file source reads it, and each file's text decoded on its own.

#include "admit/api/load.h"
#include "tests/fuzz/fuzz_support.h"
#include "tests/fuzz/fuzz_target.h"

NG_FUZZ_TARGET(admit_manifest) {
  const TempDir dir;
  const std::vector<InputFile> files = SplitFiles(data);
  WriteFiles(dir.path(), files);
  (void)admit::LoadManifestDir(dir.path(), "node-1");
  (void)admit::LoadManifestDir(dir.path(), "node-1", files.empty() ? "" : files.front().path);
  for (const auto& file : files) {
    (void)admit::DecodeManifest(file.content, file.path, "node-1");
  }
}
