#include "admit/cli/install.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace nodegate::admit {
namespace {

// FileDescriptor closes on scope exit.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ >= 0) {
      ::close(fd_);
    }
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }
  int Release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_;
};

Error Errno(const std::string& what) { return Error{what + ": " + std::strerror(errno)}; }

}  // namespace

VoidResult InstallFileAtomically(const std::string& dir, const std::string& filename,
                                 std::string_view contents) {
  if (filename.empty() || filename.find('/') != std::string::npos || filename[0] == '.') {
    return Error{"invalid manifest file name \"" + filename + "\""};
  }
  const std::string target = dir + "/" + filename;
  std::string tmpl = dir + "/." + filename + ".nodegate-XXXXXX";
  std::vector<char> path(tmpl.begin(), tmpl.end());
  path.push_back('\0');
  FileDescriptor fd(::mkstemp(path.data()));
  if (fd.get() < 0) {
    return Errno("create temporary file in " + dir);
  }
  const std::string tmp_path(path.data());
  bool committed = false;
  struct Cleanup {
    const std::string& path;
    const bool& committed;
    ~Cleanup() {
      if (!committed) {
        ::unlink(path.c_str());
      }
    }
  } cleanup{tmp_path, committed};

  mode_t mode = 0600;
  struct stat st {};
  if (::stat(target.c_str(), &st) == 0) {
    mode = st.st_mode & 07777;
  }
  size_t written = 0;
  while (written < contents.size()) {
    ssize_t n = ::write(fd.get(), contents.data() + written, contents.size() - written);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      return Errno("write " + tmp_path);
    }
    written += static_cast<size_t>(n);
  }
  if (::fchmod(fd.get(), mode) != 0) {
    return Errno("chmod " + tmp_path);
  }
  if (::fsync(fd.get()) != 0) {
    return Errno("fsync " + tmp_path);
  }
  if (::close(fd.Release()) != 0) {
    return Errno("close " + tmp_path);
  }
  if (::rename(tmp_path.c_str(), target.c_str()) != 0) {
    return Errno("rename " + tmp_path + " to " + target);
  }
  committed = true;
  FileDescriptor dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir_fd.get() >= 0) {
    ::fsync(dir_fd.get());  // best effort: the rename is already visible
  }
  return Ok{};
}

}  // namespace nodegate::admit
