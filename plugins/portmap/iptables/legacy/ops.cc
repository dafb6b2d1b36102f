#include "plugins/portmap/iptables/legacy/ops.h"

#include <string>

#include "lib/sys/dynamic_library.h"

namespace nodegate::portmap::ipt {
namespace {

// Binds every member of `ops` to the library's function of that name under its prefix
// ("iptc_" / "ip6tc_"). The entry functions take and return the library's own entry type
// (ipt_entry / ip6t_entry) where LegacyOps has untyped bytes: the same pointer either way.
Status Bind(void* library, const std::string& prefix, LegacyOps& ops) {
  sys::SymbolBinder bind(library, prefix);
  bind(ops.init, "init");
  bind(ops.free, "free");
  bind(ops.is_chain, "is_chain");
  bind(ops.create_chain, "create_chain");
  bind(ops.flush_entries, "flush_entries");
  bind(ops.delete_chain, "delete_chain");
  bind(ops.delete_num_entry, "delete_num_entry");
  bind(ops.commit, "commit");
  bind(ops.strerror, "strerror");
  bind(ops.first_rule, "first_rule");
  bind(ops.next_rule, "next_rule");
  bind(ops.get_target, "get_target");
  bind(ops.append, "append_entry");
  bind(ops.insert, "insert_entry");
  return bind.Done("legacy iptables library");
}

Result<const LegacyOps*> OpenLegacyOps(net::Family family, LegacyOps& ops) {
  const bool v4 = family == net::Family::kV4;
  const char* library = v4 ? "libip4tc.so.2" : "libip6tc.so.2";
  NG_ASSIGN_OR_RETURN(void* handle, sys::OpenLibrary(library, "legacy iptables"));
  ops.family = family;
  ops.name = v4 ? "iptables" : "ip6tables";
  NG_RETURN_IF_ERROR(Bind(handle, v4 ? "iptc_" : "ip6tc_", ops));
  return &ops;
}

}  // namespace

Result<const LegacyOps*> LoadLegacyOps(net::Family family) {
  static LegacyOps ops4, ops6;
  if (family == net::Family::kV4) {
    static const Result<const LegacyOps*> loaded4 = OpenLegacyOps(family, ops4);
    return loaded4;
  }
  static const Result<const LegacyOps*> loaded6 = OpenLegacyOps(family, ops6);
  return loaded6;
}

}  // namespace nodegate::portmap::ipt
