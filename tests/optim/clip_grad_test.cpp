// clip_grad_norm_: PyTorch's semantics (checked against PyTorch in optim_golden_test.cpp) and
// deterministic reductions.
#include <gtest/gtest.h>

#include <omp.h>

#include <cmath>
#include <limits>
#include <vector>

#include "strata/ops.h"
#include "strata/optim/clip_grad.h"

using namespace strata;

namespace {

Tensor param_with_grad(const std::vector<double>& grad, DType dt = DType::f64) {
  Tensor p = ops::zeros({int64_t(grad.size())}, dt);
  p.set_requires_grad(true);
  p.set_grad(ops::from_vector(grad, {int64_t(grad.size())}, dt));
  return p;
}

TEST(OptimClipGradNorm, ScalesByMaxNormOverTotalNormPlusEps) {
  Tensor a = param_with_grad({3.0, 0.0}), b = param_with_grad({0.0, 4.0, 0.0});
  double total = optim::clip_grad_norm_({a, b}, 1.0);
  EXPECT_DOUBLE_EQ(total, 5.0);
  const double coef = 1.0 / (5.0 + 1e-6);
  EXPECT_DOUBLE_EQ(a.grad().to_double_vector()[0], 3.0 * coef);
  EXPECT_DOUBLE_EQ(b.grad().to_double_vector()[1], 4.0 * coef);
}

TEST(OptimClipGradNorm, LeavesSmallGradientsAndSkipsParametersWithoutGrad) {
  Tensor a = param_with_grad({0.3, -0.4});
  Tensor none = ops::zeros({2}, DType::f64);
  none.set_requires_grad(true);
  EXPECT_DOUBLE_EQ(optim::clip_grad_norm_({a, none}, 1.0), 0.5);
  EXPECT_EQ(a.grad().to_double_vector(), (std::vector<double>{0.3, -0.4}));
  EXPECT_EQ(optim::clip_grad_norm_({none}, 1.0), 0.0);
}

TEST(OptimClipGradNorm, InfinityAndOtherNormTypes) {
  Tensor a = param_with_grad({1.0, -6.0}), b = param_with_grad({2.0});
  EXPECT_DOUBLE_EQ(optim::clip_grad_norm_({a, b}, 100.0, std::numeric_limits<double>::infinity()), 6.0);
  EXPECT_DOUBLE_EQ(optim::clip_grad_norm_({a, b}, 100.0, 1.0), 9.0);
  EXPECT_THROW(optim::clip_grad_norm_({a, b}, 1.0, 0.0), ValueError);
}

TEST(OptimClipGradNorm, SameBitsForAnyThreadCount) {
  manual_seed(3);
  Tensor p = ops::zeros({300001}, DType::f32);
  p.set_requires_grad(true);
  Tensor g = ops::randn({300001}, DType::f32);
  double norms[2];
  std::vector<double> grads[2];
  int threads[2] = {1, 2};
  for (int k = 0; k < 2; ++k) {
    int prev = omp_get_max_threads();
    omp_set_num_threads(threads[k]);
    p.set_grad(g.clone());
    norms[k] = optim::clip_grad_norm_({p}, 1.0);
    omp_set_num_threads(prev);
    grads[k] = p.grad().to_double_vector();
  }
  EXPECT_EQ(norms[0], norms[1]);
  EXPECT_EQ(grads[0], grads[1]);
  double ref = 0.0;
  for (double v : g.to_double_vector()) ref += v * v;
  EXPECT_NEAR(norms[0], std::sqrt(ref), 1e-9 * std::sqrt(ref));
}

}  // namespace
