#include "strata/optim/adamw.h"

#include <cmath>
#include <type_traits>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "core/optim/cpu_update.h"
#include "strata/core/memory_stats.h"
#include "strata/core/factory.h"

namespace strata::optim {

void AdamWOptions::validate(const char* optimizer) const {
  OptimizerOptions::validate(optimizer);
  STRATA_CHECK(eps_ >= 0.0, ValueError, optimizer, ": invalid epsilon value: ", eps_);
  STRATA_CHECK(betas_.first >= 0.0 && betas_.first < 1.0, ValueError, optimizer,
               ": invalid beta parameter at index 0: ", betas_.first);
  STRATA_CHECK(betas_.second >= 0.0 && betas_.second < 1.0, ValueError, optimizer,
               ": invalid beta parameter at index 1: ", betas_.second);
}

AdamW::AdamW(std::vector<Tensor> params, const AdamWOptions& options)
    : AdamW(std::vector<ParamGroup>{ParamGroup(std::move(params))}, options) {}

AdamW::AdamW(std::vector<ParamGroup> groups, const AdamWOptions& defaults)
    : Optimizer(std::move(groups), defaults, "AdamW") {}

namespace {

// Scalars are computed in double and rounded to T, as PyTorch passes Python floats to its
// in-place ops; the per-element expressions follow _single_tensor_adamw op by op.
template <class T>
void adamw_update(T* p, const T* g, T* m, T* v, int64_t n, double step, const AdamWOptions& o) {
  const double lr = o.lr(), beta1 = o.betas().first, beta2 = o.betas().second;
  const double bias_correction1 = 1.0 - std::pow(beta1, step);
  const double bias_correction2 = 1.0 - std::pow(beta2, step);
  const T decay = T(1.0 - lr * o.weight_decay());
  const T b1 = T(beta1), one_minus_b1 = T(1.0 - beta1), b2 = T(beta2), one_minus_b2 = T(1.0 - beta2);
  const T neg_step_size = T(-(lr / bias_correction1));
  const T bias_correction2_sqrt = T(std::sqrt(bias_correction2));
  const T eps = T(o.eps());
  // One pass over p, g, m, v (PyTorch's single-tensor loop makes one pass per op).
  int64_t vec_end = 0;
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<T, float>) {
    // 16 lanes with intrinsics, each op rounded as written (no contraction), the last lanes
    // masked, so an element's bits do not depend on where its tensor or shard starts (ZeRO-1
    // shards split parameters anywhere). GCC 12 kept the loop below scalar (std::sqrt's errno
    // path): ~10% of a GPT-2 124M step.
    vec_end = n;
    const __m512 vdecay = _mm512_set1_ps(decay), vb1 = _mm512_set1_ps(b1), vomb1 = _mm512_set1_ps(one_minus_b1);
    const __m512 vb2 = _mm512_set1_ps(b2), vomb2 = _mm512_set1_ps(one_minus_b2);
    const __m512 vnss = _mm512_set1_ps(neg_step_size), vbc2 = _mm512_set1_ps(bias_correction2_sqrt);
    const __m512 veps = _mm512_set1_ps(eps);
#pragma omp parallel for schedule(static) if (n >= detail::kParallelMinElements)
    for (int64_t i = 0; i < n; i += 16) {
      const __mmask16 k = n - i >= 16 ? __mmask16(0xffff) : __mmask16((1u << (n - i)) - 1u);
      const __m512 gi = _mm512_maskz_loadu_ps(k, g + i);
      const __m512 pd = _mm512_mul_ps(_mm512_maskz_loadu_ps(k, p + i), vdecay);
      const __m512 mi = _mm512_add_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(k, m + i), vb1), _mm512_mul_ps(vomb1, gi));
      const __m512 vi = _mm512_add_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(k, v + i), vb2),
                                      _mm512_mul_ps(vomb2, _mm512_mul_ps(gi, gi)));
      const __m512 denom = _mm512_add_ps(_mm512_div_ps(_mm512_sqrt_ps(vi), vbc2), veps);
      _mm512_mask_storeu_ps(m + i, k, mi);
      _mm512_mask_storeu_ps(v + i, k, vi);
      _mm512_mask_storeu_ps(p + i, k, _mm512_add_ps(pd, _mm512_mul_ps(vnss, _mm512_div_ps(mi, denom))));
    }
  }
#endif
#pragma omp parallel for simd schedule(static) if (n - vec_end >= detail::kParallelMinElements)
  for (int64_t i = vec_end; i < n; ++i) {
    const T gi = g[i];
    p[i] = p[i] * decay;
    m[i] = m[i] * b1 + one_minus_b1 * gi;
    v[i] = v[i] * b2 + one_minus_b2 * (gi * gi);
    const T denom = std::sqrt(v[i]) / bias_correction2_sqrt + eps;
    p[i] = p[i] + neg_step_size * (m[i] / denom);
  }
}

}  // namespace

void AdamW::advance_scalars(TensorDict& scalars) const {
  if (!scalars.contains("step")) scalars.insert("step", strata::zeros({}, DType::f64));
  Tensor& step = scalars.at("step");
  *step.data<double>() += 1.0;
  step.bump_version();
}

void AdamW::update_host_chunk(const OptimizerOptions& options, const TensorDict& scalars,
                              const HostChunk& c) const {
  const auto& o = static_cast<const AdamWOptions&>(options);
  const double step = scalars.at("step").item();
  detail::dispatch_floating(c.dtype, [&](auto t) {
    using T = decltype(t);
    adamw_update<T>(static_cast<T*>(c.param), static_cast<const T*>(c.grad), static_cast<T*>(c.buffers[0]),
                    static_cast<T*>(c.buffers[1]), c.numel, step, o);
  });
}

void AdamW::step() {
  for_each_update([](const OptimizerOptions& options, Tensor& p, const Tensor& g, TensorDict& state) {
    const auto& o = static_cast<const AdamWOptions&>(options);
    if (state.empty()) {
      MemoryCategoryGuard category(MemoryCategory::OptimizerState);
      state.insert("step", strata::zeros({}, DType::f64));
      state.insert("exp_avg", strata::zeros(p.shape(), TensorOptions(p.dtype()).device(p.device())));
      state.insert("exp_avg_sq", strata::zeros(p.shape(), TensorOptions(p.dtype()).device(p.device())));
    }
    Tensor& step_t = state.at("step");
    Tensor& m = state.at("exp_avg");
    Tensor& v = state.at("exp_avg_sq");
    detail::check_updatable("AdamW.step", "exp_avg", m);
    detail::check_updatable("AdamW.step", "exp_avg_sq", v);
    double* step = step_t.data<double>();
    *step += 1.0;
    if (p.device().is_host_memory()) {
      detail::dispatch_floating(p.dtype(), [&](auto t) {
        using T = decltype(t);
        adamw_update<T>(p.data<T>(), g.data<T>(), m.data<T>(), v.data<T>(), p.numel(), *step, o);
      });
    } else {
      backend_for(p.device())
          .adamw_update(
              p, g, m, v,
              AdamWUpdate{o.lr(), o.betas().first, o.betas().second, o.eps(), o.weight_decay(), *step});
    }
    step_t.bump_version();
    m.bump_version();
    v.bump_version();
  });
}

}  // namespace strata::optim
