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

namespace nodegate::netfilter {

// When detached work is allowed and `fd` is a NETLINK_NETFILTER socket, keeps a copy of it
// for the child started at exit. Never fails: without a copy or a child the close just waits.
void HandOffBeforeClose(int fd);

}  // namespace nodegate::netfilter
