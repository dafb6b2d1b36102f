#include "lib/sys/dynamic_library.h"

#include <dlfcn.h>

namespace nodegate::sys {

Result<void*> OpenLibrary(const char* soname, std::string_view what) {
  void* library = ::dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* why = ::dlerror();
    std::string text = std::string("cannot load ") + soname;
    if (!what.empty()) text += " (" + std::string(what) + ")";
    return Error(kErrKernel, text + ": " + (why != nullptr ? why : "?"));
  }
  return library;
}

void* SymbolBinder::Lookup(std::string_view name) {
  const std::string symbol = prefix_ + std::string(name);
  void* found = ::dlsym(library_, symbol.c_str());
  if (found == nullptr) missing_ += (missing_.empty() ? "" : ", ") + symbol;
  return found;
}

Status SymbolBinder::Done(std::string_view library) const {
  if (missing_.empty()) return OkStatus();
  return Error(kErrKernel, std::string(library) + " lacks " + missing_);
}

}  // namespace nodegate::sys
