#pragma once
// The exit status of every `nodegate` command (the man page's EXIT STATUS section):
//   0  done, and the answer is yes (admitted, valid, fits, nothing found)
//   1  done, and the answer is no (rejected, errors found, fits nowhere, a plugin failed)
//   2  unusable input: flags, files, names that do not exist
//   3  what the command needs could not be reached or read (the API server, etcd, the kernel)

namespace nodegate::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitNo = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitUnavailable = 3;

}  // namespace nodegate::cli
