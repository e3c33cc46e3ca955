// ops::norm beyond the conformance rows: known values, PyTorch's zero gradient at a zero norm, refusals.
#include <gtest/gtest.h>

#include <cmath>

#include "strata/strata.h"
#include "tests/support/error_of.h"

using namespace strata;
using strata::testing::error_of;

// [3, -4]: 7, 5 and 4 for p = 1, 2 and infinity; [[1, 2], [3, 4]]: Frobenius sqrt(30).
TEST(Norm, KnownValues) {
  const Tensor v = ops::from_vector(std::vector<float>{3, -4}, {2});
  EXPECT_FLOAT_EQ(ops::norm(v, 1).item(), 7.0);
  EXPECT_FLOAT_EQ(ops::norm(v).item(), 5.0);
  EXPECT_FLOAT_EQ(ops::norm(v, INFINITY).item(), 4.0);
  const Tensor m = ops::from_vector(std::vector<float>{1, 2, 3, 4}, {2, 2});
  EXPECT_FLOAT_EQ(ops::frobenius_norm(m).item(), std::sqrt(30.0f));
  EXPECT_EQ(ops::frobenius_norm(m, /*keepdim=*/true).shape(), (Shape{1, 1}));
}

// A zero vector has norm 0 and, as in PyTorch, gradient 0 (not 0 / 0); beside it a nonzero row's
// gradient is x / |x|.
TEST(Norm, GradientAtAZeroNormIsZero) {
  for (double p : {2.0, 3.0}) {
    Tensor x = ops::from_vector(std::vector<float>{0, 0, 3, 4}, {2, 2});
    x.set_requires_grad(true);
    Tensor n = ops::norm(x, p, {1});
    EXPECT_EQ(n.to_vector<float>()[0], 0.0f);
    ops::sum(n).backward();
    const std::vector<float> g = x.grad().to_vector<float>();
    EXPECT_EQ(g[0], 0.0f) << "p " << p;
    EXPECT_EQ(g[1], 0.0f) << "p " << p;
    if (p == 2) {
      EXPECT_FLOAT_EQ(g[2], 0.6f);
      EXPECT_FLOAT_EQ(g[3], 0.8f);
    }
    EXPECT_TRUE(std::isfinite(g[2]) && std::isfinite(g[3]));
  }
}

TEST(Norm, RefusesANonPositivePAndIntegers) {
  const Tensor v = ops::from_vector(std::vector<float>{3, -4}, {2});
  EXPECT_NE(error_of([&] { ops::norm(v, 0); }).find("norm: p 0 must be positive"), std::string::npos);
  EXPECT_NE(error_of([&] { ops::norm(v, NAN); }).find("must be positive"), std::string::npos);
  const Tensor i = ops::from_vector(std::vector<int64_t>{3, 4}, {2});
  EXPECT_NE(error_of([&] { ops::norm(i); }).find("is not floating point"), std::string::npos);
  EXPECT_NE(error_of([&] { ops::frobenius_norm(v); }).find("fewer than 2 dims"), std::string::npos);
}
