#pragma once
// The `nodegate cni` flags that become capability arguments (CONVENTIONS.md), parsed and
// validated before any plugin runs:
//
//   -p 8080:80              {"hostPort":8080,"containerPort":80,"protocol":"tcp"}
//   -p 5353:53/udp@192.0.2.1
//   {"hostPort":5353,"containerPort":53,"protocol":"udp","hostIP":"192.0.2.1"}
//   --bandwidth ingress=10mbit,burst=64kb,egress=1mbit
//       {"ingressRate":10000000,"ingressBurst":524288,"egressRate":1000000,"egressBurst":100000}
//
// Rates use tc's units: a bare number or "bit" is bit/s; kbit, mbit, gbit, tbit are powers of
// 1000 bit/s; kibit, mibit, gibit powers of 1024; bps, kbps, mbps, gbps are bytes per second.
// Bursts use tc's size units: a bare number or "b" is bytes; kb/k, mb/m, gb/g are powers of
// 1024 bytes; kbit, mbit, gbit are powers of 1024 bits. The capability wants bits, so bursts are
// converted. Without a burst, a direction gets 100 ms worth of its rate (at least 1500 bytes).

#include <cstdint>
#include <string>
#include <string_view>

#include "lib/base/result.h"
#include "lib/cni/types.h"

namespace nodegate::runtime {

Result<cni::Json> ParsePortMapping(std::string_view text);
Result<uint64_t> ParseRate(std::string_view text);        // bit/s
Result<uint64_t> ParseBurstBits(std::string_view text);   // bits
Result<cni::Json> ParseBandwidth(std::string_view text);  // the "bandwidth" capability value

}  // namespace nodegate::runtime
