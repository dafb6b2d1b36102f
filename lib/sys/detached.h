#pragma once
// Work a short-lived process may leave behind. SpawnDetached() forks a child that first closes
// every descriptor it inherited but `keep_fds` (a runtime reading our stdout sees EOF when we
// exit, and no lock stays held), then runs `work` and exits. Nobody waits for it: when this
// process exits the child is reparented to init or the nearest subreaper, which reaps it.
//
// Only for kernel calls whose cost is waiting (deleting a net device waits for an RCU barrier,
// releasing an nfnetlink socket for a grace period) and whose outcome the caller does not have
// to report. Off unless the process's main allows it: tests and long-lived tools do the work
// themselves.
//
//   int main() { sys::AllowDetachedWork(); ... }
//   if (!sys::SpawnDetached(remove)) remove();

#include <cstddef>
#include <functional>
#include <span>
#include <vector>

namespace nodegate::sys {

void AllowDetachedWork();
bool DetachedWorkAllowed();

// Starts `work` in a detached child and returns true; returns false without running it when
// detached work is not allowed or fork fails.
bool SpawnDetached(const std::function<void()>& work, std::vector<int> keep_fds = {});

// Work that may run in a child sharing this process's memory: it gets the kept descriptors
// and nothing else, allocates nothing and reads no state of the parent's that the parent
// still changes (it goes on, and exits, while the child runs): system calls, locals, and
// statics set before the spawn.
using SharedMemoryWork = void (*)(const int* fds, std::size_t count);

// SpawnDetached for such work, started right before this process exits: the child shares the
// parent's memory (clone with CLONE_VM, as posix_spawn does), so neither the page tables are
// copied nor does the parent's exit take copy-on-write faults or tear the address space down
// (the child's exit does that, off the caller's path); about a millisecond less per call than
// a fork here. Its stack (256 KiB) and the descriptor list are a mapping of their own that the
// parent never touches again. Under AddressSanitizer (whose per-thread state the child would
// share) it forks instead. Returns false, running nothing, when detached work is not allowed or
// the child cannot be started.
bool SpawnDetachedAtExit(SharedMemoryWork work, std::span<const int> keep_fds);

}  // namespace nodegate::sys
