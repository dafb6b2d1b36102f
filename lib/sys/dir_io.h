#pragma once
// Directory-relative file I/O for stores that keep many small files under one folder: each
// call works on a name inside a directory fd (openat and friends, no symlinks followed), and
// its errors (code 5) name the failing call and the path, "open DIR/NAME: No such file...".

#include <sys/types.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/result.h"

namespace nodegate::sys {

// "WHAT PATH: strerror(err)", code 5.
Error IoError(const std::string& what, const std::string& path, int err = errno);

// mkdir -p with mode for the components it creates, like Go's os.MkdirAll.
Status MkdirAll(const std::string& path, mode_t mode);

// dir_fd's NAME, or nullopt when it does not exist; at most `cap` bytes (a longer file is an
// error, EFBIG). `dir` names dir_fd in messages.
Result<std::optional<std::string>> ReadFileAt(int dir_fd, const std::string& name,
                                              const std::string& dir, size_t cap);

// sys::WriteAll with an error that names `path`.
Status WriteAllTo(int fd, std::string_view content, const std::string& path);

// Writes dir_fd's NAME in place (created with `mode` when missing): overwrite from offset 0,
// then shrink if the old content was longer. Never truncating to zero avoids ext4's
// flush-on-replace (auto_da_alloc), which makes every call wait for the journal; the price is
// that a crash can leave a torn file, so use it only where the caller can tell or not care.
Status WriteInPlaceAt(int dir_fd, const std::string& name, std::string_view content,
                      const std::string& dir, mode_t mode);

struct DirEntry {
  std::string name;
  unsigned char type;  // d_type: DT_REG, DT_DIR, ..., or DT_UNKNOWN
};

// The entries of dir_fd's directory, skipping "." and ".."; `path` names it in messages.
Result<std::vector<DirEntry>> ListDir(int dir_fd, const std::string& path);

// 64 random bits (getrandom; the clock and pid when the pool is not ready): for unique
// temporary names and markers, not for secrets.
uint64_t RandomU64();

// The kernel's boot id, or "unknown": tells state written before a reboot from state after.
std::string ReadBootId();

}  // namespace nodegate::sys
