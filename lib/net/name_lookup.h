#pragma once
// Name, service and protocol lookups without glibc's NSS, for static executables.
//
// A static glibc still runs NSS for getaddrinfo, getnameinfo, getprotobyname and the like: it
// has `files` and `dns` built in, but any other module /etc/nsswitch.conf names (Ubuntu's
// mdns4_minimal, resolve, myhostname; sss; ...) is dlopen'd, and loading a shared library into
// a static process aborts unless the host's glibc is exactly the one the binary was built with.
// So the executables never reach NSS: every such call of theirs and of the libraries they link
// (libnl's getaddrinfo, getprotobyname...) is routed here at link time (ng_executable,
// -Wl,--wrap; lib/net/libc_name_lookup.cc), and these read what NSS's `files` and `dns` would
// read, in that order, whatever nsswitch.conf says:
//   hosts      /etc/hosts, then DNS (lib/net/dns_query.h: /etc/resolv.conf)
//   services   /etc/services          protocols  /etc/protocols
// A host with no /etc/hosts or no resolv.conf gets what glibc gives then (no entries; a
// nameserver on 127.0.0.1).
//
// The functions below behave as their libc namesakes (same arguments, results, errno-free EAI_*
// codes) for what the executables use; where they differ it is said beside each. `files`
// names the files to read, so tests can give their own.

#include <netdb.h>
#include <sys/socket.h>

#include <string>
#include <vector>

#include "lib/net/ip.h"

namespace nodegate::net {

struct LookupFiles {
  std::string hosts = "/etc/hosts";
  std::string services = "/etc/services";
  std::string protocols = "/etc/protocols";
};

// getaddrinfo(3). Flags: AI_PASSIVE, AI_CANONNAME, AI_NUMERICHOST, AI_NUMERICSERV,
// AI_V4MAPPED, AI_ALL, AI_ADDRCONFIG (accepted; every family's addresses are returned, the
// unusable ones last); AI_IDN and AI_CANONIDN are EAI_BADFLAGS (glibc would load libidn2).
// Addresses are ordered as glibc's RFC 3484 sort mostly does: those this host has a route to
// first, IPv6 before IPv4, otherwise in the order found. Each is returned for SOCK_STREAM
// (tcp) and SOCK_DGRAM (udp), and SOCK_RAW without a service, unless hints narrow it.
// The list comes from malloc and is released with FreeAddrInfo.
int GetAddrInfo(const LookupFiles& files, const char* node, const char* service,
                const addrinfo* hints, addrinfo** result);
void FreeAddrInfo(addrinfo* list);

// getnameinfo(3): /etc/hosts, then a DNS PTR query, unless NI_NUMERICHOST; the numeric form
// when neither names it (EAI_NONAME with NI_NAMEREQD). The service from /etc/services (udp
// with NI_DGRAM) unless NI_NUMERICSERV. NI_NOFQDN is ignored; NI_IDN is EAI_BADFLAGS. A
// link-local IPv6 address gets its scope as "%interface" ("%index" for an unknown one).
int GetNameInfo(const LookupFiles& files, const sockaddr* address, socklen_t length, char* host,
                socklen_t host_length, char* service, socklen_t service_length, int flags);

// getprotobyname(3) / getprotobynumber(3) from /etc/protocols. The result lives until this
// thread's next call (glibc's until the next call of any thread).
protoent* GetProtoByName(const LookupFiles& files, const char* name);
protoent* GetProtoByNumber(const LookupFiles& files, int number);

// gethostbyname(3): the IPv4 addresses GetAddrInfo finds for `name`, in its order, with the
// name as given (no aliases). nullptr when there is none. Only OpenSSL's BIO_gethostbyname
// refers to it, and nothing calls that; it is here so that no NSS code is linked in. The
// result lives until this thread's next call.
hostent* GetHostByName(const LookupFiles& files, const char* name);

// The order GetAddrInfo returns addresses in (see above).
void OrderForConnecting(std::vector<IpAddress>& addresses);

}  // namespace nodegate::net
