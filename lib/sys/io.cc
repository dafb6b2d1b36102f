#include "lib/sys/io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>

#include "lib/sys/fd.h"

namespace nodegate::sys {
namespace {

// What a non-regular file is, for messages.
const char* FileTypeName(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a file";
}

// Refuses anything but a regular file within the cap; `st` is the file's stat.
Status CheckRegular(const std::string& path, const struct stat& st, size_t cap) {
  if (S_ISDIR(st.st_mode)) {
    return Error(kErrIo, path + ": is a directory");
  }
  if (!S_ISREG(st.st_mode)) {
    return Error(kErrIo,
                 path + ": not a regular file (" + std::string(FileTypeName(st.st_mode)) + ")");
  }
  if (static_cast<unsigned long long>(st.st_size) > cap) {
    return Error(kErrIo, path + ": larger than " + FormatByteCap(cap));
  }
  return OkStatus();
}

Error OpenError(const std::string& path) {
  if (errno == ENOENT) {
    return Error(kErrIo, "not found: " + path);
  }
  return Error(kErrIo, "open " + path + ": " + std::strerror(errno));
}

}  // namespace

bool ReadAll(int fd, std::string& out) {
  return ReadAllCapped(fd, std::numeric_limits<size_t>::max(), out);
}

bool ReadAllCapped(int fd, size_t cap, std::string& out) {
  char buf[65536];
  size_t total = 0;
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      return false;
    }
    if (n == 0) {
      return true;
    }
    total += static_cast<size_t>(n);
    if (total > cap) {
      errno = EFBIG;
      return false;
    }
    out.append(buf, static_cast<size_t>(n));
  }
}

bool WriteAll(int fd, std::string_view content) {
  size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

Result<std::string> ReadRegularFile(const std::string& path, size_t cap) {
  // stat first so that a device is never opened (opening some has side effects); fstat after
  // the open is what decides, in case the path changed in between. O_NONBLOCK: opening a FIFO
  // must not wait for a writer.
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return OpenError(path);
  }
  NG_RETURN_IF_ERROR(CheckRegular(path, st, cap));
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  if (!fd.valid()) {
    return OpenError(path);
  }
  if (::fstat(fd.get(), &st) != 0) {
    return Error(kErrIo, "stat " + path + ": " + std::strerror(errno));
  }
  NG_RETURN_IF_ERROR(CheckRegular(path, st, cap));
  std::string out;
  if (!ReadAllCapped(fd.get(), cap, out)) {
    if (errno == EFBIG) {
      return Error(kErrIo, path + ": larger than " + FormatByteCap(cap));
    }
    return Error(kErrIo, "read " + path + ": " + std::strerror(errno));
  }
  return out;
}

std::string FormatByteCap(size_t cap) {
  constexpr size_t kMiB = size_t{1} << 20;
  if (cap >= kMiB && cap % kMiB == 0) {
    return std::to_string(cap / kMiB) + " MiB";
  }
  return std::to_string(cap) + " bytes";
}

}  // namespace nodegate::sys
