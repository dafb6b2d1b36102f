#pragma once
// Deferred release of NETLINK_NETFILTER sockets, for short-lived processes.
//
// Every nf_tables commit schedules "destroy work" that frees the replaced objects after an
// RCU grace period (8-25 ms on the development machine). When the last reference to any
// NETLINK_NETFILTER socket of the network namespace is closed, the kernel's netlink notifier
// flushes that work while holding the nf_tables commit mutex: the close() waits for the grace
// period, and so does every other nf_tables writer of the namespace meanwhile. For a CNI
// plugin that is most of its run time.
//
// A process that allows detached work (sys::AllowDetachedWork, in a plugin's main) keeps a
// copy of each such socket its owner closes, and at exit starts one child
// (sys::SpawnDetachedAtExit, which shares this process's memory instead of copying it)
// that holds the copies, waits until the namespace has gone a grace period without a commit
// (so the destroy work is done and nothing waits on the mutex; bounded at 2 s) and exits. The
// owner's close() returns at once; the kernel state was already committed and visible before
// that, so nothing the caller sees changes. Processes that do not allow detached
// work (tests, long-lived tools) keep the plain close.
//
//   int main() { sys::AllowDetachedWork(); ... }        // once, in a plugin's main
//   netfilter::HandOffBeforeClose(fd); close(fd);       // by the socket's owner
//
// The same child can first do work whose outcome the caller need not wait for (portmap's UDP
// conntrack flush, lib/conntrack): RunInHelperAtExit.

#include <cstddef>
#include <span>

namespace nodegate::netfilter {

// When detached work is allowed and `fd` is a NETLINK_NETFILTER socket, keeps a copy of it
// for the child started at exit. Never fails: without a copy or a child the close just waits.
void HandOffBeforeClose(int fd);

// Work for the child started at exit, run before it waits. The child shares the exited
// process's memory: system calls, locals, and state the process set before it exited and no
// longer changes; no allocation, no logging, under 256 KiB of stack. Nfnetlink sockets it
// opens it puts in `hold` and returns how many, so they are closed after the wait with the
// handed-off ones (closing one earlier would wait for the destroy work, as above).
using HelperWork = std::size_t (*)(std::span<int> hold);

// Has the child started at exit run `work` (once, in the order registered). Returns false,
// registering nothing, when detached work is not allowed or four works are registered already:
// the caller then does the work itself.
bool RunInHelperAtExit(HelperWork work);

}  // namespace nodegate::netfilter
