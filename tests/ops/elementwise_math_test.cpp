#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ops/common/elementwise_math.h"

using strata::common::m_tanh;

// The vectorizable f32 tanh stays within a few ulp of libm's over the whole range.
TEST(ElementwiseMath, FastF32TanhIsWithinFourUlpOfLibm) {
  double worst = 0;
  for (float x = -20.f; x <= 20.f; x += 1.0f / 4096) {
    const double want = std::tanh(double(x));
    const double got = m_tanh(x);
    const double ulp = std::max(std::abs(double(std::nextafter(float(want), 2.f) - float(want))), 1e-45);
    worst = std::max(worst, std::abs(got - want) / ulp);
  }
  for (float x : {1e-30f, 1e-8f, 1e-4f, 0.2499f, 0.25f, 0.2501f}) {
    EXPECT_NEAR(m_tanh(x), std::tanh(double(x)), 4 * std::abs(std::tanh(double(x))) * 6e-8) << x;
    EXPECT_EQ(m_tanh(-x), -m_tanh(x));
  }
  EXPECT_LE(worst, 4.0);
  EXPECT_EQ(m_tanh(0.f), 0.f);
  EXPECT_EQ(m_tanh(std::numeric_limits<float>::infinity()), 1.f);
  EXPECT_EQ(m_tanh(-std::numeric_limits<float>::infinity()), -1.f);
  EXPECT_TRUE(std::isnan(m_tanh(std::numeric_limits<float>::quiet_NaN())));
}
