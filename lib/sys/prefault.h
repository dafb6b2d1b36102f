#pragma once
// Maps in, with one madvise per region, the memory a plugin's short life writes anyway: its
// executable's data and bss, the start of its heap and the top of its stack.
//
// Why: a plugin process lives a few milliseconds, and beyond the kernel calls it makes, much of
// its cost is first-touch page faults (85 for a portmap ADD). On a virtual machine whose page
// faults exit to the hypervisor (shadow or para-virtualized paging) each one costs about 15 us
// (the development machine); one MADV_POPULATE_WRITE per region maps the same pages for a
// fraction of that (33 pages: 40 us against 500 us touched one by one). A portmap ADD or DEL
// took 0.3-0.4 ms less there, 21 faults fewer. On bare metal a fault costs about a
// microsecond and the populate about the same, page for page.
// Kernels before 5.14 reject the advice and nothing happens: the pages fault in as before.
//
// Runs before static constructors (they are most of the heap a plugin uses), from the
// executable's .preinit_array:
//
//   NODEGATE_PREFAULT_AT_START();   // at namespace scope in a plugin's main.cc
//
// Not under AddressSanitizer, whose heap and shadow memory are its own.

namespace nodegate::sys {

void PrefaultProcessMemory();

}  // namespace nodegate::sys

#define NODEGATE_PREFAULT_AT_START()                                                      \
  [[gnu::used, gnu::section(".preinit_array")]] static void (*const kPrefaultAtStart)() = \
      &::nodegate::sys::PrefaultProcessMemory
