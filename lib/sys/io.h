#pragma once
// Whole-buffer reads and writes on a file descriptor, retrying short transfers and EINTR.
// They return false with errno set, so each caller keeps its own error message.
//
// ReadRegularFile is the one way the node tools read a file named by a user or found in a
// folder: opened once, refused unless it is a regular file, read with a size cap. A FIFO would
// block the reader, and a device such as /dev/zero never ends.

#include <cstddef>
#include <string>
#include <string_view>

#include "lib/base/result.h"

namespace nodegate::sys {

// Appends everything up to end of file to `out`.
bool ReadAll(int fd, std::string& out);

// Appends everything up to end of file to `out`, but at most `cap` bytes: false with errno
// EFBIG when the fd holds more.
bool ReadAllCapped(int fd, size_t cap, std::string& out);

// Writes all of `content` from the fd's current offset.
bool WriteAll(int fd, std::string_view content);

// The contents of `path` (symlinks followed), when it is a regular file of at most `cap`
// bytes. Errors (code 5) start with the path: "not found: PATH" when it does not exist,
// "PATH: not a regular file (a FIFO)", "PATH: is a directory", "PATH: larger than 16 MiB".
Result<std::string> ReadRegularFile(const std::string& path, size_t cap);

// "16 MiB" or "100 bytes": a size cap as messages show it.
std::string FormatByteCap(size_t cap);

}  // namespace nodegate::sys
