#pragma once
// File: plugins/portmap/iptables_legacy_ops.h
//
// libiptc and libip6tc, the x_tables (legacy) interface of each family, behind one table of
// functions: the legacy mode of the iptables backend and the listing of installed mappings
// both read table nat through it.

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

inline const LegacyOps kOps4 = {
    net::Family::kV4,
    iptc_init,
    iptc_free,
    iptc_is_chain,
    iptc_create_chain,
    iptc_flush_entries,
    iptc_delete_chain,
    iptc_delete_num_entry,
    iptc_commit,
    iptc_strerror,
    [](const char* c, xtc_handle* h) {
      return reinterpret_cast<const uint8_t*>(iptc_first_rule(c, h));
    },
    [](const uint8_t* e, xtc_handle* h) {
      return reinterpret_cast<const uint8_t*>(
          iptc_next_rule(reinterpret_cast<const ipt_entry*>(e), h));
    },
    [](const uint8_t* e, xtc_handle* h) {
      return iptc_get_target(reinterpret_cast<const ipt_entry*>(e), h);
    },
    [](const char* c, const uint8_t* e, xtc_handle* h) {
      return iptc_append_entry(c, reinterpret_cast<const ipt_entry*>(e), h);
    },
    [](const char* c, const uint8_t* e, unsigned int n, xtc_handle* h) {
      return iptc_insert_entry(c, reinterpret_cast<const ipt_entry*>(e), n, h);
    },
    "iptables",
};

inline const LegacyOps kOps6 = {
    net::Family::kV6,
    ip6tc_init,
    ip6tc_free,
    ip6tc_is_chain,
    ip6tc_create_chain,
    ip6tc_flush_entries,
    ip6tc_delete_chain,
    ip6tc_delete_num_entry,
    ip6tc_commit,
    ip6tc_strerror,
    [](const char* c, xtc_handle* h) {
      return reinterpret_cast<const uint8_t*>(ip6tc_first_rule(c, h));
    },
    [](const uint8_t* e, xtc_handle* h) {
      return reinterpret_cast<const uint8_t*>(
          ip6tc_next_rule(reinterpret_cast<const ip6t_entry*>(e), h));
    },
    [](const uint8_t* e, xtc_handle* h) {
      return ip6tc_get_target(reinterpret_cast<const ip6t_entry*>(e), h);
    },
    [](const char* c, const uint8_t* e, xtc_handle* h) {
      return ip6tc_append_entry(c, reinterpret_cast<const ip6t_entry*>(e), h);
    },
    [](const char* c, const uint8_t* e, unsigned int n, xtc_handle* h) {
      return ip6tc_insert_entry(c, reinterpret_cast<const ip6t_entry*>(e), n, h);
    },
    "ip6tables",
};

inline const LegacyOps& OpsFor(net::Family family) {
  return family == net::Family::kV4 ? kOps4 : kOps6;
}

}  // namespace nodegate::portmap::ipt
