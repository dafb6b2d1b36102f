#pragma once
// libiptc and libip6tc, the x_tables (legacy) interface of each family, behind one table of
// functions: the legacy mode of the iptables backend and the listing of installed mappings
// both read table nat through it. Both are linked in, built from Debian's iptables source
// (third_party/): the executable loads nothing at run time.

extern "C" {  // libip6tc.h lacks its own C linkage block
#include <libiptc/libip6tc.h>
}
#include <libiptc/libiptc.h>

#include <cstdint>

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

// libip4tc's functions for kV4, libip6tc's for kV6.
const LegacyOps& LegacyOpsFor(net::Family family);

}  // namespace nodegate::portmap::ipt
