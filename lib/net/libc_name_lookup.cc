// The C library's name, service and protocol lookups as the executables see them: every call
// of theirs (and of the libraries they link) to these functions lands here instead of in
// glibc's NSS (-Wl,--wrap=NAME, NG_WRAPPED_LOOKUPS in lib/CMakeLists.txt), which reads the
// files and DNS as lib/net/name_lookup.h says. tests/executables checks that no NSS entry point
// is left in the executables.
#include <netdb.h>

#include "lib/net/name_lookup.h"

namespace {
const nodegate::net::LookupFiles& SystemFiles() {
  static const nodegate::net::LookupFiles files;
  return files;
}
}  // namespace

extern "C" {

int __wrap_getaddrinfo(const char* node, const char* service, const addrinfo* hints,
                       addrinfo** result) {
  return nodegate::net::GetAddrInfo(SystemFiles(), node, service, hints, result);
}

void __wrap_freeaddrinfo(addrinfo* list) { nodegate::net::FreeAddrInfo(list); }

int __wrap_getnameinfo(const sockaddr* address, socklen_t length, char* host, socklen_t host_length,
                       char* service, socklen_t service_length, int flags) {
  return nodegate::net::GetNameInfo(SystemFiles(), address, length, host, host_length, service,
                                    service_length, flags);
}

protoent* __wrap_getprotobyname(const char* name) {
  return nodegate::net::GetProtoByName(SystemFiles(), name);
}

protoent* __wrap_getprotobynumber(int number) {
  return nodegate::net::GetProtoByNumber(SystemFiles(), number);
}

hostent* __wrap_gethostbyname(const char* name) {
  return nodegate::net::GetHostByName(SystemFiles(), name);
}

}  // extern "C"

#if defined(NG_DEFINE_WRAPPED_NAMES)
// The wrapped names defined too, as the same functions. LLVM's linker (cmake/text-order/)
// resolves a library's call to getaddrinfo against libc.a before it applies --wrap, and would
// link glibc's getaddrinfo (and with it NSS) unused; a name defined here is never looked for
// there. GNU ld needs none of this, and --wrap sends every call here either way.
#define NG_DEFINE_AS_WRAPPED(name) asm(".globl " #name "\n.set " #name ", __wrap_" #name)
NG_DEFINE_AS_WRAPPED(getaddrinfo);
NG_DEFINE_AS_WRAPPED(freeaddrinfo);
NG_DEFINE_AS_WRAPPED(getnameinfo);
NG_DEFINE_AS_WRAPPED(getprotobyname);
NG_DEFINE_AS_WRAPPED(getprotobynumber);
NG_DEFINE_AS_WRAPPED(gethostbyname);
#endif
