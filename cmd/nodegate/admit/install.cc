#include "cmd/nodegate/admit/install.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/base/result.h"
#include "lib/sys/atomic_file.h"
#include "lib/sys/fd.h"

namespace nodegate::admit {

nodegate::Status InstallFileAtomically(const std::string& dir, const std::string& filename,
                                       std::string_view contents) {
  if (filename.empty() || filename.find('/') != std::string::npos || filename[0] == '.') {
    return Error(kErrInvalidConfig, "invalid manifest file name \"" + filename + "\"");
  }
  const std::string target = dir + "/" + filename;
  int mode = 0600;
  struct stat st {};
  if (::stat(target.c_str(), &st) == 0) {
    mode = static_cast<int>(st.st_mode & 07777);
  }
  // The temporary file is a dot-file in the same folder, which the kubelet ignores.
  NG_RETURN_IF_ERROR(sys::WriteFileAtomic(target, contents, mode));
  sys::UniqueFd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir_fd.valid()) {
    ::fsync(dir_fd.get());  // best effort: the rename is already visible
  }
  return OkStatus();
}

}  // namespace nodegate::admit
