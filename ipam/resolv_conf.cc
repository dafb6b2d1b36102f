#include "ipam/resolv_conf.h"

#include <string_view>
#include <vector>

#include "lib/base/split.h"
#include "lib/sys/io.h"

namespace nodegate::ipam {

cni::Dns ParseResolvConfText(std::string_view text) {
  cni::Dns dns;
  for (const std::string_view line : SplitLikeGetline(text, '\n')) {
    const std::vector<std::string_view> fields = Fields(line);
    if (fields.size() < 2 || fields[0][0] == '#' || fields[0][0] == ';') {
      continue;
    }
    if (fields[0] == "nameserver") {
      dns.nameservers.emplace_back(fields[1]);
    } else if (fields[0] == "domain") {
      dns.domain = std::string(fields[1]);
    } else if (fields[0] == "search") {
      dns.search.insert(dns.search.end(), fields.begin() + 1, fields.end());
    } else if (fields[0] == "options") {
      dns.options.insert(dns.options.end(), fields.begin() + 1, fields.end());
    }
  }
  return dns;
}

Result<cni::Dns> ReadResolvConf(const std::string& path) {
  // A resolv.conf is a few hundred bytes; a device such as /dev/zero never ends, and a FIFO
  // would block the call.
  constexpr size_t kCap = 1 << 20;
  auto text = sys::ReadRegularFile(path, kCap);
  if (!text.ok()) {
    return Error(kErrIo, "resolvConf: " + text.error().msg);
  }
  return ParseResolvConfText(*text);
}

}  // namespace nodegate::ipam
