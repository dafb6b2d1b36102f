#include "plugins/portmap/iptables/legacy/ops.h"

namespace nodegate::portmap::ipt {
namespace {

// The entry functions take and return the library's own entry type (ipt_entry / ip6t_entry)
// where LegacyOps has untyped bytes: the same pointer either way.
template <typename Entry>
const uint8_t* EntryBytes(const Entry* entry) {
  return reinterpret_cast<const uint8_t*>(entry);
}
template <typename Entry>
const Entry* AsEntry(const uint8_t* bytes) {
  return reinterpret_cast<const Entry*>(bytes);
}

const LegacyOps kIpv4Ops = {
    .family = net::Family::kV4,
    .init = iptc_init,
    .free = iptc_free,
    .is_chain = iptc_is_chain,
    .create_chain = iptc_create_chain,
    .flush_entries = iptc_flush_entries,
    .delete_chain = iptc_delete_chain,
    .delete_num_entry = iptc_delete_num_entry,
    .commit = iptc_commit,
    .strerror = iptc_strerror,
    .first_rule = [](const char* chain,
                     xtc_handle* h) { return EntryBytes(iptc_first_rule(chain, h)); },
    .next_rule =
        [](const uint8_t* prev, xtc_handle* h) {
          return EntryBytes(iptc_next_rule(AsEntry<ipt_entry>(prev), h));
        },
    .get_target = [](const uint8_t* e,
                     xtc_handle* h) { return iptc_get_target(AsEntry<ipt_entry>(e), h); },
    .append = [](const char* chain, const uint8_t* e,
                 xtc_handle* h) { return iptc_append_entry(chain, AsEntry<ipt_entry>(e), h); },
    .insert =
        [](const char* chain, const uint8_t* e, unsigned int position, xtc_handle* h) {
          return iptc_insert_entry(chain, AsEntry<ipt_entry>(e), position, h);
        },
    .name = "iptables",
};

const LegacyOps kIpv6Ops = {
    .family = net::Family::kV6,
    .init = ip6tc_init,
    .free = ip6tc_free,
    .is_chain = ip6tc_is_chain,
    .create_chain = ip6tc_create_chain,
    .flush_entries = ip6tc_flush_entries,
    .delete_chain = ip6tc_delete_chain,
    .delete_num_entry = ip6tc_delete_num_entry,
    .commit = ip6tc_commit,
    .strerror = ip6tc_strerror,
    .first_rule = [](const char* chain,
                     xtc_handle* h) { return EntryBytes(ip6tc_first_rule(chain, h)); },
    .next_rule =
        [](const uint8_t* prev, xtc_handle* h) {
          return EntryBytes(ip6tc_next_rule(AsEntry<ip6t_entry>(prev), h));
        },
    .get_target = [](const uint8_t* e,
                     xtc_handle* h) { return ip6tc_get_target(AsEntry<ip6t_entry>(e), h); },
    .append = [](const char* chain, const uint8_t* e,
                 xtc_handle* h) { return ip6tc_append_entry(chain, AsEntry<ip6t_entry>(e), h); },
    .insert =
        [](const char* chain, const uint8_t* e, unsigned int position, xtc_handle* h) {
          return ip6tc_insert_entry(chain, AsEntry<ip6t_entry>(e), position, h);
        },
    .name = "ip6tables",
};

}  // namespace

const LegacyOps& LegacyOpsFor(net::Family family) {
  return family == net::Family::kV4 ? kIpv4Ops : kIpv6Ops;
}

}  // namespace nodegate::portmap::ipt
