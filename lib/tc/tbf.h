#pragma once
// Token bucket filter parameters exactly as the reference bandwidth plugin computes them, so a
// TBF we install reads the same in `tc qdisc show` as one the reference installs:
//
//   rate_bytes   = rate_bits / 8
//   burst_bytes  = uint32(burst_bits / 8)
//   buffer_ticks = uint32( uint32(burst_bytes * 1e6 / rate_bytes) * ticks_per_usec )
//   limit_bytes  = uint32(rate_bytes * 25 ms) + burst_bytes
//
// The casts follow Go's float64 -> uint32 conversion on amd64 (through int64, keeping the low
// 32 bits), including its wrap-around for buckets that take longer than ~274 s to drain.
//
//   NG_ASSIGN_OR_RETURN(tc::PschedClock clock, tc::PschedClock::ReadFromProc());
//   tc::TbfParams p = tc::ComputeTbf(1'000'000, 1'000'000, clock);  // 1 Mbit/s, 1 Mbit burst
//   // p.rate_bytes 125000, p.limit_bytes 128125, p.buffer_ticks 15625000 (at 15.625 ticks/us)

#include <cstdint>
#include <string>
#include <string_view>

#include "lib/base/result.h"

namespace nodegate::tc {

// The kernel's packet scheduler clock from /proc/net/psched: four hex words
// "t2us us2t clock_res hz". The reference (vishvananda/netlink) reads the first three.
struct PschedClock {
  uint32_t t2us = 1000;
  uint32_t us2t = 64;
  uint32_t clock_res = 1000000;

  // Ticks per microsecond: t2us / us2t * clock_res / 1e6 (15.625 on every current kernel);
  // with clock_res 1e9, t2us is taken equal to us2t first (the reference library does so).
  double TicksPerUsec() const;

  static Result<PschedClock> Parse(std::string_view text);
  static Result<PschedClock> ReadFromProc();
};

// Latency the reference derives the queue limit from.
inline constexpr double kTbfLatencyUsec = 25000.0;

struct TbfParams {
  uint64_t rate_bytes = 0;    // bytes per second (TCA_TBF_RATE64 too when >= 2^32)
  uint32_t burst_bytes = 0;   // the bucket, as configured
  uint32_t buffer_ticks = 0;  // the bucket as transmit time, in psched ticks (tc_tbf_qopt.buffer)
  uint32_t limit_bytes = 0;   // queue limit (tc_tbf_qopt.limit)
  bool operator==(const TbfParams&) const = default;
};

// Go's uint32(float64) on amd64: via int64, low 32 bits kept; NaN and out-of-int64 give 0.
uint32_t GoFloatToUint32(double value);

// rate_bits must be >= 8 (config validation guarantees it).
TbfParams ComputeTbf(uint64_t rate_bits, uint64_t burst_bits, const PschedClock& clock);

// True when the reference's arithmetic wrapped the buffer (burst too long for the rate): the
// installed bucket is then not the configured one. We keep the reference's numbers and warn.
bool TbfBufferWrapped(uint64_t rate_bits, uint64_t burst_bits, const PschedClock& clock);

}  // namespace nodegate::tc
