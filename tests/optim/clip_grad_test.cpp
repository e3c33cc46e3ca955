// clip_grad_norm_: PyTorch's semantics (checked against PyTorch in optim_golden_test.cpp),
// deterministic reductions, and the tensor form that keeps the norm on a device.
#include "strata/optim/clip_grad.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "strata/core/generator.h"
#include "strata/ops.h"
#include "support/device_present.h"

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

namespace {

// Parameters with random f32 gradients (one large, to clip or not as max_norm says).
std::vector<Tensor> params_with_random_grads(uint64_t seed, Device dev = kCPU) {
  manual_seed(seed);
  std::vector<Tensor> ps;
  for (int64_t n : {1000, 37, 70000}) {
    Tensor p = ops::zeros({n}).to(dev);
    p.set_requires_grad(true);
    p.set_grad(ops::randn({n}).to(dev));
    ps.push_back(p);
  }
  return ps;
}

std::vector<double> grads_of(const std::vector<Tensor>& ps) {
  std::vector<double> all;
  for (const Tensor& p : ps)
    for (double v : p.grad().to(kCPU).to_double_vector()) all.push_back(v);
  return all;
}

}  // namespace

// The tensor form returns what the double one does, in a 1-element f64 tensor.
// ZeRO-2's building blocks: spans of a gradient starting on block boundaries give pieces that fold
// to clip_grad_norm_'s total bit for bit; a span starting mid-block is cut at the next boundary.
TEST(OptimClipGradNorm, PieceSumsOfAlignedSpansFoldToTheNormAndScalingIsTheClipsOwn) {
  manual_seed(5);
  const int64_t n = 2 * optim::kClipBlock + 7000;
  Tensor p = ops::zeros({n}, DType::f32);
  p.set_requires_grad(true);
  Tensor g = ops::randn({n}, DType::f32);
  p.set_grad(g.clone());
  const double norm = optim::clip_grad_norm_({p}, 1.0);
  const std::vector<float> clipped = p.grad().to_vector<float>();

  double sum = 0.0;
  const int64_t cut = optim::kClipBlock;  // two spans: [0, cut) and [cut, n)
  for (const auto& [begin, len] : {std::pair<int64_t, int64_t>{0, cut}, {cut, n - cut}})
    for (double v : optim::clip_piece_sums(g.narrow(0, begin, len).contiguous(), begin)) sum += v;
  EXPECT_EQ(std::sqrt(sum), norm);
  EXPECT_EQ(optim::clip_piece_sums(g.narrow(0, cut, n - cut).contiguous(), cut).size(), 2u);
  EXPECT_EQ(optim::clip_piece_sums(g.narrow(0, 100, 2 * optim::kClipBlock).contiguous(), 100).size(), 3u);
  EXPECT_TRUE(optim::clip_piece_sums(g.narrow(0, 0, 0).contiguous(), 0).empty());

  Tensor scaled = g.clone();
  optim::scale_gradients_({scaled}, 1.0 / (norm + 1e-6));
  EXPECT_EQ(scaled.to_vector<float>(), clipped);
}

TEST(OptimClipGradNorm, TensorFormMatchesTheDoubleOne) {
  for (double max_norm : {1.0, 1e6}) {
    std::vector<Tensor> a = params_with_random_grads(4), b = params_with_random_grads(4);
    const double total = optim::clip_grad_norm_(a, max_norm);
    Tensor t = optim::clip_grad_norm_tensor_(b, max_norm);
    ASSERT_EQ(t.numel(), 1);
    EXPECT_EQ(t.dtype(), DType::f64);
    EXPECT_EQ(t.item(), total);
    EXPECT_EQ(grads_of(b), grads_of(a));
  }
  EXPECT_EQ(optim::clip_grad_norm_tensor_({}, 1.0).item(), 0.0);
}

// The device path (the Backend's kernels, norm and scale kept in device memory), run here on the
// CPU backend: the host loops' norm to rounding and their clipped gradients, for every norm type,
// clipping or not.
TEST(OptimClipGradNorm, ComposedBackendPathMatchesTheHostLoops) {
  for (double p : {2.0, 1.0, 3.0, std::numeric_limits<double>::infinity()})
    for (double max_norm : {0.5, 1e9}) {
      std::vector<Tensor> host = params_with_random_grads(9), composed = params_with_random_grads(9);
      const double want = optim::clip_grad_norm_(host, max_norm, p);
      std::vector<Tensor> grads;
      for (const Tensor& q : composed) grads.push_back(q.grad());
      const double got = optim::detail::clip_grads_on_backend(backend_for(kCPU), grads, max_norm, p).item();
      EXPECT_NEAR(got, want, 1e-12 * want) << "p=" << p << " max_norm=" << max_norm;
      const std::vector<double> gh = grads_of(host), gc = grads_of(composed);
      for (size_t i = 0; i < gh.size(); ++i)
        ASSERT_NEAR(gc[i], gh[i], 1e-6 * std::fabs(gh[i]))
            << "p=" << p << " max_norm=" << max_norm << " at " << i;
    }
}

// On CUDA the tensor form waits for nothing and gives the CPU's norm and gradients.
TEST(CudaBackendClipGradNorm, KeepsTheNormOnTheDeviceAndMatchesTheCpu) {
  SKIP_WITHOUT_CUDA_DEVICE();
  std::vector<Tensor> cpu = params_with_random_grads(5), gpu = params_with_random_grads(5, cuda(0));
  const double want = optim::clip_grad_norm_(cpu, 2.0);
  Tensor got = optim::clip_grad_norm_tensor_(gpu, 2.0);
  EXPECT_TRUE(got.device().is_cuda());
  EXPECT_NEAR(got.item(), want, 1e-9 * want);
  const std::vector<double> gc = grads_of(cpu), gg = grads_of(gpu);
  for (size_t i = 0; i < gc.size(); ++i) ASSERT_NEAR(gg[i], gc[i], 1e-6 * std::fabs(gc[i])) << "at " << i;
}
