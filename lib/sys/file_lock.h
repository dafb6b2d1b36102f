#pragma once
// An exclusive flock() on a file, held for the lifetime of the object. Used for the host-local
// data directory lock (same file and lock kind as the reference, so both can share a node)
// and the xtables lock (/run/xtables.lock, as the iptables tools take it).

#include <chrono>
#include <string>

#include "lib/base/result.h"
#include "lib/sys/fd.h"

namespace nodegate::sys {

class FileLock {
 public:
  // Opens (creating if needed, mode 0600) and locks `path`, waiting for other holders.
  static Result<FileLock> Acquire(const std::string& path);
  // As Acquire, but gives up at `deadline` with error 11 (try again later): for a lock whose
  // holder may be stopped, where the caller has a deadline of its own (cluster-ipam's node
  // lock). Polls with LOCK_NB, sleeping from 0.1 ms up to 5 ms between tries.
  static Result<FileLock> AcquireUntil(const std::string& path,
                                       std::chrono::steady_clock::time_point deadline);
  // Locks an existing folder itself (flock on its descriptor), waiting for other holders: a
  // lock that leaves no file behind in a folder whose contents others read (nodegate guard).
  static Result<FileLock> AcquireDirectory(const std::string& dir);
  // Locks an already open directory or file (host-local locks its directory's "lock" file).
  FileLock(FileLock&&) = default;
  FileLock& operator=(FileLock&&) = default;
  ~FileLock() = default;  // closing the fd releases the lock

 private:
  explicit FileLock(UniqueFd fd) : fd_(std::move(fd)) {}
  UniqueFd fd_;
};

}  // namespace nodegate::sys
