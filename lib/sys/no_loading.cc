// dlopen and dlsym as the executables see them (-Wl,--wrap, lib/CMakeLists.txt): loading a
// shared object into a static process aborts unless the host's glibc is exactly the build's,
// so no library is ever loaded. Nothing of ours calls these; OpenSSL's module loader
// (libcrypto.a) refers to them for engines and providers an openssl.cnf could name, and
// nodegate never reads one (webhook/README.md). Should anything ask, it gets the null a
// missing file gives.
#include <dlfcn.h>

extern "C" {

void* __wrap_dlopen(const char* /*file*/, int /*mode*/) { return nullptr; }

void* __wrap_dlsym(void* /*handle*/, const char* /*name*/) { return nullptr; }

}  // extern "C"
