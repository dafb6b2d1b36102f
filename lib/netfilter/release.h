#pragma once
// File: lib/netfilter/release.h
//
// Deferred release of NETLINK_NETFILTER sockets, for short-lived processes.
//
// Every nf_tables commit schedules "destroy work" that frees the replaced objects after an
// RCU grace period (8-25 ms on the development machine). When the last reference to any
// NETLINK_NETFILTER socket of the network namespace is closed, the kernel's netlink notifier
// flushes that work while holding the nf_tables commit mutex: the close() waits for the grace
// period, and so does every other nf_tables writer of the namespace meanwhile. For a CNI
// plugin that is most of its run time.
//
// A process that enables deferral hands a reference to each such socket to a helper child
// before closing its own. The helper keeps them until this process has exited, then waits for
// a grace period of its own (so the destroy work is done and nothing waits on the mutex) and
// exits. The process's close() returns at once; the kernel state was already committed and
// visible before that, so nothing the caller sees changes.
//
//   int main() { netfilter::DeferNfnetlinkRelease(); ... }   // once, in a plugin's main
//   netfilter::HandOffBeforeClose(fd); close(fd);            // by the socket's owner

namespace nodegate::netfilter {

// Enables deferral for this process. Only for processes that exit soon after their work (the
// helper lives until then); library users in long-lived processes keep the plain close.
void DeferNfnetlinkRelease();
bool NfnetlinkReleaseDeferred();

// When deferral is on and `fd` is a NETLINK_NETFILTER socket, gives the helper a reference to
// it (starting the helper on first use). Never fails: without a helper the close just waits.
void HandOffBeforeClose(int fd);

// The same for every NETLINK_NETFILTER socket open in this process (for libraries that do not
// expose theirs, such as libnftables).
void HandOffOpenNfnetlinkSockets();

}  // namespace nodegate::netfilter
