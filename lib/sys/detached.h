#pragma once
// File: lib/sys/detached.h
//
// Work a short-lived process may leave behind. RunDetached() forks a child that first closes
// every descriptor it inherited (a runtime reading our stdout sees EOF when we exit, and no
// lock stays held), then runs `work` and exits. Nobody waits for it: when this process exits
// the child is reparented to init or the nearest subreaper, which reaps it.
//
// Only for kernel calls whose cost is waiting (deleting a net device waits for an RCU
// barrier) and whose outcome the caller does not have to report. Off unless the process's
// main allows it; elsewhere (tests, long-lived tools) RunDetached runs `work` inline.
//
//   int main() { sys::AllowDetachedWork(); ... }
//   sys::RunDetached([index] { ... delete link index ... });

#include <functional>

namespace nodegate::sys {

void AllowDetachedWork();
bool DetachedWorkAllowed();

// Runs `work` in a detached child when allowed and fork succeeds, else inline.
void RunDetached(const std::function<void()>& work);

}  // namespace nodegate::sys
