// Dropout's mask: its statistics, backward = grad * mask, and replay from the same seed. (The
// exact mask values are checked against Philox in conformance_test.cpp, row dropout.seeded.)
#include <gtest/gtest.h>

#include <cmath>

#include "strata/autograd/engine.h"
#include "strata/core/generator.h"
#include "strata/core/philox.h"
#include "strata/ops.h"

namespace strata {
namespace {

Tensor dropout_with_seed(const Tensor& x, double p, uint64_t seed) {
  Generator g(seed);
  GeneratorGuard guard(g);
  return ops::dropout(x, p);
}

TEST(ConformanceDropout, MaskStatisticsMatchP) {
  const int64_t n = 1 << 16;
  for (double p : {0.1, 0.5, 0.8}) {
    SCOPED_TRACE(p);
    std::vector<double> y = dropout_with_seed(ops::ones({n}), p, 42).to_double_vector();
    const double scale = double(float(1.0 / (1.0 - p)));
    int64_t dropped = 0;
    double total = 0;
    for (double v : y) {
      if (v == 0) {
        ++dropped;
      } else {
        ASSERT_FLOAT_EQ(v, scale);  // kept elements are scaled by 1 / (1 - p)
      }
      total += v;
    }
    const double sigma = std::sqrt(p * (1 - p) / double(n));
    EXPECT_NEAR(double(dropped) / double(n), p, 5 * sigma);
    EXPECT_NEAR(total / double(n), 1.0, 5 * sigma * scale);  // inverted dropout keeps the mean
  }
}

TEST(ConformanceDropout, BackwardIsGradTimesMask) {
  for (DType dt : {DType::f32, DType::f64, DType::bf16}) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor x = ops::ones({7, 33}, TensorOptions(dt).requires_grad(true));
    Tensor y = dropout_with_seed(x, 0.3, 7);
    Tensor g = ops::randn({7, 33}, dt);
    Tensor dx = autograd::grad({y}, {x}, {g})[0];
    ASSERT_EQ(dx.dtype(), dt);
    std::vector<double> m = y.to_double_vector(), gv = g.to_double_vector(), dv = dx.to_double_vector();
    ASSERT_EQ(dv.size(), m.size());
    // The mask is 0 or 1 / (1 - p), held in f64 for f64 and in f32 otherwise; grad * mask is
    // computed there and rounded once to the dtype.
    const double scale = 1.0 / 0.7;
    for (size_t i = 0; i < m.size(); ++i) {
      double want = 0;
      if (m[i] != 0)
        want = dt == DType::f64 ? gv[i] * scale : double(float(gv[i]) * float(scale));
      if (dt == DType::bf16) want = double(float(bf16(float(want))));
      ASSERT_EQ(dv[i], want) << "element " << i;
    }
  }
}

TEST(ConformanceDropout, SameSeedSameMaskAndFreshDrawsDiffer) {
  Tensor x = ops::ones({1000});
  std::vector<double> a = dropout_with_seed(x, 0.5, 99).to_double_vector();
  std::vector<double> b = dropout_with_seed(x, 0.5, 99).to_double_vector();
  std::vector<double> c = dropout_with_seed(x, 0.5, 100).to_double_vector();
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  // Two draws from one generator use disjoint Philox ranges.
  Generator g(99);
  GeneratorGuard guard(g);
  std::vector<double> first = ops::dropout(x, 0.5).to_double_vector();
  std::vector<double> second = ops::dropout(x, 0.5).to_double_vector();
  EXPECT_EQ(first, a);
  EXPECT_NE(first, second);
}

TEST(ConformanceDropout, MaskDoesNotDependOnDtype) {
  // The keep decision is drawn in f32 whatever x's dtype, so a bf16 run drops the same elements.
  std::vector<double> ref = dropout_with_seed(ops::ones({4096}), 0.3, 5).to_double_vector();
  for (DType dt : {DType::f64, DType::bf16}) {
    SCOPED_TRACE(dtype_name(dt));
    std::vector<double> y = dropout_with_seed(ops::ones({4096}, dt), 0.3, 5).to_double_vector();
    for (size_t i = 0; i < y.size(); ++i) ASSERT_EQ(y[i] == 0, ref[i] == 0) << "element " << i;
  }
}

TEST(ConformanceDropout, EvalAndZeroPAreIdentityAndPOneIsZero) {
  Tensor x = ops::randn({3, 5});
  EXPECT_EQ(ops::dropout(x, 0.5, /*training=*/false).to_double_vector(), x.to_double_vector());
  EXPECT_EQ(ops::dropout(x, 0.0).to_double_vector(), x.to_double_vector());
  for (double v : ops::dropout(x, 1.0).to_double_vector()) EXPECT_EQ(v, 0.0);
  EXPECT_THROW(ops::dropout(x, 1.5), ValueError);
}

}  // namespace
}  // namespace strata

namespace strata {
namespace {

// The CPU fills take each Philox block once for the elements that share it: the numbers must be
// element i's word(seed, offset, i) (uniform) and words 2i, 2i + 1 (normal) as on every backend.
TEST(PhiloxFills, UniformAndNormalUseEachElementsOwnWords) {
  for (int64_t n : {1, 2, 3, 7, 64, 1001}) {
    Generator g(77);
    GeneratorGuard guard(g);
    g.reserve(8);  // start off the first block
    const RngState su = g.state();
    const std::vector<double> u = ops::rand({n}).to_double_vector();
    const RngState sn = g.state();
    const std::vector<double> z = ops::randn({n}, TensorOptions(DType::f64)).to_double_vector();
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_EQ(u[size_t(i)], double(philox::to_uniform(philox::word(su.seed, su.offset, uint64_t(i))))) << i;
      const float u1 = philox::to_uniform(philox::word(sn.seed, sn.offset, 2 * uint64_t(i)));
      const float u2 = philox::to_uniform(philox::word(sn.seed, sn.offset, 2 * uint64_t(i) + 1));
      EXPECT_EQ(z[size_t(i)],
                std::sqrt(-2.0 * std::log(1.0 - double(u1))) * std::cos(6.283185307179586 * double(u2)))
          << i;
    }
  }
}

}  // namespace
}  // namespace strata
