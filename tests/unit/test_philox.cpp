// Philox4x32-10 (core/philox.h) against the known-answer vectors published
// with Random123 (kat_vectors: philox4x32 10, counter then key, then the
// expected block), and the unit-interval conversions of Note [Random
// streams].
#include <gtest/gtest.h>

#include "core/philox.h"

namespace {

using aotrt::PhiloxBlock;

void expect_block(PhiloxBlock ctr, uint32_t k0, uint32_t k1, PhiloxBlock want) {
  const PhiloxBlock got = aotrt::philox4x32_10(ctr, k0, k1);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(got.w[i], want.w[i]) << "word " << i;
}

TEST(Philox, MatchesRandom123KnownAnswers) {
  expect_block({{0, 0, 0, 0}}, 0, 0, {{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}});
  expect_block({{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}}, 0xffffffffu, 0xffffffffu,
               {{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}});
  expect_block({{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}}, 0xa4093822u, 0x299f31d0u,
               {{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}});
}

TEST(Philox, StreamCounterAndSeedMapToTheLowWords) {
  const PhiloxBlock a = aotrt::philox4x32_10(0x299f31d0a4093822ull, 0x85a308d3243f6a88ull);
  const PhiloxBlock b = aotrt::philox4x32_10({{0x243f6a88u, 0x85a308d3u, 0, 0}}, 0xa4093822u,
                                             0x299f31d0u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(a.w[i], b.w[i]);
}

TEST(Philox, UnitIntervalsStayInside) {
  EXPECT_EQ(aotrt::philox_unit(0, 0), 0.0);
  EXPECT_LT(aotrt::philox_unit(0xffffffffu, 0xffffffffu), 1.0);
  EXPECT_EQ(aotrt::philox_unit_float(0), 0.0f);
  EXPECT_LT(aotrt::philox_unit_float(0xffffffffu), 1.0f);
  EXPECT_EQ(aotrt::philox_unit_float(0xffffffffu), 1.0f - 1.0f / 16777216.0f);
}

}  // namespace
