// The config keys every plugin shares (lib/cni/conf.h): ParseNetConf with the common shape in
// both strictnesses (DEL reads only name and version), prevResult in the config's version,
// GC's valid-attachments list. A parsed prevResult must encode in the config's version.

#include "lib/cni/conf.h"
#include "lib/cni/types.h"
#include "tests/fuzz/fuzz_support.h"
#include "tests/fuzz/fuzz_target.h"

NG_FUZZ_TARGET(cni_netconf) {
  const auto del = cni::ParseNetConf(data, cni::NetConfShape(), cni::Strictness::kNameAndVersion);
  const auto conf = cni::ParseNetConf(data);
  if (!conf.ok()) {
    CheckErrorPrints(conf.error());
    return;
  }
  // What the whole config reads, DEL's partial read reads too.
  NG_FUZZ_CHECK(del.ok() && del->name == conf->name && del->cni_version == conf->cni_version);
  if (conf->prev_result) {
    const auto encoded = cni::EncodeResult(*conf->prev_result, conf->cni_version);
    if (!encoded.ok()) {
      CheckErrorPrints(encoded.error());
    }
  }
  const auto attachments = cni::ParseValidAttachments(conf->raw);
  if (!attachments.ok()) {
    CheckErrorPrints(attachments.error());
  }
}
