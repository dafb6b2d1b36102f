#pragma once
// Opening a shared library at run time and binding its functions by name, for libraries that
// only some invocations need (libnftables, libip4tc/libip6tc): the others skip their loading.

#include <string>
#include <string_view>
#include <utility>

#include "lib/base/result.h"

namespace nodegate::sys {

// dlopen(soname, RTLD_NOW | RTLD_LOCAL). The handle is never closed: the functions bound from
// it are kept for the life of the process. The error (code 100) reads
// "cannot load SONAME (WHAT): <dlerror>"; `what` may be empty.
Result<void*> OpenLibrary(const char* soname, std::string_view what = {});

// Binds function pointers to the library's symbols `prefix + name`. A missing symbol leaves
// its pointer null and is remembered, so that Done() reports every one in a single error.
class SymbolBinder {
 public:
  explicit SymbolBinder(void* library, std::string prefix = {})
      : library_(library), prefix_(std::move(prefix)) {}

  template <typename Fn>
  void operator()(Fn*& fn, std::string_view name) {
    // POSIX guarantees a data pointer from dlsym converts to a function pointer.
    fn = reinterpret_cast<Fn*>(Lookup(name));
  }

  // OK, or "LIBRARY lacks a, b" (code 100) naming the symbols that were not found.
  Status Done(std::string_view library) const;

 private:
  void* Lookup(std::string_view name);

  void* library_;
  std::string prefix_;
  std::string missing_;
};

}  // namespace nodegate::sys
