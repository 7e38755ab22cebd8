// The 16-bit float conversions of stitch_emu.h against independent references over every
// bit pattern, and the prelude's load/store converters on the host.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "stitch_prelude.cuh"

namespace {

using stitch_emu::bfloat16_bits_to_float;
using stitch_emu::float_to_bfloat16_bits;
using stitch_emu::float_to_half_bits;
using stitch_emu::half_bits_to_float;

TEST(EmuNumeric, HalfWideningIsExactAndNarrowingRoundTrips) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const float f = half_bits_to_float(static_cast<uint16_t>(bits));
    const bool is_nan = (bits & 0x7c00) == 0x7c00 && (bits & 0x03ff) != 0;
    if (is_nan) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << bits;
      ASSERT_EQ(float_to_half_bits(f), 0x7fff) << std::hex << bits;
    } else {
      ASSERT_EQ(float_to_half_bits(f), bits) << std::hex << bits;
    }
  }
}

TEST(EmuNumeric, BfloatWideningIsExactAndNarrowingRoundTrips) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const float f = bfloat16_bits_to_float(static_cast<uint16_t>(bits));
    const bool is_nan = (bits & 0x7f80) == 0x7f80 && (bits & 0x007f) != 0;
    ASSERT_EQ(float_to_bfloat16_bits(f), is_nan ? 0x7fff : bits) << std::hex << bits;
  }
}

#if defined(__FLT16_MAX__)
// GCC's _Float16 conversion (libgcc, round to nearest even) as the reference, over a
// stride of float bit patterns that hits every exponent, both signs and many ties.
TEST(EmuNumeric, HalfNarrowingMatchesCompilerFloat16) {
  for (uint64_t bits = 0; bits <= 0xffffffffull; bits += 4093) {
    const float f = stitch_emu::bits_float(static_cast<uint32_t>(bits));
    if (std::isnan(f)) continue;
    const _Float16 h = static_cast<_Float16>(f);
    uint16_t expected;
    std::memcpy(&expected, &h, sizeof expected);
    ASSERT_EQ(float_to_half_bits(f), expected) << std::hex << bits;
  }
  for (uint32_t half = 0; half < 0x7c00; ++half) {  // exact ties between neighbouring halves
    const double tie = (static_cast<double>(half_bits_to_float(static_cast<uint16_t>(half))) +
                        half_bits_to_float(static_cast<uint16_t>(half + 1))) /
                       2;
    const float f = static_cast<float>(tie);
    if (static_cast<double>(f) != tie) continue;
    ASSERT_EQ(float_to_half_bits(f), (half & 1) ? half + 1 : half) << std::hex << half;
  }
}
#endif

// bfloat16 reference: the nearer of the two neighbours in double, ties to the even one.
TEST(EmuNumeric, BfloatNarrowingRoundsToNearestEven) {
  for (uint64_t bits = 0; bits <= 0xffffffffull; bits += 4093) {
    const float f = stitch_emu::bits_float(static_cast<uint32_t>(bits));
    if (std::isnan(f)) continue;
    const uint32_t low = static_cast<uint32_t>(bits) >> 16;
    const double below = bfloat16_bits_to_float(static_cast<uint16_t>(low));
    // Past the largest finite value the next neighbour is 2^128, which rounds to inf.
    const double above = ((low + 1) & 0x7fff) == 0x7f80
                             ? std::copysign(std::ldexp(1.0, 128), static_cast<double>(f))
                             : bfloat16_bits_to_float(static_cast<uint16_t>(low + 1));
    const double d_below = std::fabs(static_cast<double>(f) - below);
    const double d_above = std::fabs(above - static_cast<double>(f));
    uint32_t expected =
        d_below < d_above ? low : (d_above < d_below ? low + 1 : ((low & 1) ? low + 1 : low));
    if ((low & 0x7f80) == 0x7f80) expected = low;  // f is +-inf (NaNs were skipped)
    ASSERT_EQ(float_to_bfloat16_bits(f), expected) << std::hex << bits;
  }
}

TEST(EmuNumeric, LoadsWidenAndStoresSaturate) {
  const long long big = std::numeric_limits<long long>::max();
  long long wide = 0;
  stitch_store_f(&wide, 1e30f);
  EXPECT_EQ(wide, big);
  stitch_store_f(&wide, -1e30f);
  EXPECT_EQ(wide, std::numeric_limits<long long>::min());
  stitch_store_f(&wide, -123.9f);
  EXPECT_EQ(wide, -123);
  unsigned short u16 = 7;
  stitch_store_f(&u16, std::nanf(""));
  EXPECT_EQ(u16, 0);
  stitch_store_f(&u16, 65535.5f);
  EXPECT_EQ(u16, 65535);
  bool flag = false;
  stitch_store_f(&flag, -0.0f);
  EXPECT_FALSE(flag);
  stitch_store_f(&flag, 0.25f);
  EXPECT_TRUE(flag);
  EXPECT_EQ(stitch_load_f(&flag), 1.0f);
  const double d = 0.1;
  EXPECT_EQ(stitch_load_f(&d), 0.1f);
  const __half h = __float2half_rn(0.1f);
  EXPECT_EQ(__half_as_ushort(h), 0x2e66);
  EXPECT_EQ(stitch_load_f(&h), half_bits_to_float(0x2e66));
  const unsigned char byte = 200;
  EXPECT_EQ(stitch_load_f(&byte), 200.0f);
}

}  // namespace
