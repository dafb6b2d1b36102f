#pragma once
// Crash-safe file replacement: write to a temporary file in the same directory, fsync, rename
// over the target. Readers see the old or the new content, never a half-written file.
// Temporary names start with ".tmp-" so directory scans can ignore and clean them.

#include <string>
#include <string_view>

#include "lib/base/result.h"

namespace nodegate::sys {

inline constexpr std::string_view kTempPrefix = ".tmp-";

Status WriteFileAtomic(const std::string& path, std::string_view content, int mode = 0644);

// Reads a whole file. Errors: code 5 (I/O); a missing file gives msg starting "not found".
Result<std::string> ReadFile(const std::string& path);

}  // namespace nodegate::sys
