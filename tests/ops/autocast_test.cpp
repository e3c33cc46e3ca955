// AutocastGuard: linear and the fused LM head multiply bf16 operands (oneDNN on the host, cuBLASLt
// on CUDA) and stay close to f32.
#include <gtest/gtest.h>

#include <cmath>

#include "strata/autograd/engine.h"
#include "strata/config.h"
#include "strata/core/generator.h"
#include "strata/ops.h"
#include "support/device_present.h"

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

// A narrow linear (torch.autocast's) returns the GEMM's bf16 result: within a bf16 rounding of the
// wide one (its bias is rounded to bf16 too), with gradients close to the wide one's and in the
// inputs' dtypes; a GELU after it runs in bf16, and so does the gradient between them. Outside
// autocast narrow and wide are the same bits.
TEST(Autocast, NarrowLinearReturnsBf16WithinOneRoundingOfTheWideResult) {
  if (!STRATA_HAVE_DNNL) GTEST_SKIP() << "built without oneDNN: autocast is a no-op";
  manual_seed(9);
  auto opts = TensorOptions().requires_grad(true);
  Tensor x = ops::randn({3, 11, 40}, opts), w = ops::randn({24, 40}, opts), b = ops::randn({24}, opts);
  Tensor w2 = ops::randn({8, 24}, opts);
  auto run = [&](bool amp, ops::AutocastResult result) {
    ops::AutocastGuard g(DType::bf16, amp);
    Tensor h = ops::linear(x, w, b, result);
    Tensor y = ops::linear(ops::gelu(h, "tanh"), w2);
    Tensor loss = ops::sum(ops::mul(y, y));
    std::vector<Tensor> out = autograd::grad({loss}, {x, w, b, w2});
    out.insert(out.begin(), h);
    return out;
  };
  const std::vector<Tensor> wide = run(true, ops::AutocastResult::Wide),
                            narrow = run(true, ops::AutocastResult::Narrow);
  ASSERT_EQ(wide[0].dtype(), DType::f32);
  ASSERT_EQ(narrow[0].dtype(), DType::bf16);
  const std::vector<double> hw = wide[0].to_double_vector(), hn = narrow[0].to_double_vector(),
                            bias = b.to_double_vector();
  int64_t rounded = 0;
  for (size_t i = 0; i < hw.size(); ++i) {
    const double bound = std::ldexp(std::abs(hw[i]) + std::abs(bias[i % 24]), -8) + 1e-6;
    EXPECT_LE(std::abs(hn[i] - hw[i]), bound) << i;
    rounded += hn[i] != hw[i];
  }
  EXPECT_GT(rounded, int64_t(hw.size() / 2));  // the narrow result really is bf16
  for (size_t i = 1; i < wide.size(); ++i) {
    EXPECT_EQ(narrow[i].dtype(), DType::f32) << "gradient " << i;
    EXPECT_LT(nmse(narrow[i], wide[i]), 1e-3) << "gradient " << i;
  }
  const std::vector<Tensor> f32_wide = run(false, ops::AutocastResult::Wide),
                            f32_narrow = run(false, ops::AutocastResult::Narrow);
  for (size_t i = 0; i < f32_wide.size(); ++i)
    EXPECT_EQ(f32_wide[i].to_double_vector(), f32_narrow[i].to_double_vector()) << i;
}

// On CUDA the same products run as cuBLASLt bf16 GEMMs with f32 results: every output and gradient
// is close to the CPU's autocast ones (both round the same operands to bf16 and accumulate in f32,
// in another order) and differs from the device's own f32 run (the operands were rounded).
TEST(CudaBackendAutocast, LinearAndLmHeadRunBf16GemmsMatchingTheCpu) {
  SKIP_WITHOUT_CUDA_DEVICE();
  manual_seed(7);
  Tensor x0 = ops::randn({4, 33, 64}), w0 = ops::randn({48, 64}), b0 = ops::randn({48}),
         e0 = ops::randn({96, 48});
  std::vector<int64_t> tv;
  for (int i = 0; i < 4 * 33; ++i) tv.push_back(i % 9 == 0 ? -100 : (i * 29) % 96);
  auto run = [&](Device dev, bool amp) {
    auto leaf = [&](const Tensor& t) { return t.to(dev).detach().set_requires_grad(true); };
    Tensor x = leaf(x0), w = leaf(w0), b = leaf(b0), e = leaf(e0);
    Tensor t = ops::from_vector(tv, {4, 33}).to(dev);
    ops::AutocastGuard g(DType::bf16, amp);
    Tensor h = ops::linear(x, w, b);
    Tensor loss =
        ops::linear_cross_entropy(h, e, t, -100, ops::Reduction::Mean, 32 * 96 * 4);  // 32-row chunks
    std::vector<Tensor> gr = autograd::grad({loss}, {x, w, b, e});
    gr.insert(gr.begin(), {h, loss});
    for (Tensor& r : gr) r = r.to(kCPU);
    return gr;
  };
  const std::vector<Tensor> cuda_bf16 = run(cuda(0), true), cuda_f32 = run(cuda(0), false);
  const std::vector<Tensor> cpu_bf16 = STRATA_HAVE_DNNL ? run(kCPU, true) : std::vector<Tensor>();
  for (size_t i = 0; i < cuda_bf16.size(); ++i) {
    EXPECT_EQ(cuda_bf16[i].dtype(), DType::f32) << i;
    EXPECT_GT(nmse(cuda_bf16[i], cuda_f32[i]), 0.0) << "output " << i << " did not run in bf16";
    EXPECT_LT(nmse(cuda_bf16[i], cuda_f32[i]), 1e-3) << "output " << i;
    if (STRATA_HAVE_DNNL)
      EXPECT_LT(nmse(cuda_bf16[i], cpu_bf16[i]), 1e-7) << "output " << i << " against the CPU";
  }
}

// layer_norm taken Narrow under autocast: the wide result rounded to bf16, and its gradients
// those of the wide result through an explicit bf16 round trip (the cast's gradient is rounded
// too), bit for bit, on `dev`. Returns {narrow y, dx, dw, db}.
std::vector<Tensor> check_narrow_layer_norm(Device dev) {
  manual_seed(17);
  Tensor x0 = ops::mul(ops::randn({5, 7, 96}), 3.0), w0 = ops::randn({96}), b0 = ops::randn({96}),
         r0 = ops::randn({5, 7, 96});
  auto leaf = [&](const Tensor& t) { return t.to(dev).detach().set_requires_grad(true); };
  Tensor r = r0.to(dev);
  auto run = [&](bool narrow) {
    Tensor x = leaf(x0), w = leaf(w0), b = leaf(b0);
    ops::AutocastGuard amp(DType::bf16);
    Tensor y = narrow ? ops::layer_norm(x, {96}, w, b, 1e-5, ops::AutocastResult::Narrow)
                      : ops::layer_norm(x, {96}, w, b, 1e-5).to(DType::bf16);
    std::vector<Tensor> out = autograd::grad({ops::sum(ops::mul(y.to(DType::f32), r))}, {x, w, b});
    out.insert(out.begin(), y);
    for (Tensor& t : out) t = t.to(kCPU);
    return out;
  };
  const std::vector<Tensor> narrow = run(true), wide = run(false);
  EXPECT_EQ(narrow[0].dtype(), DType::bf16);
  for (size_t i = 0; i < narrow.size(); ++i) {
    EXPECT_EQ(narrow[i].dtype(), wide[i].dtype()) << i;
    EXPECT_EQ(narrow[i].to_double_vector(), wide[i].to_double_vector())
        << "output " << i << " on " << dev.str();
  }
  return narrow;
}

TEST(Autocast, NarrowLayerNormIsTheWideResultRoundedWithTheSameGradients) {
  if (!STRATA_HAVE_DNNL) GTEST_SKIP() << "built without oneDNN: autocast is a no-op";
  check_narrow_layer_norm(kCPU);
}

// On CUDA the kernel writes bf16 and reads the bf16 gradient directly: the same bits as the
// cast path there, and the CPU's results within rounding.
TEST(CudaBackendAutocast, NarrowLayerNormWritesBf16AndReadsBf16GradientsDirectly) {
  SKIP_WITHOUT_CUDA_DEVICE();
  if (!STRATA_HAVE_DNNL) GTEST_SKIP() << "built without oneDNN: no CPU autocast to compare with";
  const std::vector<Tensor> gpu = check_narrow_layer_norm(cuda(0)), cpu = check_narrow_layer_norm(kCPU);
  for (size_t i = 0; i < gpu.size(); ++i) EXPECT_LT(nmse(gpu[i], cpu[i]), 1e-5) << "output " << i;
}

// A narrow linear on CUDA (cuBLASLt's bf16 result, bias in the epilogue) and a GELU on its bf16
// output match the CPU's autocast run up to a bf16 rounding of a few elements.
TEST(CudaBackendAutocast, NarrowLinearAndBf16GeluMatchTheCpu) {
  SKIP_WITHOUT_CUDA_DEVICE();
  if (!STRATA_HAVE_DNNL) GTEST_SKIP() << "built without oneDNN: no CPU autocast to compare with";
  manual_seed(13);
  Tensor x0 = ops::randn({4, 33, 64}), w0 = ops::randn({96, 64}), b0 = ops::randn({96}),
         v0 = ops::randn({16, 96});
  auto run = [&](Device dev) {
    auto leaf = [&](const Tensor& t) { return t.to(dev).detach().set_requires_grad(true); };
    Tensor x = leaf(x0), w = leaf(w0), b = leaf(b0), v = leaf(v0);
    ops::AutocastGuard g(DType::bf16);
    Tensor h = ops::gelu(ops::linear(x, w, b, ops::AutocastResult::Narrow), "tanh");
    Tensor y = ops::linear(h, v);
    std::vector<Tensor> out = autograd::grad({ops::sum(ops::mul(y, y))}, {x, w, b, v});
    out.insert(out.begin(), {h, y});
    for (Tensor& r : out) r = r.to(kCPU);
    return out;
  };
  const std::vector<Tensor> gpu = run(cuda(0)), cpu = run(kCPU);
  EXPECT_EQ(gpu[0].dtype(), DType::bf16);
  for (size_t i = 0; i < gpu.size(); ++i) {
    EXPECT_EQ(gpu[i].dtype(), cpu[i].dtype()) << i;
    EXPECT_LT(nmse(gpu[i], cpu[i]), 1e-5) << "output " << i;
  }
}

// The LM head's softmax gradient written straight in bf16 (one pass) has the bits of the f32
// gradient cast to bf16 (two passes), rows with ignored targets included.
TEST(CudaBackendAutocast, CrossEntropyGradientInBf16IsTheF32GradientRounded) {
  SKIP_WITHOUT_CUDA_DEVICE();
  manual_seed(11);
  const Device dev = cuda(0);
  const int64_t R = 37, V = 1000;
  Tensor logits = ops::mul(ops::randn({R, V}), 4.0).to(dev);
  std::vector<int64_t> tv;
  for (int64_t i = 0; i < R; ++i) tv.push_back(i % 5 == 0 ? -100 : (i * 97) % V);
  Tensor t = ops::from_vector(tv, {R}).to(dev);
  Backend& be = backend_for(dev);
  Tensor loss = Tensor::empty({R}, DType::f32, dev), lse = Tensor::empty({R}, DType::f32, dev);
  be.cross_entropy(loss, lse, logits, t, -100);
  Tensor g = full({R}, 0.25, TensorOptions(DType::f32).device(dev));
  Tensor wide = Tensor::empty({R, V}, DType::f32, dev), narrow = Tensor::empty({R, V}, DType::bf16, dev);
  be.cross_entropy_backward(wide, g, logits, lse, t, -100);
  be.cross_entropy_backward(narrow, g, logits, lse, t, -100);
  const std::vector<double> expected = wide.to(DType::bf16).to_double_vector(),
                            got = narrow.to_double_vector();
  ASSERT_EQ(got.size(), expected.size());
  int64_t differing = 0, nonzero = 0;
  for (size_t i = 0; i < got.size(); ++i) differing += got[i] != expected[i], nonzero += got[i] != 0.0;
  EXPECT_EQ(differing, 0);
  EXPECT_GT(nonzero, (R - 8) * V / 2);  // the gradient is not all zeros
}

}  // namespace
}  // namespace strata
