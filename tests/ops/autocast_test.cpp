// AutocastGuard: linear and the fused LM head multiply bf16 operands (oneDNN) and stay close to f32.
#include <gtest/gtest.h>

#include <cmath>

#include "strata/autograd/engine.h"
#include "strata/config.h"
#include "strata/core/generator.h"
#include "strata/ops.h"

namespace strata {
namespace {

// Normalized squared error sum (a - b)^2 / sum b^2.
double nmse(const Tensor& a, const Tensor& b) {
  std::vector<double> x = a.to_double_vector(), y = b.to_double_vector();
  double num = 0, den = 0;
  for (size_t i = 0; i < x.size(); ++i) num += (x[i] - y[i]) * (x[i] - y[i]), den += y[i] * y[i];
  return num / den;
}

TEST(Autocast, GuardNestsAndRestores) {
  EXPECT_FALSE(ops::autocast_enabled());
  {
    ops::AutocastGuard a(DType::bf16);
    EXPECT_TRUE(ops::autocast_enabled());
    {
      ops::AutocastGuard off(DType::bf16, false);
      EXPECT_FALSE(ops::autocast_enabled());
    }
    EXPECT_TRUE(ops::autocast_enabled());
  }
  EXPECT_FALSE(ops::autocast_enabled());
  EXPECT_THROW(ops::AutocastGuard(DType::f16), NotImplementedError);
}

// TF32 is per thread and off by default; on the CPU it changes no bit of a matmul.
TEST(AllowTf32, GuardNestsRestoresAndLeavesTheCpuExact) {
  manual_seed(5);
  Tensor a = ops::randn({33, 70}), b = ops::randn({70, 19});
  Tensor want = ops::matmul(a, b);
  EXPECT_FALSE(ops::tf32_allowed());
  {
    ops::AllowTf32Guard on;
    EXPECT_TRUE(ops::tf32_allowed());
    {
      ops::AllowTf32Guard off(false);
      EXPECT_FALSE(ops::tf32_allowed());
    }
    EXPECT_TRUE(ops::tf32_allowed());
    EXPECT_EQ(ops::matmul(a, b).to_double_vector(), want.to_double_vector());
  }
  EXPECT_FALSE(ops::tf32_allowed());
}

TEST(Autocast, LinearAndLmHeadAreCloseToF32WithF32Results) {
  if (!STRATA_HAVE_DNNL) GTEST_SKIP() << "built without oneDNN: autocast is a no-op";
  manual_seed(5);
  auto opts = TensorOptions().requires_grad(true);
  Tensor x = ops::randn({3, 17, 40}, opts), w = ops::randn({24, 40}, opts), b = ops::randn({24}, opts);
  Tensor e = ops::randn({50, 24}, opts);
  std::vector<int64_t> tv;
  for (int i = 0; i < 51; ++i) tv.push_back(i % 7 == 0 ? -100 : (i * 13) % 50);
  Tensor t = ops::from_vector(tv, {3, 17});
  auto run = [&](bool amp) {
    ops::AutocastGuard g(DType::bf16, amp);
    Tensor h = ops::linear(x, w, b);
    Tensor loss = ops::linear_cross_entropy(h, e, t, -100, ops::Reduction::Mean, 16 * 50 * 4);  // 16-row chunks
    EXPECT_EQ(h.dtype(), DType::f32);
    EXPECT_EQ(loss.dtype(), DType::f32);
    std::vector<Tensor> gr = autograd::grad({loss}, {x, w, b, e});
    gr.insert(gr.begin(), {h, loss});
    return gr;
  };
  std::vector<Tensor> f32 = run(false), bf = run(true);
  for (size_t i = 0; i < f32.size(); ++i) {
    EXPECT_EQ(bf[i].dtype(), DType::f32) << i;
    EXPECT_LT(nmse(bf[i], f32[i]), 1e-3) << "output " << i;  // bf16 operands: 8-bit mantissas
    EXPECT_GT(nmse(bf[i], f32[i]), 0.0) << "output " << i << " did not run in bf16";
  }
}

}  // namespace
}  // namespace strata
