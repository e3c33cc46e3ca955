#include <gtest/gtest.h>

#include "strata/core/philox.h"
#include "strata/ops.h"

using namespace strata;

// Known-answer vectors of Philox4x32-10 from the Random123 distribution (kat_vectors).
TEST(Philox, MatchesRandom123KnownAnswers) {
  philox::U32x4 r = philox::philox4x32_10({0, 0, 0, 0}, 0, 0);
  EXPECT_EQ(r.x, 0x6627e8d5u);
  EXPECT_EQ(r.y, 0xe169c58du);
  EXPECT_EQ(r.z, 0xbc57ac4cu);
  EXPECT_EQ(r.w, 0x9b00dbd8u);
  r = philox::philox4x32_10({0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, 0xffffffffu, 0xffffffffu);
  EXPECT_EQ(r.x, 0x408f276du);
  EXPECT_EQ(r.y, 0x41c83b0eu);
  EXPECT_EQ(r.z, 0xa20bc7c6u);
  EXPECT_EQ(r.w, 0x6d5451fdu);
  r = philox::philox4x32_10({0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}, 0xa4093822u, 0x299f31d0u);
  EXPECT_EQ(r.x, 0xd16cfe09u);
  EXPECT_EQ(r.y, 0x94fdccebu);
  EXPECT_EQ(r.z, 0x5001e420u);
  EXPECT_EQ(r.w, 0x24126ea1u);
}

TEST(Generator, SameSeedAndOffsetReplayTheSameNumbers) {
  Generator g(1234);
  Tensor a, b, c;
  {
    GeneratorGuard guard(g);
    a = ops::rand({1000});
    b = ops::rand({1000});
  }
  EXPECT_EQ(g.offset(), 2000u);
  g.set_state({1234, 1000});
  {
    GeneratorGuard guard(g);
    c = ops::rand({1000});
  }
  EXPECT_EQ(b.to_double_vector(), c.to_double_vector());
  EXPECT_NE(a.to_double_vector(), b.to_double_vector());
}

TEST(Generator, UniformAndNormalHaveTheRightMoments) {
  manual_seed(7);
  Tensor u = ops::rand({200000}, DType::f64);
  Tensor n = ops::randn({200000}, DType::f64);
  EXPECT_NEAR(ops::mean(u).item(), 0.5, 0.005);
  EXPECT_NEAR(ops::var(u, {0}).item(), 1.0 / 12.0, 0.002);
  EXPECT_NEAR(ops::mean(n).item(), 0.0, 0.01);
  EXPECT_NEAR(ops::var(n, {0}).item(), 1.0, 0.01);
  EXPECT_LT(ops::max(u).item(), 1.0);
  EXPECT_GE(ops::min(u).item(), 0.0);
}
