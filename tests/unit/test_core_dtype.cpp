// Dtype codes and the scalar half / bfloat16 conversions (core/dtype.h).
// Expected bits are what torch 2.13 gives for
// torch.tensor([x], dtype=float32).to(float16 / bfloat16).view(int16).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>

#include "core/dtype.h"
#include "core/error.h"

using namespace aotrt;

namespace {

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
uint32_t to_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

struct RoundCase {
  uint32_t f32;
  uint16_t half, bf16;
};
// torch 2.13 (f32 bits -> half bits, bfloat16 bits).
const RoundCase kRounding[] = {
    {0x3f800000, 0x3c00, 0x3f80},  // 1.0
    {0x3dcccccd, 0x2e66, 0x3dcd},  // 0.1
    {0x477fe000, 0x7bff, 0x4780},  // 65504: largest half
    {0x477feffd, 0x7bff, 0x4780},  // 65519.99: just below the rounding point
    {0x477ff000, 0x7c00, 0x4780},  // 65520: rounds to half inf
    {0x322bcc77, 0x0000, 0x322c},  // 1e-8: below half's range
    {0x33800000, 0x0001, 0x3380},  // 2^-24: smallest half subnormal
    {0x33000000, 0x0000, 0x3300},  // 2^-25: tie, rounds to even (zero)
    {0x33000001, 0x0001, 0x3300},  // just above the tie
    {0x3f802000, 0x3c01, 0x3f80},  // 1 + 2^-10
    {0x3f801000, 0x3c00, 0x3f80},  // 1 + 2^-11: tie to even (down)
    {0x3f803000, 0x3c02, 0x3f80},  // 1 + 3 * 2^-11: tie to even (up)
    {0x38800000, 0x0400, 0x3880},  // 2^-14: smallest half normal
    {0x387fc000, 0x03ff, 0x3880},  // largest half subnormal
    {0x80000000, 0x8000, 0x8000},  // -0
    {0x7f800000, 0x7c00, 0x7f80},  // inf
    {0xff800000, 0xfc00, 0xff80},  // -inf
    {0x40400000, 0x4200, 0x4040},  // 3
    {0x501502f9, 0x7c00, 0x5015},  // 1e10
    {0x45001000, 0x6800, 0x4500},  // 2049: tie to even
    {0x45003000, 0x6802, 0x4500},  // 2051: tie to even (up)
    {0x377ba882, 0x00fc, 0x377c},  // 1.5e-5: subnormal half
    {0x3f808000, 0x3c04, 0x3f80},  // bfloat16 tie, even stays
    {0x3f818000, 0x3c0c, 0x3f82},  // bfloat16 tie, odd rounds up
    {0x3f808001, 0x3c04, 0x3f81},  // just above a bfloat16 tie
    {0x3f80ffff, 0x3c08, 0x3f81},
    {0x7f7fffff, 0x7c00, 0x7f80},  // FLT_MAX: bfloat16 rounds to inf
    {0x00000001, 0x0000, 0x0000},  // smallest float subnormal
    {0x7f7f8000, 0x7c00, 0x7f80},
};

TEST(CoreDtype, FloatToHalfRoundsToNearestEven) {
  for (const RoundCase& c : kRounding) {
    EXPECT_EQ(float_to_half(from_bits(c.f32)), c.half) << std::hex << "f32 bits 0x" << c.f32;
  }
}

TEST(CoreDtype, FloatToBFloat16RoundsToNearestEven) {
  for (const RoundCase& c : kRounding) {
    EXPECT_EQ(float_to_bfloat16(from_bits(c.f32)), c.bf16) << std::hex << "f32 bits 0x" << c.f32;
  }
}

TEST(CoreDtype, NaNStaysNaNWithItsSign) {
  // torch's vectorised bfloat16 path gives 0xffff for any NaN and its scalar
  // path 0x7fc0; both are NaN, which is what is promised.
  for (uint32_t nan : {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0x7fc00001u, 0xff800001u}) {
    const uint16_t h = float_to_half(from_bits(nan));
    EXPECT_EQ(h & 0x7c00u, 0x7c00u) << std::hex << nan;
    EXPECT_NE(h & 0x03ffu, 0u) << std::hex << nan;
    EXPECT_EQ(h & 0x8000u, (nan >> 16) & 0x8000u) << std::hex << nan;
    const uint16_t b = float_to_bfloat16(from_bits(nan));
    EXPECT_TRUE(std::isnan(bfloat16_to_float(b))) << std::hex << nan;
  }
  EXPECT_EQ(float_to_half(from_bits(0x7fc00000u)), 0x7e00);  // torch: 7e00
  EXPECT_EQ(float_to_half(from_bits(0xffc00000u)), 0xfe00);  // torch: fe00
}

TEST(CoreDtype, HalfToFloatIsExact) {
  struct Case {
    uint16_t half;
    uint32_t f32;
  };
  const Case cases[] = {{0x0001, 0x33800000}, {0x03ff, 0x387fc000}, {0x0400, 0x38800000},
                        {0x3c00, 0x3f800000}, {0x7bff, 0x477fe000}, {0x7c00, 0x7f800000},
                        {0xfc00, 0xff800000}, {0x8001, 0xb3800000}, {0x3555, 0x3eaaa000},
                        {0x8000, 0x80000000}, {0x0000, 0x00000000}};
  for (const Case& c : cases) {
    EXPECT_EQ(to_bits(half_to_float(c.half)), c.f32) << std::hex << "half 0x" << c.half;
  }
  EXPECT_TRUE(std::isnan(half_to_float(0x7e00)));
  EXPECT_TRUE(std::isnan(half_to_float(0x7c01)));
}

TEST(CoreDtype, EveryHalfRoundTripsThroughFloat) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const float f = half_to_float(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(float_to_half(f), h) << std::hex << "half 0x" << h;
  }
}

TEST(CoreDtype, EveryBFloat16RoundTripsThroughFloat) {
  for (uint32_t b = 0; b <= 0xffff; ++b) {
    const float f = bfloat16_to_float(static_cast<uint16_t>(b));
    if (std::isnan(f)) continue;
    ASSERT_EQ(float_to_bfloat16(f), b) << std::hex << "bfloat16 0x" << b;
  }
}

TEST(CoreDtype, CodesNamesAndKinds) {
  EXPECT_EQ(element_size(ScalarType::Complex128), 16u);
  EXPECT_TRUE(is_valid_dtype(15));
  EXPECT_FALSE(is_valid_dtype(12));  // QInt8: not served
  EXPECT_FALSE(is_valid_dtype(-1));
  EXPECT_STREQ(dtype_name(ScalarType::BFloat16), "bfloat16");
  EXPECT_STREQ(dtype_name(ScalarType::UInt64), "uint64");
  EXPECT_TRUE(is_floating(ScalarType::Float8_e4m3fn));
  EXPECT_FALSE(is_floating(ScalarType::Int32));
  EXPECT_TRUE(is_complex(ScalarType::Complex32));
  EXPECT_FALSE(is_complex(ScalarType::Float64));
}

TEST(CoreDtype, UnknownCodeIsRefusedNamingTheCaller) {
  try {
    to_dtype(13, "my_fn");
    FAIL() << "to_dtype(13) returned";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    const std::string what = e.what();
    EXPECT_NE(what.find("my_fn"), std::string::npos) << what;
    EXPECT_NE(what.find("13"), std::string::npos) << what;
  }
  EXPECT_EQ(to_dtype(6, "f"), ScalarType::Float32);
}

}  // namespace
