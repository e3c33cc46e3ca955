// Host math written so loops over it vectorize (no libm call in the loop body).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "ops/common/exp_poly.h"
#include "strata/core/host_device.h"

namespace strata::cpu {

// exp(x) for x <= 0 (softmax numerators: x - max, x - lse); exp(-inf) = 0, underflow flushes
// to 0, NaN in, NaN out. The shared reduction and polynomial (ops/common/exp_poly.h).
inline float exp_nonpos(float x) {
  x = x < -87.f ? -87.f : x;  // -inf and underflow: e^-87 ~ 1.6e-38, flushed below
  const float e = common::exp_reduced(x);
  return x != x ? x : (x <= -87.f ? 0.f : e);
}
inline double exp_nonpos(double x) { return std::exp(x); }

#if defined(__AVX512F__)
// exp_nonpos on 16 lanes, written with intrinsics: GCC 12 leaves the scalar function's float
// compares as branches, so loops over it ran one element at a time (the LM head's softmax over
// V = 50304 took a third of a small GPT step). Same reduction and polynomial; floor is one
// roundscale and 2^n one scalef (fused multiply-adds: the last bits may differ from the
// scalar function).
inline __m512 exp_nonpos16(__m512 x) {
  using namespace common::exp_poly;
  const __m512 lo = _mm512_set1_ps(-87.f);
  const __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
  const __mmask16 live = _mm512_cmp_ps_mask(x, lo, _CMP_GT_OQ);  // -inf, underflow, NaN: not live
  const __m512 xc = _mm512_max_ps(x, lo);
  const __m512 v = _mm512_fmadd_ps(xc, _mm512_set1_ps(kLog2e), _mm512_set1_ps(0.5f));
  const __m512 n = _mm512_roundscale_ps(v, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Hi), xc);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Lo), r);
  __m512 p = _mm512_set1_ps(kC6);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kC5));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kC4));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kC3));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kC2));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kC1));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kC0));
  const __m512 e = _mm512_maskz_mov_ps(live, _mm512_scalef_ps(p, n));
  return _mm512_mask_mov_ps(e, nan, x);  // NaN in, NaN out
}

inline __mmask16 tail_mask16(int64_t left) {
  return left >= 16 ? __mmask16(0xffff) : __mmask16((1u << left) - 1u);
}
#endif

// max of x[0..n) (NaNs skipped; -inf for n = 0).
inline float row_max(const float* x, int64_t n) {
#if defined(__AVX512F__)
  const __m512 ninf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  __m512 m0 = ninf, m1 = ninf;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    m0 = _mm512_max_ps(_mm512_loadu_ps(x + i), m0);  // a NaN first operand yields the second
    m1 = _mm512_max_ps(_mm512_loadu_ps(x + i + 16), m1);
  }
  for (; i < n; i += 16) m0 = _mm512_max_ps(_mm512_mask_loadu_ps(ninf, tail_mask16(n - i), x + i), m0);
  return _mm512_reduce_max_ps(_mm512_max_ps(m0, m1));
#else
  float m = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; ++i) m = x[i] > m ? x[i] : m;
  return m;
#endif
}
inline double row_max(const double* x, int64_t n) {
  double m = -std::numeric_limits<double>::infinity();
  for (int64_t i = 0; i < n; ++i) m = x[i] > m ? x[i] : m;
  return m;
}

// x[i] = exp_nonpos(x[i] - shift) in place for i < n; returns the sum of the results, added in
// double (a fixed order for a given n: deterministic).
inline double exp_shifted_sum(float* x, int64_t n, float shift) {
#if defined(__AVX512F__)
  const __m512 sh = _mm512_set1_ps(shift);
  __m512d s0 = _mm512_setzero_pd(), s1 = _mm512_setzero_pd();
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = tail_mask16(n - i);
    const __m512 e = exp_nonpos16(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), sh));
    _mm512_mask_storeu_ps(x + i, k, e);
    const __m512 ek = _mm512_maskz_mov_ps(k, e);
    s0 = _mm512_add_pd(s0, _mm512_cvtps_pd(_mm512_castps512_ps256(ek)));
    s1 = _mm512_add_pd(s1, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(ek), 1))));
  }
  return _mm512_reduce_add_pd(_mm512_add_pd(s0, s1));
#else
  double s = 0;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = exp_nonpos(x[i] - shift);
    s += double(x[i]);
  }
  return s;
#endif
}
inline double exp_shifted_sum(double* x, int64_t n, double shift) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = exp_nonpos(x[i] - shift);
    s += x[i];
  }
  return s;
}

// sum of exp_nonpos(x[i] - shift), x unchanged, added in double.
inline double exp_shifted_total(const float* x, int64_t n, float shift) {
#if defined(__AVX512F__)
  const __m512 sh = _mm512_set1_ps(shift);
  __m512d s0 = _mm512_setzero_pd(), s1 = _mm512_setzero_pd();
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = tail_mask16(n - i);
    const __m512 e = _mm512_maskz_mov_ps(k, exp_nonpos16(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), sh)));
    s0 = _mm512_add_pd(s0, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
    s1 = _mm512_add_pd(s1, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(e), 1))));
  }
  return _mm512_reduce_add_pd(_mm512_add_pd(s0, s1));
#else
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += double(exp_nonpos(x[i] - shift));
  return s;
#endif
}
inline double exp_shifted_total(const double* x, int64_t n, double shift) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += exp_nonpos(x[i] - shift);
  return s;
}

// y[i] = scale * exp_nonpos(x[i] - shift) for i < n (y may be x).
inline void scaled_exp_shifted(float* y, const float* x, int64_t n, float shift, float scale) {
#if defined(__AVX512F__)
  const __m512 sh = _mm512_set1_ps(shift), sc = _mm512_set1_ps(scale);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = tail_mask16(n - i);
    _mm512_mask_storeu_ps(y + i, k, _mm512_mul_ps(sc, exp_nonpos16(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), sh))));
  }
#else
  for (int64_t i = 0; i < n; ++i) y[i] = scale * exp_nonpos(x[i] - shift);
#endif
}
inline void scaled_exp_shifted(double* y, const double* x, int64_t n, double shift, double scale) {
  for (int64_t i = 0; i < n; ++i) y[i] = scale * exp_nonpos(x[i] - shift);
}

}  // namespace strata::cpu
