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

// y[i] = f(w_i, w_i') from Philox words: with `per` = 1 element per word (w_i = word i) or 2 (words
// 2i and 2i + 1), each 4-word block computed once for the elements that use it (word(s, offset, j)
// is block (offset + j) / 4, word (offset + j) % 4; offset is a multiple of 4).
template <class T, class F>
void fill_from_blocks(const Tensor& out, RngState s, int per, F f) {
  T* y = out.data<T>();
  const int64_t n = out.numel(), per_block = 4 / per, nb = (n + per_block - 1) / per_block;
  const uint64_t first = s.offset >> 2;
#pragma omp parallel for schedule(static) if (n > kParallelGrain)
  for (int64_t b = 0; b < nb; ++b) {
    const philox::U32x4 r = philox::block(s.seed, first + uint64_t(b));
    const uint32_t w[4] = {r.x, r.y, r.z, r.w};
    for (int64_t k = 0; k < per_block && b * per_block + k < n; ++k)
      y[b * per_block + k] = T(f(w[k * per], w[k * per + per - 1]));
  }
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
  auto from_word = [=](uint32_t w, uint32_t) { return low + (high - low) * double(philox::to_uniform(w)); };
  if (s.offset % 4 == 0 && out.is_contiguous() && out.dtype() == DType::f32)
    return fill_from_blocks<float>(out, s, 1, from_word);
  if (s.offset % 4 == 0 && out.is_contiguous() && out.dtype() == DType::f64)
    return fill_from_blocks<double>(out, s, 1, from_word);
  random_fill(out, [=](int64_t i) {
    return low + (high - low) * double(philox::to_uniform(philox::word(s.seed, s.offset, uint64_t(i))));
  }, *this);
}

// Box-Muller on words 2i and 2i+1 (the op reserves 2 * numel numbers).
void CpuBackend::random_normal(const Tensor& out, RngState s, double mean, double std) {
  auto from_words = [=](uint32_t w1, uint32_t w2) {
    float u1 = philox::to_uniform(w1), u2 = philox::to_uniform(w2);
    double r = std::sqrt(-2.0 * std::log(1.0 - double(u1)));
    return mean + std * r * std::cos(6.283185307179586 * double(u2));
  };
  if (s.offset % 4 == 0 && out.is_contiguous() && out.dtype() == DType::f32)
    return fill_from_blocks<float>(out, s, 2, from_words);
  if (s.offset % 4 == 0 && out.is_contiguous() && out.dtype() == DType::f64)
    return fill_from_blocks<double>(out, s, 2, from_words);
  random_fill(out, [=](int64_t i) {
    float u1 = philox::to_uniform(philox::word(s.seed, s.offset, 2 * uint64_t(i)));
    float u2 = philox::to_uniform(philox::word(s.seed, s.offset, 2 * uint64_t(i) + 1));
    double r = std::sqrt(-2.0 * std::log(1.0 - double(u1)));
    return mean + std * r * std::cos(6.283185307179586 * double(u2));
  }, *this);
}

}  // namespace strata::cpu
