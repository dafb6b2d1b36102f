#include "lib/sys/prefault.h"

#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>

// GCC says so with __SANITIZE_ADDRESS__, clang with __has_feature.
#if defined(__SANITIZE_ADDRESS__)
#define NG_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NG_UNDER_ASAN 1
#endif
#endif

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14
#endif

namespace nodegate::sys {
namespace {

// What a plugin call uses (portmap ADD: under 100 KiB of heap and 32 KiB of stack); more would
// zero pages nobody touches.
constexpr uintptr_t kHeapBytes = 128 * 1024;
constexpr uintptr_t kStackBytes = 64 * 1024;

uintptr_t PageDown(uintptr_t address) {
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  return address & ~(page - 1);
}

uintptr_t PageUp(uintptr_t address) {
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  return (address + page - 1) & ~(page - 1);
}

void Populate(uintptr_t begin, uintptr_t end, int advice) {
  begin = PageDown(begin);
  end = PageUp(end);
  if (end > begin) {
    // Errors (EINVAL before 5.14, ENOMEM for a range the kernel did not map) only mean the
    // pages fault in one by one, as without this.
    (void)::madvise(reinterpret_cast<void*>(begin), end - begin, advice);
  }
}

int PopulateWritableSegments(dl_phdr_info* info, size_t /*size*/, void* /*data*/) {
  // What is read-only by now (RELRO: the start of GNU ld's data segment, a segment of its own
  // with LLVM's linker): writing advice fails there.
  uintptr_t relro_begin = 0;
  uintptr_t relro_end = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& segment = info->dlpi_phdr[i];
    if (segment.p_type == PT_GNU_RELRO) {
      relro_begin = info->dlpi_addr + segment.p_vaddr;
      relro_end = PageDown(relro_begin + segment.p_memsz);
    }
  }
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& segment = info->dlpi_phdr[i];
    if (segment.p_type != PT_LOAD) continue;
    const uintptr_t begin = info->dlpi_addr + segment.p_vaddr;
    const uintptr_t end = begin + segment.p_memsz;
    // Not the code and read-only data: a call runs a small part of them, and mapping all of
    // it cost more than it saved (the linker's ordering of the code that runs does better:
    // cmake/text-order/README.md).
    if ((segment.p_flags & PF_W) == 0) continue;
    // Data and bss are written at start anyway: their copy-on-write done at once.
    const uintptr_t writable = relro_begin <= begin && relro_end > begin ? relro_end : begin;
    Populate(writable, end, MADV_POPULATE_WRITE);
  }
  return 1;  // the executable is the first object; a static one has no other
}

}  // namespace

void PrefaultProcessMemory() {
#if !defined(NG_UNDER_ASAN)
  ::dl_iterate_phdr(PopulateWritableSegments, nullptr);

  // The first allocation sets up malloc's main arena at the program break; what follows it,
  // up to kHeapBytes, is where the process's allocations land.
  void* first = std::malloc(1);
  const auto heap_begin = reinterpret_cast<uintptr_t>(first);
  const auto heap_end = reinterpret_cast<uintptr_t>(::sbrk(0));
  if (first != nullptr && heap_end > heap_begin) {
    Populate(heap_begin, heap_begin + std::min(heap_end - heap_begin, kHeapBytes),
             MADV_POPULATE_WRITE);
  }
  std::free(first);

  // The stack's mapping starts at least 128 KiB deep (the kernel's stack_guard_gap aside,
  // exec sets it up so), so this range is mapped.
  const auto stack_top = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  Populate(stack_top - kStackBytes, stack_top, MADV_POPULATE_WRITE);
#endif
}

}  // namespace nodegate::sys
