#include "lib/sys/dir_io.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <ctime>

#include "lib/sys/fd.h"
#include "lib/sys/io.h"

namespace nodegate::sys {

Error IoError(const std::string& what, const std::string& path, int err) {
  return Error(kErrIo, what + " " + path + ": " + std::strerror(err));
}

Status MkdirAll(const std::string& path, mode_t mode) {
  if (::mkdir(path.c_str(), mode) == 0 || errno == EEXIST) {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      return Error(kErrIo, "mkdir " + path + ": not a directory");
    }
    return OkStatus();
  }
  if (errno != ENOENT) {
    return IoError("mkdir", path);
  }
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos || slash == 0) {
    return IoError("mkdir", path, ENOENT);
  }
  NG_RETURN_IF_ERROR(MkdirAll(path.substr(0, slash), mode));
  if (::mkdir(path.c_str(), mode) != 0 && errno != EEXIST) {
    return IoError("mkdir", path);
  }
  return OkStatus();
}

// One read() usually does it: on Linux a read of a regular file shorter than asked for ends at
// end of file, which spares the second read() per file that matters when a caller reads
// thousands of small files.
Result<std::optional<std::string>> ReadFileAt(int dir_fd, const std::string& name,
                                              const std::string& dir, size_t cap) {
  UniqueFd fd(::openat(dir_fd, name.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid()) {
    if (errno == ENOENT) {
      return std::optional<std::string>();
    }
    return IoError("open", dir + "/" + name);
  }
  std::string out(512, '\0');
  ssize_t n;
  do {
    n = ::read(fd.get(), out.data(), out.size());
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    return IoError("read", dir + "/" + name);
  }
  out.resize(static_cast<size_t>(n));
  if (static_cast<size_t>(n) == 512 && !ReadAllCapped(fd.get(), cap, out)) {
    return IoError("read", dir + "/" + name);
  }
  return std::optional<std::string>(std::move(out));
}

Status WriteAllTo(int fd, std::string_view content, const std::string& path) {
  if (!WriteAll(fd, content)) {
    return IoError("write", path);
  }
  return OkStatus();
}

Status WriteInPlaceAt(int dir_fd, const std::string& name, std::string_view content,
                      const std::string& dir, mode_t mode) {
  UniqueFd fd(::openat(dir_fd, name.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, mode));
  if (!fd.valid()) {
    return IoError("open", dir + "/" + name);
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) {
    return IoError("stat", dir + "/" + name);
  }
  // A fresh fd starts at offset 0, so this overwrites from the beginning.
  NG_RETURN_IF_ERROR(WriteAllTo(fd.get(), content, dir + "/" + name));
  if (static_cast<size_t>(st.st_size) > content.size() &&
      ::ftruncate(fd.get(), static_cast<off_t>(content.size())) != 0) {
    return IoError("truncate", dir + "/" + name);
  }
  return OkStatus();
}

Result<std::vector<DirEntry>> ListDir(int dir_fd, const std::string& path) {
  // fdopendir takes over the fd it is given, and dir_fd stays the caller's.
  const int dup_fd = ::openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dup_fd < 0) {
    return IoError("open", path);
  }
  DIR* d = ::fdopendir(dup_fd);
  if (d == nullptr) {
    ::close(dup_fd);
    return IoError("opendir", path);
  }
  std::vector<DirEntry> out;
  errno = 0;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") {
      out.push_back(DirEntry{name, e->d_type});
    }
  }
  const int err = errno;
  ::closedir(d);
  if (err != 0) {
    return IoError("readdir", path, err);
  }
  return out;
}

uint64_t RandomU64() {
  uint64_t v = 0;
  if (::getrandom(&v, sizeof(v), GRND_NONBLOCK) != static_cast<ssize_t>(sizeof(v))) {
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    v = static_cast<uint64_t>(ts.tv_nsec) * 0x9E3779B97F4A7C15ull ^
        static_cast<uint64_t>(::getpid());
  }
  return v;
}

std::string ReadBootId() {
  UniqueFd fd(::open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    return "unknown";
  }
  char buf[64];
  const ssize_t n = ::read(fd.get(), buf, sizeof(buf));
  if (n <= 0) {
    return "unknown";
  }
  std::string id(buf, static_cast<size_t>(n));
  while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) {
    id.pop_back();
  }
  return id;
}

}  // namespace nodegate::sys
