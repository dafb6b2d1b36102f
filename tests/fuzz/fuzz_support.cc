#include "tests/fuzz/fuzz_support.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "lib/cni/types.h"
#include "lib/sys/io.h"
#include "tests/fuzz/fuzz_target.h"

namespace nodegate::fuzz {
namespace {

// Length of the sequence a lead byte starts, 0 for a byte that cannot start one.
size_t SequenceLength(unsigned char lead) {
  if (lead < 0x80) {
    return 1;
  }
  if (lead >= 0xC2 && lead <= 0xDF) {
    return 2;
  }
  if (lead >= 0xE0 && lead <= 0xEF) {
    return 3;
  }
  if (lead >= 0xF0 && lead <= 0xF4) {
    return 4;
  }
  return 0;
}

// The allowed range of the second byte, which is where overlong forms, surrogates and code
// points past U+10FFFF show.
bool SecondByteOk(unsigned char lead, unsigned char second) {
  switch (lead) {
    case 0xE0:
      return second >= 0xA0 && second <= 0xBF;
    case 0xED:
      return second >= 0x80 && second <= 0x9F;
    case 0xF0:
      return second >= 0x90 && second <= 0xBF;
    case 0xF4:
      return second >= 0x80 && second <= 0x8F;
    default:
      return second >= 0x80 && second <= 0xBF;
  }
}

bool SafeComponent(const std::filesystem::path& part) {
  return !part.empty() && part != "." && part != "..";
}

bool SafeRelativePath(std::string_view path) {
  if (path.empty() || path.front() == '/' || path.find('\0') != std::string_view::npos) {
    return false;
  }
  for (const auto& part : std::filesystem::path(path)) {
    if (!SafeComponent(part)) {
      return false;
    }
  }
  return true;
}

void WriteOne(const std::filesystem::path& path, std::string_view content) {
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return;
  }
  (void)sys::WriteAll(fd, content);
  ::close(fd);
}

}  // namespace

void FailCheck(const char* condition, const char* file, int line) {
  std::fprintf(stderr, "%s:%d: fuzz invariant broken: %s\n", file, line, condition);
  std::abort();
}

bool IsValidUtf8(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const auto lead = static_cast<unsigned char>(text[i]);
    const size_t length = SequenceLength(lead);
    if (length == 0 || i + length > text.size()) {
      return false;
    }
    for (size_t k = 1; k < length; ++k) {
      const auto byte = static_cast<unsigned char>(text[i + k]);
      const bool ok = k == 1 ? SecondByteOk(lead, byte) : (byte >= 0x80 && byte <= 0xBF);
      if (!ok) {
        return false;
      }
    }
    i += length;
  }
  return true;
}

void CheckErrorPrints(const Error& error) {
  const std::string printed = cni::FormatError(error);
  NG_FUZZ_CHECK(IsValidUtf8(printed));
  const auto decoded = cni::DecodeError(printed);
  NG_FUZZ_CHECK(decoded.has_value() && decoded->code == error.code);
}

std::vector<InputFile> SplitFiles(std::string_view data) {
  std::vector<InputFile> files;
  while (!data.empty() && files.size() < kMaxFiles) {
    const size_t end = data.find(kFileSeparator);
    std::string_view chunk = data.substr(0, end);
    data = end == std::string_view::npos ? std::string_view()
                                         : data.substr(end + kFileSeparator.size());
    const size_t newline = chunk.find('\n');
    const std::string_view path = chunk.substr(0, newline);
    const std::string_view content =
        newline == std::string_view::npos ? std::string_view() : chunk.substr(newline + 1);
    if (SafeRelativePath(path)) {
      files.push_back({std::string(path), std::string(content)});
    }
  }
  return files;
}

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string pattern =
      std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/nodegate-fuzz-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    std::perror("fuzz: mkdtemp");
    std::abort();
  }
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

void WriteFiles(const std::string& dir, const std::vector<InputFile>& files) {
  for (const auto& file : files) {
    WriteOne(std::filesystem::path(dir) / file.path, file.content);
  }
}

}  // namespace nodegate::fuzz
