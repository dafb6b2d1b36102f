#include "admit/api/quantity.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>

namespace nodegate::admit {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

struct ParseCase {
  std::string name;
  std::string input;
  int64_t value;
  int64_t milli;
};

class QuantityParseTest : public ::testing::TestWithParam<ParseCase> {};

TEST_P(QuantityParseTest, ValueAndMilliValue) {
  const ParseCase& c = GetParam();
  auto q = Quantity::Parse(c.input);
  ASSERT_TRUE(q.ok()) << c.input << ": " << q.error().msg;
  EXPECT_EQ(q->Value(), c.value) << c.input;
  EXPECT_EQ(q->MilliValue(), c.milli) << c.input;
}

INSTANTIATE_TEST_SUITE_P(
    Quantities, QuantityParseTest,
    ::testing::Values(
        // Fast path and zeros with every suffix.
        ParseCase{"zero", "0", 0, 0}, ParseCase{"zero_nano", "0n", 0, 0},
        ParseCase{"zero_micro", "0u", 0, 0}, ParseCase{"zero_milli", "0m", 0, 0},
        ParseCase{"zero_kibi", "0Ki", 0, 0}, ParseCase{"zero_kilo", "0k", 0, 0},
        ParseCase{"zero_exponent", "0e3", 0, 0}, ParseCase{"zero_decimal", "0.000", 0, 0},
        ParseCase{"leading_zeros", "007", 7, 7000},
        // Plain numbers and decimals.
        ParseCase{"integer", "2", 2, 2000}, ParseCase{"half_rounds_up", "0.5", 1, 500},
        ParseCase{"one_and_half", "1.5", 2, 1500}, ParseCase{"leading_dot", ".5", 1, 500},
        ParseCase{"trailing_dot", "5.", 5, 5000}, ParseCase{"plus_sign", "+1", 1, 1000},
        ParseCase{"tenth", "0.1", 1, 100}, ParseCase{"ten_thousandth", "0.0001", 1, 1},
        // Decimal SI suffixes.
        ParseCase{"nano", "1n", 1, 1}, ParseCase{"micro", "1u", 1, 1},
        ParseCase{"micro_1500", "1500u", 1, 2}, ParseCase{"milli", "100m", 1, 100},
        ParseCase{"milli_exact", "1000m", 1, 1000}, ParseCase{"kilo", "1k", 1000, 1000000},
        ParseCase{"mega", "1M", 1000000, 1000000000},
        ParseCase{"giga", "1G", 1000000000, 1000000000000},
        ParseCase{"tera", "1T", 1000000000000, 1000000000000000},
        ParseCase{"peta", "1P", 1000000000000000, 1000000000000000000},
        ParseCase{"exa", "1E", 1000000000000000000, kMax},
        ParseCase{"decimal_with_suffix", "1.5k", 1500, 1500000},
        ParseCase{"dot_suffix", "1.G", 1000000000, 1000000000000},
        // Binary SI suffixes.
        ParseCase{"kibi", "1Ki", 1024, 1024000}, ParseCase{"mebi", "1Mi", 1048576, 1048576000},
        ParseCase{"gibi", "1Gi", 1073741824, 1073741824000},
        ParseCase{"tebi", "1Ti", 1099511627776, 1099511627776000},
        ParseCase{"pebi", "1Pi", 1125899906842624, 1125899906842624000},
        ParseCase{"exbi", "1Ei", 1152921504606846976, kMax},
        ParseCase{"fractional_gibi", "1.5Gi", 1610612736, 1610612736000},
        ParseCase{"half_kibi", "0.5Ki", 512, 512000},
        ParseCase{"binary_capped_at_max_int64", "8Ei", kMax, kMax},
        ParseCase{"tiny_binary_rounds_up_to_nano", "0.0000000001Ki", 1, 1},
        // Decimal exponents.
        ParseCase{"exponent", "1e3", 1000, 1000000},
        ParseCase{"upper_exponent", "1E3", 1000, 1000000},
        ParseCase{"signed_exponent", "1e+3", 1000, 1000000},
        ParseCase{"negative_exponent", "12e-2", 1, 120},
        ParseCase{"negative_exponent_milli", "5e-3", 1, 5},
        ParseCase{"huge_exponent_saturates", "1e100", kMax, kMax},
        ParseCase{"tiny_exponent_rounds_up", "1e-100", 1, 1},
        // Rounding: below a nano rounds up to one nano; Value/MilliValue round up.
        ParseCase{"finer_than_nano", "0.0000000001", 1, 1},
        ParseCase{"just_above_one", "1.000000001", 2, 1001},
        ParseCase{"many_digits", "1.00000000000000000000000000000000000000000001", 2, 1001},
        ParseCase{"max_int64", "9223372036854775807", kMax, kMax},
        // Negative values round away from zero.
        ParseCase{"negative", "-1", -1, -1000}, ParseCase{"negative_half", "-0.5", -1, -500},
        ParseCase{"negative_binary", "-1Ki", -1024, -1024000},
        // Upstream quirks: a bare sign or dot is zero.
        ParseCase{"bare_minus_is_zero", "-", 0, 0}, ParseCase{"bare_dot_is_zero", ".", 0, 0}),
    [](const ::testing::TestParamInfo<ParseCase>& info) { return info.param.name; });

struct ErrorCase {
  std::string name;
  std::string input;
  std::string_view error;
};

class QuantityParseErrorTest : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(QuantityParseErrorTest, Rejects) {
  const ErrorCase& c = GetParam();
  auto q = Quantity::Parse(c.input);
  ASSERT_FALSE(q.ok()) << c.input;
  EXPECT_EQ(q.error().msg, c.error) << c.input;
}

INSTANTIATE_TEST_SUITE_P(
    Quantities, QuantityParseErrorTest,
    ::testing::Values(ErrorCase{"empty", "", Quantity::kErrFormatWrong},
                      ErrorCase{"letters", "abc", Quantity::kErrFormatWrong},
                      ErrorCase{"leading_space", " 1", Quantity::kErrFormatWrong},
                      ErrorCase{"trailing_space", "1 ", Quantity::kErrFormatWrong},
                      ErrorCase{"two_dots", "1.2.3", Quantity::kErrFormatWrong},
                      ErrorCase{"unit_word", "1 cpu", Quantity::kErrFormatWrong},
                      ErrorCase{"upper_kilo", "1K", Quantity::kErrSuffix},
                      ErrorCase{"lone_e", "1e", Quantity::kErrSuffix},
                      ErrorCase{"binary_with_digits", "1Mi2", Quantity::kErrSuffix},
                      ErrorCase{"lower_binary", "1ki", Quantity::kErrSuffix},
                      ErrorCase{"double_sign", "--1", Quantity::kErrSuffix},
                      ErrorCase{"exponent_of_exponent", "1ee3", Quantity::kErrSuffix}),
    [](const ::testing::TestParamInfo<ErrorCase>& info) { return info.param.name; });

TEST(QuantityAdd, SumsExactlyBeforeRounding) {
  // 0.4m three times is 1.2m: one rounding gives 2m, rounding each would give 3m.
  Quantity sum;
  for (int i = 0; i < 3; ++i) {
    sum.Add(*Quantity::Parse("0.0004"));
  }
  EXPECT_EQ(sum.MilliValue(), 2);
}

TEST(QuantityAdd, SaturatesInsteadOfOverflowing) {
  Quantity sum;
  for (int i = 0; i < 100; ++i) {
    sum.Add(*Quantity::Parse("8Ei"));
  }
  EXPECT_EQ(sum.Value(), kMax);
}

TEST(QuantityFormat, CpuAndBytes) {
  EXPECT_EQ(FormatMilliCpu(2000), "2");
  EXPECT_EQ(FormatMilliCpu(250), "250m");
  EXPECT_EQ(FormatBytes(0), "0");
  EXPECT_EQ(FormatBytes(512 * 1024 * 1024), "512Mi");
  EXPECT_EQ(FormatBytes(1000000000), "1G");
  EXPECT_EQ(FormatBytes(1500), "1500");
  EXPECT_EQ(FormatBytes(2048), "2Ki");
}

}  // namespace
}  // namespace nodegate::admit
