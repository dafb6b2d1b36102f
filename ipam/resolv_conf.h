#pragma once
// resolvConf support: a resolv.conf-style host file turned into the result's "dns", parsed as
// the reference does (plugins/ipam/host-local/dns.go): trimmed lines, '#' and ';' comments,
// lines with fewer than two fields ignored; nameserver appends, domain replaces (last wins),
// search and options append every field after the keyword.

#include <string>
#include <string_view>

#include "lib/base/result.h"
#include "lib/cni/types.h"

namespace nodegate::ipam {

cni::Dns ParseResolvConfText(std::string_view text);

// Reads and parses the file. A missing or unreadable file is an error (code 5), as in the
// reference; so is anything but a regular file (a FIFO, /dev/zero) or one over 1 MiB.
Result<cni::Dns> ReadResolvConf(const std::string& path);

}  // namespace nodegate::ipam
