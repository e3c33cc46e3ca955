// 16-bit attention on CUDA against the CPU's f32 attention on the same bf16/f16-rounded inputs:
// outputs, row log-sum-exp, and the gradients of q, k and v, causal, key-padding and additive masks
// with a fully masked row, head dims that are not a tile's, heads laid out in place, and the same
// bits on a second backward. Each path on its own (the backend's choice, Strata's fused kernels of
// ops/cuda/cuda_fused_attention.cu, cuDNN's of ops/cuda/cuda_cudnn_attention.cpp) and mixed (a
// forward through one, the backward through another: their lse is one quantity).
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <limits>
#include <vector>

#include "strata/autograd/engine.h"
#include "strata/config.h"
#include "strata/core/backend.h"
#include "strata/core/generator.h"
#include "strata/ops.h"
#include "support/device_present.h"

#if STRATA_HAVE_CUDA
#include "ops/cuda/cuda_backend.h"
#include "ops/cuda/cuda_cudnn_attention.h"
#include "ops/cuda/cuda_fused_attention.h"

namespace strata {
namespace {

struct Case {
  int64_t B, H, T, S, D, Dv;
  bool causal;
  int mask;  // 0: none, 1: key padding, 2: random additive with one fully masked row
  DType dt;
  bool heads_in_place;  // out, dout and the gradients as [B, T, H, *] memory viewed [B, H, T, *]
};

double nmse(const Tensor& a, const Tensor& b) {
  std::vector<double> x = a.to(kCPU).to_double_vector(), y = b.to(kCPU).to_double_vector();
  double num = 0, den = 0;
  for (size_t i = 0; i < x.size(); ++i) num += (x[i] - y[i]) * (x[i] - y[i]), den += y[i] * y[i];
  return den > 0 ? num / den : num;
}

// A [B, H, T, D] tensor of dtype dt on `dev`: contiguous, or [B, T, H, D] memory viewed.
Tensor heads(int64_t B, int64_t H, int64_t T, int64_t D, DType dt, Device dev, bool in_place) {
  if (!in_place) return ops::empty({B, H, T, D}, TensorOptions(dt).device(dev));
  return ops::empty({B, T, H, D}, TensorOptions(dt).device(dev)).transpose(1, 2);
}

Tensor rounded(const Tensor& t, DType dt) { return t.to(dt).to(DType::f32); }

Tensor make_mask(const Case& c) {
  if (c.mask == 0) return Tensor();
  const double ninf = -std::numeric_limits<double>::infinity();
  std::vector<float> m(size_t(c.B * c.H * c.T * c.S), 0.f);
  uint32_t lcg = 7;
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t h = 0; h < c.H; ++h)
      for (int64_t t = 0; t < c.T; ++t)
        for (int64_t s = 0; s < c.S; ++s) {
          float& v = m[size_t(((b * c.H + h) * c.T + t) * c.S + s)];
          if (c.mask == 1) {
            v = s >= c.S - 3 * (b + 1) ? float(ninf) : 0.f;  // the last 3 (b + 1) keys are padding
          } else {
            lcg = lcg * 1664525u + 1013904223u;
            v = float((lcg >> 8) % 1000) / 250.f - 2.f;
            if ((lcg >> 4) % 17 == 0 || (b == 0 && h == 0 && t == 1))
              v = float(ninf);  // row (0, 0, 1) fully masked
          }
        }
  return ops::from_vector(m, {c.B, c.H, c.T, c.S});
}

// Which implementation runs forward and backward.
enum class Path { backend, fused, cudnn };

const char* path_name(Path p) {
  return p == Path::backend ? "backend" : p == Path::fused ? "fused" : "cudnn";
}

// False where cuDNN refused the problem (the test then skips it).
bool forward_on(Path p, const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k,
                const Tensor& v, const Tensor& mask, bool causal, double scale) {
  auto& be = static_cast<gpu::CudaBackend&>(backend_for(q.device()));
  if (p == Path::backend) be.attention(out, lse, q, k, v, mask, causal, scale);
  if (p == Path::fused) gpu::fused_attention_forward(out, lse, q, k, v, mask, causal, scale);
  if (p == Path::cudnn) return gpu::cudnn_attention_forward(be, out, lse, q, k, v, causal, scale);
  return true;
}

bool backward_on(Path p, const std::vector<Tensor>& g, const Tensor& go, const Tensor& q, const Tensor& k,
                 const Tensor& v, const Tensor& out, const Tensor& lse, const Tensor& mask, bool causal,
                 double scale) {
  auto& be = static_cast<gpu::CudaBackend&>(backend_for(q.device()));
  if (p == Path::backend) be.attention_backward(g[0], g[1], g[2], go, q, k, v, out, lse, mask, causal, scale);
  if (p == Path::fused)
    gpu::fused_attention_backward(be, g[0], g[1], g[2], go, q, k, v, out, lse, mask, causal, scale);
  if (p == Path::cudnn)
    return gpu::cudnn_attention_backward(be, g[0], g[1], g[2], go, q, k, v, out, lse, causal, scale);
  return true;
}

// False where cuDNN refused the case.
bool run_case(const Case& c, Path fwd = Path::backend, Path bwd = Path::backend) {
  SCOPED_TRACE(::testing::Message() << "B=" << c.B << " H=" << c.H << " T=" << c.T << " S=" << c.S << " D="
                                    << c.D << " Dv=" << c.Dv << " causal=" << c.causal << " mask=" << c.mask
                                    << " " << dtype_name(c.dt) << (c.heads_in_place ? " heads in place" : "")
                                    << " forward " << path_name(fwd) << " backward " << path_name(bwd));
  manual_seed(11);
  const double scale = 1.0 / std::sqrt(double(c.D));
  Tensor q = rounded(ops::randn({c.B, c.H, c.T, c.D}), c.dt),
         k = rounded(ops::randn({c.B, c.H, c.S, c.D}), c.dt);
  Tensor v = rounded(ops::randn({c.B, c.H, c.S, c.Dv}), c.dt),
         go = rounded(ops::randn({c.B, c.H, c.T, c.Dv}), c.dt);
  Tensor mask = make_mask(c);
  // The CPU, in f32, on the rounded values.
  Backend& cpu = backend_for(kCPU);
  Tensor out_ref = ops::empty({c.B, c.H, c.T, c.Dv}), lse_ref = ops::empty({c.B, c.H, c.T});
  cpu.attention(out_ref, lse_ref, q, k, v, mask, c.causal, scale);
  Tensor dq_ref = ops::empty(q.shape()), dk_ref = ops::empty(k.shape()), dv_ref = ops::empty(v.shape());
  cpu.attention_backward(dq_ref, dk_ref, dv_ref, go, q, k, v, out_ref, lse_ref, mask, c.causal, scale);
  // The device, in 16 bits.
  const Device dev = cuda(0);
  Backend& gpu = backend_for(dev);
  auto on = [&](const Tensor& t) { return t.to(c.dt).to(dev); };
  Tensor q16 = on(q), k16 = on(k), v16 = on(v), mask_d = mask.defined() ? mask.to(dev) : Tensor();
  Tensor out = heads(c.B, c.H, c.T, c.Dv, c.dt, dev, c.heads_in_place);
  Tensor lse = ops::empty({c.B, c.H, c.T}, TensorOptions(DType::f32).device(dev));
  if (!forward_on(fwd, out, lse, q16, k16, v16, mask_d, c.causal, scale)) {
    std::cout << "cuDNN has no forward engine for this case; skipped\n";
    return false;
  }
  Tensor go16 = heads(c.B, c.H, c.T, c.Dv, c.dt, dev, c.heads_in_place);
  gpu.copy(go16, on(go));
  auto grads = [&] {
    std::vector<Tensor> g{heads(c.B, c.H, c.T, c.D, c.dt, dev, c.heads_in_place),
                          heads(c.B, c.H, c.S, c.D, c.dt, dev, c.heads_in_place),
                          heads(c.B, c.H, c.S, c.Dv, c.dt, dev, c.heads_in_place)};
    if (!backward_on(bwd, g, go16, q16, k16, v16, out, lse, mask_d, c.causal, scale))
      return std::vector<Tensor>();
    for (Tensor& t : g) t = t.to(kCPU).to(DType::f32);
    return g;
  };
  const std::vector<Tensor> g = grads(), again = grads();
  if (g.empty()) {
    std::cout << "cuDNN has no backward engine for this case; skipped\n";
    return false;
  }

  EXPECT_LT(nmse(out.to(kCPU).to(DType::f32), out_ref), 1e-4) << "output";
  const std::vector<double> l = lse.to(kCPU).to_double_vector(), lr = lse_ref.to_double_vector();
  for (size_t i = 0; i < l.size(); ++i) {
    if (std::isinf(lr[i])) {
      EXPECT_TRUE(std::isinf(l[i]) && l[i] < 0) << "lse row " << i << " is fully masked on the CPU: " << l[i];
    } else {
      EXPECT_NEAR(l[i], lr[i], 1e-3 * (1.0 + std::fabs(lr[i]))) << "lse row " << i;
    }
  }
  const char* names[3] = {"dq", "dk", "dv"};
  const Tensor* refs[3] = {&dq_ref, &dk_ref, &dv_ref};
  for (int i = 0; i < 3; ++i) {
    EXPECT_LT(nmse(g[size_t(i)], *refs[i]), 1e-3) << names[i];
    EXPECT_EQ(g[size_t(i)].to_double_vector(), again[size_t(i)].to_double_vector())
        << names[i] << " differs between two backward runs";
  }
  return true;
}

const std::vector<Case> kCases = {
    {2, 3, 77, 77, 64, 64, true, 0, DType::bf16, false},
    {1, 2, 130, 65, 40, 40, false, 1, DType::f16, false},
    {2, 2, 100, 100, 128, 128, false, 2, DType::bf16, true},
    {1, 2, 64, 64, 96, 64, true, 0, DType::bf16, true},
    {1, 1, 300, 300, 64, 64, true, 2, DType::f16, false},
    {2, 3, 256, 256, 64, 64, true, 0, DType::bf16, true},
};

TEST(CudaBackendFusedAttention, MatchesTheCpuOnRoundedInputs) {
  SKIP_WITHOUT_CUDA_DEVICE();
  for (const Case& c : kCases) run_case(c);
}

TEST(CudaBackendFusedAttention, StratasKernelsMatchTheCpu) {
  SKIP_WITHOUT_CUDA_DEVICE();
  for (const Case& c : kCases) run_case(c, Path::fused, Path::fused);
}

// cuDNN takes the unmasked cases with 16-byte aligned rows (head dims 64 and 128 here).
TEST(CudaBackendFusedAttention, CudnnMatchesTheCpu) {
  SKIP_WITHOUT_CUDA_DEVICE();
  if (!gpu::cudnn_attention_built()) GTEST_SKIP() << "built without cuDNN's frontend";
  int ran = 0;
  for (const Case& c : kCases)
    if (c.mask == 0) ran += run_case(c, Path::cudnn, Path::cudnn);
  // GPT's shape (head dim 64, causal, heads in place) runs on every GPU cuDNN's attention supports.
  if (gpu::fused_attention_supported(0, DType::bf16, 64, 64)) {  // compute capability 8.0 or newer
    EXPECT_TRUE(run_case(kCases.back(), Path::cudnn, Path::cudnn)) << "cuDNN refused GPT's attention";
    EXPECT_GE(ran, 2);
  }
}

// A forward through one implementation and the backward through another: the lse each saves is
// the same quantity, so any pairing gives the CPU's gradients.
TEST(CudaBackendFusedAttention, PathsShareTheirLse) {
  SKIP_WITHOUT_CUDA_DEVICE();
  const Case c{2, 3, 256, 256, 64, 64, true, 0, DType::bf16, true};
  run_case(c, Path::fused, Path::backend);
  run_case(c, Path::backend, Path::fused);
  if (gpu::cudnn_attention_built()) {
    run_case(c, Path::cudnn, Path::fused);
    run_case(c, Path::fused, Path::cudnn);
  }
}

// Through the op under autocast: f32 inputs on CUDA run the bf16 kernels (the gradients come back
// f32 and differ from the f32 run by bf16 rounding only).
TEST(CudaBackendFusedAttention, AutocastRunsSdpaInBf16) {
  SKIP_WITHOUT_CUDA_DEVICE();
  manual_seed(3);
  Tensor q0 = ops::randn({2, 4, 50, 32}), k0 = ops::randn({2, 4, 50, 32}), v0 = ops::randn({2, 4, 50, 32});
  Tensor w = ops::randn({2, 4, 50, 32}).to(cuda(0));
  auto run = [&](bool amp) {
    auto leaf = [](const Tensor& t) { return t.to(cuda(0)).detach().set_requires_grad(true); };
    Tensor q = leaf(q0), k = leaf(k0), v = leaf(v0);
    ops::AutocastGuard g(DType::bf16, amp);
    Tensor y = ops::scaled_dot_product_attention(q, k, v, Tensor(), 0.0, true);
    EXPECT_EQ(y.dtype(), DType::f32);
    Tensor loss = ops::sum(ops::mul(y, w));
    std::vector<Tensor> gr = autograd::grad({loss}, {q, k, v});
    gr.insert(gr.begin(), y);
    return gr;
  };
  const std::vector<Tensor> f32 = run(false), bf = run(true);
  for (size_t i = 0; i < f32.size(); ++i) {
    EXPECT_EQ(bf[i].dtype(), DType::f32) << i;
    EXPECT_GT(nmse(bf[i], f32[i]), 0.0) << "output " << i << " did not run in bf16";
    EXPECT_LT(nmse(bf[i], f32[i]), 1e-3) << "output " << i;
  }
}

}  // namespace
}  // namespace strata

#endif  // STRATA_HAVE_CUDA
