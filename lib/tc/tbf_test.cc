// TBF arithmetic against numbers observed on the reference plugin, Go's float conversion, and
// the psched clock read from /proc/net/psched's text.
#include "lib/tc/tbf.h"

#include <gtest/gtest.h>

#include <cmath>

namespace nodegate::tc {
namespace {

// 000003e8 00000040 000f4240 in /proc/net/psched: 15.625 ticks/us.
const PschedClock kClock;

TEST(TbfTest, MatchesReferenceObservations) {
  // Observed on the reference: rate 1Mbit burst 125000b (limit 128125, buffer 15625000) and
  // rate 2Mbit burst 62500b (limit 68750, buffer 3906250).
  TbfParams in = ComputeTbf(1000000, 1000000, kClock);
  EXPECT_EQ(in.rate_bytes, 125000u);
  EXPECT_EQ(in.burst_bytes, 125000u);
  EXPECT_EQ(in.limit_bytes, 128125u);
  EXPECT_EQ(in.buffer_ticks, 15625000u);
  TbfParams out = ComputeTbf(2000000, 500000, kClock);
  EXPECT_EQ(out.rate_bytes, 250000u);
  EXPECT_EQ(out.limit_bytes, 68750u);
  EXPECT_EQ(out.buffer_ticks, 3906250u);
}

TEST(TbfTest, TinyRateFromReferenceTests) {
  // The reference's own tests use rate 8 / burst 8: one byte per second, one byte of bucket.
  TbfParams p = ComputeTbf(8, 8, kClock);
  EXPECT_EQ(p.rate_bytes, 1u);
  EXPECT_EQ(p.limit_bytes, 1u);  // uint32(1 * 0.025) + 1
  EXPECT_EQ(p.buffer_ticks, 15625000u);
}

TEST(TbfTest, KubernetesDefaultBurstWrapsLikeTheReference) {
  // kubelet passes a burst of MaxInt32 bits; at 1 Mbit/s the bucket is 2147 s of traffic,
  // which does not fit tc's 32-bit tick field. Go's conversion keeps the low 32 bits.
  TbfParams p = ComputeTbf(1000000, 2147483647, kClock);
  EXPECT_EQ(p.burst_bytes, 268435455u);
  EXPECT_EQ(p.buffer_ticks, 3489660803u);  // 33554431875 mod 2^32
  EXPECT_EQ(p.limit_bytes, 3125u + 268435455u);
  EXPECT_TRUE(TbfBufferWrapped(1000000, 2147483647, kClock));
  EXPECT_FALSE(TbfBufferWrapped(1000000, 1000000, kClock));
}

TEST(TbfTest, RateAbove32BitsKeepsFullRate) {
  TbfParams p = ComputeTbf(40'000'000'000ull, 8'000'000, kClock);
  EXPECT_EQ(p.rate_bytes, 5'000'000'000ull);
  EXPECT_EQ(p.limit_bytes, 125'000'000u + 1'000'000u);
  EXPECT_EQ(p.buffer_ticks, 3125u);  // 200 us * 15.625
}

TEST(TbfTest, GoFloatConversion) {
  EXPECT_EQ(GoFloatToUint32(12.9), 12u);
  EXPECT_EQ(GoFloatToUint32(4294967296.0 + 5), 5u);
  EXPECT_EQ(GoFloatToUint32(1e300), 0u);
  EXPECT_EQ(GoFloatToUint32(std::nan("")), 0u);
}

TEST(PschedTest, ParsesProcFormat) {
  auto c = PschedClock::Parse("000003e8 00000040 000f4240 3b9aca00\n");
  ASSERT_TRUE(c.ok());
  EXPECT_DOUBLE_EQ(c->TicksPerUsec(), 15.625);
  auto ghz = PschedClock::Parse("000003e8 00000040 3b9aca00 3b9aca00\n");
  ASSERT_TRUE(ghz.ok());
  EXPECT_DOUBLE_EQ(ghz->TicksPerUsec(), 1000.0);  // t2us replaced by us2t, times 1e9/1e6
  EXPECT_FALSE(PschedClock::Parse("garbage").ok());
}

}  // namespace
}  // namespace nodegate::tc
