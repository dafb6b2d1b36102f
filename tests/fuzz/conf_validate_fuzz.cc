// `nodegate conf validate` over a folder the input describes (fuzz_support.h: several
// .conflist/.conf/.json files, or anything else), with our plugins' own validators and no
// plugin execution. Invariant: the JSON report, which tools read, is valid UTF-8 whatever the
// files hold. The text report is for a terminal and shows names as they are.

#include "runtime/validate/our_plugins.h"
#include "runtime/validate/validate.h"
#include "tests/fuzz/fuzz_support.h"
#include "tests/fuzz/fuzz_target.h"

NG_FUZZ_TARGET(conf_validate) {
  const TempDir dir;
  WriteFiles(dir.path(), SplitFiles(data));
  const runtime::ValidateOptions options{.validators = runtime::OurPluginValidators()};
  const runtime::Report report = runtime::ValidatePaths({dir.path()}, options);
  (void)runtime::FormatReportText(report);
  NG_FUZZ_CHECK(IsValidUtf8(runtime::FormatReportJson(report)));
}
