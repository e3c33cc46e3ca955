// Host math written so loops over it vectorize (no libm call in the loop body).
#pragma once

#include <cmath>
#include <cstdint>

#include "strata/core/host_device.h"

namespace strata::cpu {

// exp(x) for x <= 0 (up to rounding: any x < 88 works) (softmax numerators: x - max, x - lse); exp(-inf) = 0, underflow flushes to 0.
// Cephes-style range reduction and a degree-6 polynomial (as m_tanh in ops/common), ~2 ulp.
inline float exp_nonpos(float x) {
  x = x < -87.f ? -87.f : x;  // -inf and underflow: e^-87 ~ 1.6e-38, flushed below
  const float v = x * 1.44269504088896341f + 0.5f;
  float n = float(int32_t(v));
  n = n > v ? n - 1.f : n;
  float r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.f / 720;
  p = p * r + 1.f / 120;
  p = p * r + 1.f / 24;
  p = p * r + 1.f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.f;
  p = p * r + 1.f;
  const float e = p * strata::detail::bits_to_float(uint32_t(int32_t(n) + 127) << 23);
  return x != x ? x : (x <= -87.f ? 0.f : e);  // NaN in, NaN out
}
inline double exp_nonpos(double x) { return std::exp(x); }

}  // namespace strata::cpu
