// e^x without a libm call (so loops over it vectorize): the range reduction and polynomial every
// exp in the kernels shares, host and device.
#pragma once

#include <cstdint>

#include "strata/core/host_device.h"

namespace strata::common {

// Cephes-style: n = round(x / ln2) (written as floor(x log2(e) + 0.5)), r = x - n ln2 with ln2
// split in two (exact high part, then the low part), e^r by a degree-6 Taylor polynomial on
// |r| <= ln2/2, times 2^n built on the exponent bits. ~2 ulp.
namespace exp_poly {
inline constexpr float kLog2e = 1.44269504088896341f;
inline constexpr float kLn2Hi = 0.693359375f;
inline constexpr float kLn2Lo = -2.12194440e-4f;
inline constexpr float kC6 = 1.f / 720, kC5 = 1.f / 120, kC4 = 1.f / 24, kC3 = 1.f / 6, kC2 = 0.5f,
                       kC1 = 1.f, kC0 = 1.f;
}  // namespace exp_poly

// e^x for -87 <= x <= 0 (|n| < 126, so the int conversion and the exponent bits are exact);
// callers clamp and handle NaN, -inf and underflow themselves (m_exp_nonpos in
// elementwise_math.h, cpu::exp_nonpos in ops/cpu/cpu_vec_math.h).
STRATA_HD float exp_reduced(float x) {
  using namespace exp_poly;
  const float v = x * kLog2e + 0.5f;
  float n = float(int32_t(v));
  n = n > v ? n - 1.f : n;
  float r = x - n * kLn2Hi;
  r = r - n * kLn2Lo;
  float p = kC6;
  p = p * r + kC5;
  p = p * r + kC4;
  p = p * r + kC3;
  p = p * r + kC2;
  p = p * r + kC1;
  p = p * r + kC0;
  return p * detail::bits_to_float(uint32_t(int32_t(n) + 127) << 23);
}

}  // namespace strata::common
