#include "lib/tc/tbf.h"

#include <cmath>
#include <cstdio>

#include "lib/sys/atomic_file.h"

namespace nodegate::tc {

double PschedClock::TicksPerUsec() const {
  // vishvananda/netlink (as iproute2): with a 1 GHz clock resolution the first word is replaced
  // by the second; then tickInUsec = t2us / us2t * (clock_res / 1e6).
  const double t2us_used = clock_res == 1000000000u ? us2t : t2us;
  const double clock_factor = static_cast<double>(clock_res) / 1e6;
  return t2us_used / static_cast<double>(us2t) * clock_factor;
}

Result<PschedClock> PschedClock::Parse(std::string_view text) {
  PschedClock clock;
  std::string copy(text);
  unsigned int a = 0, b = 0, c = 0;
  if (std::sscanf(copy.c_str(), "%x %x %x", &a, &b, &c) != 3 || b == 0) {
    return Error(kErrIo, "cannot parse /proc/net/psched: \"" + copy + "\"");
  }
  clock.t2us = a;
  clock.us2t = b;
  clock.clock_res = c;
  return clock;
}

Result<PschedClock> PschedClock::ReadFromProc() {
  auto text = sys::ReadFile("/proc/net/psched");
  if (!text.ok()) {
    return Error(kErrIo, "cannot read /proc/net/psched");
  }
  return Parse(*text);
}

uint32_t GoFloatToUint32(double value) {
  if (std::isnan(value) || value >= 9223372036854775808.0 || value < -9223372036854775808.0) {
    return 0;
  }
  return static_cast<uint32_t>(static_cast<uint64_t>(static_cast<int64_t>(value)));
}

TbfParams ComputeTbf(uint64_t rate_bits, uint64_t burst_bits, const PschedClock& clock) {
  TbfParams p;
  p.rate_bytes = rate_bits / 8;
  p.burst_bytes = static_cast<uint32_t>(burst_bits / 8);
  const double rate = static_cast<double>(p.rate_bytes);
  const uint32_t usec = GoFloatToUint32(static_cast<double>(p.burst_bytes) * 1e6 / rate);
  p.buffer_ticks = GoFloatToUint32(static_cast<double>(usec) * clock.TicksPerUsec());
  p.limit_bytes = GoFloatToUint32(rate * kTbfLatencyUsec / 1e6) + p.burst_bytes;
  return p;
}

bool TbfBufferWrapped(uint64_t rate_bits, uint64_t burst_bits, const PschedClock& clock) {
  // Whole bytes, as the reference divides (integers) before converting.
  const double rate = static_cast<double>(rate_bits / 8);  // NOLINT(bugprone-integer-division)
  const double usec = static_cast<double>(static_cast<uint32_t>(burst_bits / 8)) * 1e6 / rate;
  return usec >= 4294967296.0 || usec * clock.TicksPerUsec() >= 4294967296.0;
}

}  // namespace nodegate::tc
