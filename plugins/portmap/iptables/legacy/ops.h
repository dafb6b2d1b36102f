#pragma once
// libiptc and libip6tc, the x_tables (legacy) interface of each family, behind one table of
// functions: the legacy mode of the iptables backend and the listing of installed mappings
// both read table nat through it. Only the libraries' headers are used at build time; the
// libraries themselves are opened when a process first needs them, so the plugin's executable
// needs nothing but libc.

extern "C" {  // libip6tc.h lacks its own C linkage block
#include <libiptc/libip6tc.h>
}
#include <libiptc/libiptc.h>

#include <cstdint>

#include "lib/base/result.h"
#include "lib/net/ip.h"

namespace nodegate::portmap::ipt {

// libiptc and libip6tc have the same API under two prefixes; LegacyOps hides the difference.
struct LegacyOps {
  net::Family family;
  xtc_handle* (*init)(const char*);
  void (*free)(xtc_handle*);
  int (*is_chain)(const char*, xtc_handle* const);
  int (*create_chain)(const char*, xtc_handle*);
  int (*flush_entries)(const char*, xtc_handle*);
  int (*delete_chain)(const char*, xtc_handle*);
  int (*delete_num_entry)(const char*, unsigned int, xtc_handle*);
  int (*commit)(xtc_handle*);
  const char* (*strerror)(int);
  // Entry access through untyped pointers (ipt_entry vs ip6t_entry).
  const uint8_t* (*first_rule)(const char*, xtc_handle*);
  const uint8_t* (*next_rule)(const uint8_t*, xtc_handle*);
  const char* (*get_target)(const uint8_t*, xtc_handle*);
  int (*append)(const char*, const uint8_t*, xtc_handle*);
  int (*insert)(const char*, const uint8_t*, unsigned int, xtc_handle*);
  const char* name;  // "iptables" / "ip6tables" in messages
};

// libip4tc or libip6tc, opened at the first call for that family and kept (dlopen): loading them
// at every exec costs about a millisecond, and only the legacy mode and the listing of legacy
// tables use them. Errors: code 100 when the library is missing or lacks a function.
Result<const LegacyOps*> LoadLegacyOps(net::Family family);

}  // namespace nodegate::portmap::ipt
