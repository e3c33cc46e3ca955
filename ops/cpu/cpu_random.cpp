// CPU random fills from Philox (core/philox.h): element i uses the same words on every backend.
#include <cmath>

#include "ops/cpu/cpu_backend.h"
#include "ops/cpu/strided_loop.h"
#include "strata/core/philox.h"

namespace strata::cpu {

namespace {
template <class T, class F>
void fill_indexed(const Tensor& out, F f) {
  T* y = out.data<T>();
  const int64_t n = out.numel();
#pragma omp parallel for schedule(static) if (n > kParallelGrain)
  for (int64_t i = 0; i < n; ++i) y[i] = T(f(i));
}

template <class F>
void random_fill(const Tensor& out, F f, CpuBackend& be) {
  STRATA_CHECK(is_floating(out.dtype()), TypeError, "random: needs a floating tensor, got ", out.str());
  if (out.dtype() == DType::f64 && out.is_contiguous()) return fill_indexed<double>(out, f);
  if (out.dtype() == DType::f32 && out.is_contiguous()) return fill_indexed<float>(out, f);
  if (out.dtype() == DType::f64) {
    Tensor tmp = Tensor::empty(out.shape(), DType::f64, kCPU);
    fill_indexed<double>(tmp, f);
    be.copy(out, tmp);
    return;
  }
  Tensor tmp = Tensor::empty(out.shape(), DType::f32, kCPU);
  fill_indexed<float>(tmp, f);
  be.copy(out, tmp);
}
}  // namespace

void CpuBackend::random_uniform(const Tensor& out, RngState s, double low, double high) {
  random_fill(out, [=](int64_t i) {
    return low + (high - low) * double(philox::to_uniform(philox::word(s.seed, s.offset, uint64_t(i))));
  }, *this);
}

// Box-Muller on words 2i and 2i+1 (the op reserves 2 * numel numbers).
void CpuBackend::random_normal(const Tensor& out, RngState s, double mean, double std) {
  random_fill(out, [=](int64_t i) {
    float u1 = philox::to_uniform(philox::word(s.seed, s.offset, 2 * uint64_t(i)));
    float u2 = philox::to_uniform(philox::word(s.seed, s.offset, 2 * uint64_t(i) + 1));
    double r = std::sqrt(-2.0 * std::log(1.0 - double(u1)));
    return mean + std * r * std::cos(6.283185307179586 * double(u2));
  }, *this);
}

}  // namespace strata::cpu
