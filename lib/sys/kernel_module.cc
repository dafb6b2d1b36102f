#include "lib/sys/kernel_module.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "lib/sys/atomic_file.h"

extern char** environ;

namespace nodegate::sys {

std::string ModprobeProgram() {
  auto text = ReadFile("/proc/sys/kernel/modprobe");
  if (!text.ok()) return "/sbin/modprobe";
  std::string program = *text;
  while (!program.empty() && (program.back() == '\n' || program.back() == ' ')) program.pop_back();
  return program.empty() ? "/sbin/modprobe" : program;
}

bool KernelModuleLoaded(const std::string& proof) { return ::access(proof.c_str(), F_OK) == 0; }

Status LoadKernelModule(const std::string& name, const std::string& modprobe) {
  const std::string program = modprobe.empty() ? ModprobeProgram() : modprobe;
  const std::string what = "load kernel module " + name + " with " + program;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  for (const int fd : {0, 1, 2}) {
    posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0);
  }
  std::string quiet = "-q";
  std::string module = name;
  char* argv[] = {const_cast<char*>(program.c_str()), quiet.data(), module.data(), nullptr};
  pid_t pid = 0;
  const int spawned = ::posix_spawn(&pid, program.c_str(), &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) return Error(kErrKernel, what + ": " + std::strerror(spawned));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return Error(kErrKernel, what + ": waitpid: " + std::strerror(errno));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return Error(kErrKernel, what + ": it failed (status " + std::to_string(status) + ")");
  }
  return OkStatus();
}

}  // namespace nodegate::sys
