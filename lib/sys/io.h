#pragma once
// File: lib/sys/io.h
//
// Whole-buffer reads and writes on a file descriptor, retrying short transfers and EINTR.
// They return false with errno set, so each caller keeps its own error message.

#include <string>
#include <string_view>

namespace nodegate::sys {

// Appends everything up to end of file to `out`.
bool ReadAll(int fd, std::string& out);

// Writes all of `content` from the fd's current offset.
bool WriteAll(int fd, std::string_view content);

}  // namespace nodegate::sys
