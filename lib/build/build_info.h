#pragma once
// BuildInfo: what a bug report needs to name a build: the version, the commit it was built
// from, the source's date (the reproducible build's SOURCE_DATE_EPOCH, or the last commit's),
// the compiler, the architecture, and whether the executable is static.

#include <string_view>

namespace nodegate {

struct BuildInfo {
  std::string_view version;      // "0.1.0"
  std::string_view commit;       // full hash, or "unknown" (a tree without its git history)
  std::string_view source_date;  // RFC 3339, UTC, or "unknown"
  std::string_view compiler;     // "g++ 12.2.0", "clang++ 14.0.6"
  std::string_view arch;         // "amd64", "arm64", ...
  bool static_executable;
};

const BuildInfo& Build();

}  // namespace nodegate
