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

#include <functional>
#include <vector>

namespace nodegate::sys {

void AllowDetachedWork();
bool DetachedWorkAllowed();

// Starts `work` in a detached child and returns true; returns false without running it when
// detached work is not allowed or fork fails.
bool SpawnDetached(const std::function<void()>& work, std::vector<int> keep_fds = {});

}  // namespace nodegate::sys
