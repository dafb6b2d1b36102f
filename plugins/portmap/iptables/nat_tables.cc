// The kernel's tables nat: the legacy writer (libiptc), the nf_tables writer (iptables-nft's
// encoding) and the reads that tell which of them holds or can hold the layout.
#include "plugins/portmap/iptables/nat_tables.h"

extern "C" {  // libip6tc.h lacks its own C linkage block
#include <libiptc/libip6tc.h>
}
#include <libiptc/libiptc.h>
#include <sys/socket.h>

#include <cstring>

#include "lib/netfilter/query.h"
#include "lib/sys/fd.h"
#include "lib/sys/kernel_module.h"
#include "plugins/portmap/iptables/legacy/table.h"
#include "plugins/portmap/iptables/nft/table.h"
#include "plugins/portmap/iptables/rules.h"

namespace nodegate::portmap::ipt {
namespace {

// Whether table nat of the family answers, from its header alone (IPT_SO_GET_INFO, a few
// hundred bytes; opening a snapshot copies the whole table, about 6 ms per 1,000 mappings).
// The kernel loads iptable_nat for this request when needed, as it does for libiptc's.
template <typename Info>
bool TableAnswers(int domain, int level, int option) {
  sys::UniqueFd fd(::socket(domain, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW));
  if (!fd.valid()) return false;
  Info info{};
  std::strncpy(info.name, kTable, sizeof(info.name) - 1);
  socklen_t len = sizeof(info);
  return ::getsockopt(fd.get(), level, option, &info, &len) == 0;
}

// The x_tables core of the family (ip_tables, ip6_tables): libiptc's socket options exist only
// once it is in, and unlike nf_tables' parts the kernel does not load it on demand. The
// iptables tools load it before their first call (xtables_load_ko), by the same test: on a
// node where nothing used the legacy tables since boot, the first ADD does it here.
Status EnsureXtablesLoaded(net::Family family) {
  const bool v4 = family == net::Family::kV4;
  if (sys::KernelModuleLoaded(v4 ? "/proc/net/ip_tables_names" : "/proc/net/ip6_tables_names")) {
    return OkStatus();
  }
  Status loaded = sys::LoadKernelModule(v4 ? "ip_tables" : "ip6_tables");
  if (!loaded.ok()) return loaded.error().WithContext(v4 ? "iptables" : "ip6tables");
  return OkStatus();
}

bool LegacyUsable(net::Family family) {
  if (!EnsureXtablesLoaded(family).ok()) return false;
  return family == net::Family::kV4
             ? TableAnswers<ipt_getinfo>(AF_INET, IPPROTO_IP, IPT_SO_GET_INFO)
             : TableAnswers<ip6t_getinfo>(AF_INET6, IPPROTO_IPV6, IP6T_SO_GET_INFO);
}

class KernelNatTables final : public NatTables {
 public:
  Status Transact(net::Family family, IptablesMode mode, const NatTableChange& change,
                  const std::vector<std::string>& chains_read) override {
    if (mode == IptablesMode::kNft) return TransactNft(family, change, chains_read);
    NG_RETURN_IF_ERROR(EnsureXtablesLoaded(family));
    return TransactLegacy(family, change);
  }

  ModeChoice ChooseMode(net::Family family, std::optional<IptablesMode> configured) override {
    return portmap::ChooseMode(family, configured, NodeView::Real());
  }

  bool Usable(net::Family family, IptablesMode mode) override {
    return mode == IptablesMode::kNft ? NftNatTable::Usable(family).ok() : LegacyUsable(family);
  }

  bool MayHoldChain(net::Family family, IptablesMode mode, const std::string& chain) override {
    if (mode == IptablesMode::kLegacy) return LegacyTableLoaded(family, kTable);
    auto present = netfilter::HasChain(family == net::Family::kV4 ? 2 : 10, kTable, chain);
    return present.ok() && *present;
  }
};

}  // namespace

NatTables& RealNatTables() {
  static KernelNatTables tables;
  return tables;
}

}  // namespace nodegate::portmap::ipt
