#pragma once
// What several fuzz targets share: the checks they assert on outputs (valid UTF-8 JSON, an
// error that prints as the spec's error object) and inputs that describe a few files.
//
// File inputs (host-local's state, manifest and conflist folders) are written as
//
//   <relative path>\n<content>\n===\n<relative path>\n<content>...
//
// Paths may name sub-folders (created as needed); absolute paths, "." and ".." components and
// files past kMaxFiles are ignored, so nothing is written outside the target's folder.

#include <string>
#include <string_view>
#include <vector>

#include "lib/base/error.h"

namespace nodegate::fuzz {

inline constexpr std::string_view kFileSeparator = "\n===\n";
inline constexpr size_t kMaxFiles = 16;

// RFC 3629 UTF-8: no overlong forms, surrogates or code points past U+10FFFF.
bool IsValidUtf8(std::string_view text);

// The error printed as the CNI error JSON, as a plugin would print it: valid UTF-8 whatever
// the message holds.
void CheckErrorPrints(const Error& error);

struct InputFile {
  std::string path;  // relative, checked as above
  std::string content;
};

// The files an input describes (unsafe paths already dropped).
std::vector<InputFile> SplitFiles(std::string_view data);

// A fresh folder under $TMPDIR (or /tmp), removed with everything in it on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Writes `files` under `dir` (mode 0644, folders 0755). A file that cannot be written (its
// parent is a file written earlier) is skipped: that is part of the input.
void WriteFiles(const std::string& dir, const std::vector<InputFile>& files);

}  // namespace nodegate::fuzz
