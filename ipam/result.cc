#include "ipam/result.h"

namespace nodegate::ipam {

cni::CniResult IpamResult(const std::string& cni_version,
                          const std::vector<AddressInRange>& addresses,
                          const std::vector<cni::Route>& routes, const cni::Dns& dns) {
  cni::CniResult result;
  result.cni_version = cni_version;
  for (const auto& a : addresses) {
    result.ips.push_back(cni::IpConfig{.interface = std::nullopt,
                                       .address = net::IpPrefix(a.ip, a.range->subnet.length()),
                                       .gateway = a.range->gateway});
  }
  result.routes = routes;
  result.dns = dns;
  return result;
}

}  // namespace nodegate::ipam
