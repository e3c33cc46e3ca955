// The math of every elementwise op, written once as host+device code (CPU and CUDA kernels
// both instantiate ew_apply<OP, T>).
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "ops/common/exp_poly.h"
#include "strata/core/backend.h"
#include "strata/core/philox.h"

namespace strata::common {

// Overloads on ::expf / ::exp etc. resolve on the host and in CUDA device code alike.
STRATA_HD float m_exp(float x) { return ::expf(x); }
STRATA_HD double m_exp(double x) { return ::exp(x); }
STRATA_HD float m_log(float x) { return ::logf(x); }
STRATA_HD double m_log(double x) { return ::log(x); }
STRATA_HD float m_sqrt(float x) { return ::sqrtf(x); }
STRATA_HD double m_sqrt(double x) { return ::sqrt(x); }
// e^y for y <= 0 (exp_reduced); below -87 it flushes to 0 (so does NaN: callers fix NaN up
// themselves). |y| is clamped on the bits (see m_tanh: an integer min vectorizes where a float
// compare leaves control flow in the loop, GCC 12).
STRATA_HD float m_exp_nonpos(float y) {
  const uint32_t abits = detail::float_to_bits(y) & 0x7fffffffu, lim = 0x42ae0000u;  // 87.f
  const float a = detail::bits_to_float(abits < lim ? abits : lim);
  const float e = exp_reduced(-a);
  return a >= 87.f ? 0.f : e;
}
STRATA_HD double m_exp_nonpos(double y) { return ::exp(y); }
// f32 tanh without a libm call, so loops over it vectorize (GELU-tanh spent ~35% of a GPT
// step in scalar tanhf). tanh(a) = (1 - e) / (1 + e), e = exp(-2a), with exp from a Cephes-style
// range reduction (n ln2 split in two) and a degree-6 polynomial on |r| <= ln2/2; below
// |x| = 0.25 an odd Taylor series avoids the cancellation in 1 - e. Max error ~2 ulp; NaN in,
// NaN out; saturates to +-1 beyond |x| = 9 (where tanh rounds to 1 in f32).
STRATA_HD float m_tanh(float x) {
  // |x| clamped to 9 on the bits: for non-negative floats (and NaN, whose bits are larger) the
  // integer order is the float order, and an integer min vectorizes where a float compare
  // leaves control flow in the loop (GCC 12). NaN maps to 9 here and is fixed up at the end.
  const uint32_t abits = detail::float_to_bits(x) & 0x7fffffffu, nine = 0x41100000u;
  const float a = detail::bits_to_float(abits < nine ? abits : nine);
  const float e = m_exp_nonpos(-2.f * a);  // -18 <= -2a <= 0
  float t = (1.f - e) / (1.f + e);
  const float a2 = a * a;
  const float series = a * (1.f + a2 * (-1.f / 3 + a2 * (2.f / 15 + a2 * (-17.f / 315 + a2 * (62.f / 2835)))));
  t = a < 0.25f ? series : t;
  t = x < 0.f ? -t : t;
  return x != x ? x : t;
}
STRATA_HD double m_tanh(double x) { return ::tanh(x); }
// f32 erf without a libm call, so GELU(erf) loops vectorize (scalar erff made BERT's GELUs
// ~10% of a step): Abramowitz & Stegun 7.1.26, erf(a) = 1 - t (a1 + a2 t + .. + a5 t^4) e^{-a^2},
// t = 1 / (1 + p a): the formula PyTorch's vectorized CPU erf uses, absolute error <= 1.5e-7 (5e-7
// evaluated in f32, measured on 2e7 points).
// |x| is clamped to 4 on the bits (erf(4) rounds to 1 in f32); NaN in, NaN out.
STRATA_HD float m_erf(float x) {
  const uint32_t abits = detail::float_to_bits(x) & 0x7fffffffu, four = 0x40800000u;
  const float a = detail::bits_to_float(abits < four ? abits : four);
  const float t = 1.f / (1.f + 0.3275911f * a);
  float p = 1.061405429f;
  p = p * t - 1.453152027f;
  p = p * t + 1.421413741f;
  p = p * t - 0.284496736f;
  p = p * t + 0.254829592f;
  float r = 1.f - p * t * m_exp_nonpos(-a * a);
  r = x < 0.f ? -r : r;
  return x != x ? x : r;
}
STRATA_HD double m_erf(double x) { return ::erf(x); }
STRATA_HD float m_pow(float x, float y) { return ::powf(x, y); }
STRATA_HD double m_pow(double x, double y) { return ::pow(x, y); }
STRATA_HD float m_sin(float x) { return ::sinf(x); }
STRATA_HD double m_sin(double x) { return ::sin(x); }
STRATA_HD float m_cos(float x) { return ::cosf(x); }
STRATA_HD double m_cos(double x) { return ::cos(x); }
STRATA_HD int64_t m_pow(int64_t x, int64_t y) {
  int64_t r = 1;
  for (int64_t i = 0; i < y; ++i) r *= x;
  return r;
}

// Ops that also make sense on integers (the rest promote integers to f32 first).
constexpr bool ew_supports_integers(EwOp op) {
  switch (op) {
    case EwOp::Copy: case EwOp::Neg: case EwOp::Abs: case EwOp::Sign: case EwOp::Square:
    case EwOp::AddScalar: case EwOp::MulScalar: case EwOp::Clamp: case EwOp::Add:
    case EwOp::Sub: case EwOp::Mul: case EwOp::Maximum: case EwOp::Minimum: case EwOp::Eq:
    case EwOp::Ne: case EwOp::Lt: case EwOp::Le: case EwOp::Gt: case EwOp::Ge: case EwOp::Where:
    case EwOp::Relu:
      return true;
    default:
      return false;
  }
}

// Every EwOp, for X-macro expansion.
#define STRATA_EW_OPS(X)                                                                        \
  X(Copy) X(Neg) X(Exp) X(Log) X(Sqrt) X(Rsqrt) X(Tanh) X(Sigmoid) X(Relu) X(GeluErf) X(GeluTanh) \
  X(Silu) X(Abs) X(Sign) X(Reciprocal) X(Square) X(Sin) X(Cos) X(AddScalar) X(MulScalar)          \
  X(PowScalar) X(RpowScalar) X(Clamp) X(Add) X(Sub) X(Mul) X(Div) X(Pow) X(Maximum) X(Minimum)    \
  X(Eq) X(Ne) X(Lt) X(Le) X(Gt) X(Ge) X(TanhBackward) X(SigmoidBackward) X(ReluBackward)          \
  X(GeluErfBackward) X(GeluTanhBackward) X(SiluBackward) X(ClampBackward) X(Where)

// Calls f(std::integral_constant<EwOp, op>) for the runtime `op`, so a backend instantiates one
// kernel per op for compute type T; returns false when `op` is not defined for T (integers).
template <class T, class F>
bool dispatch_ew_op(EwOp op, F&& f) {
  switch (op) {
#define STRATA_EW_DISPATCH_CASE(NAME)                                                 \
  case EwOp::NAME:                                                                    \
    if constexpr (std::is_integral_v<T> && !ew_supports_integers(EwOp::NAME)) {       \
      return false;                                                                   \
    } else {                                                                          \
      f(std::integral_constant<EwOp, EwOp::NAME>{});                                  \
      return true;                                                                    \
    }
    STRATA_EW_OPS(STRATA_EW_DISPATCH_CASE)
#undef STRATA_EW_DISPATCH_CASE
    default: return false;
  }
}

constexpr bool ew_is_comparison(EwOp op) {
  return op == EwOp::Eq || op == EwOp::Ne || op == EwOp::Lt || op == EwOp::Le ||
         op == EwOp::Gt || op == EwOp::Ge;
}

template <class T>
STRATA_HD T gelu_tanh_inner(T x) {
  const T k0 = T(0.7978845608028654);  // sqrt(2/pi)
  const T k1 = T(0.044715);
  return k0 * (x + k1 * x * x * x);
}

// out = OP(a, b, c) computed in T; comparisons return 1/0; Where's a is the condition.
template <EwOp OP, class T>
STRATA_HD T ew_apply(T a, T b, T c, T p0, T p1) {
  if constexpr (OP == EwOp::Copy) return a;
  else if constexpr (OP == EwOp::Neg) return -a;
  else if constexpr (OP == EwOp::Exp) return m_exp(a);
  else if constexpr (OP == EwOp::Log) return m_log(a);
  else if constexpr (OP == EwOp::Sqrt) return m_sqrt(a);
  else if constexpr (OP == EwOp::Rsqrt) return T(1) / m_sqrt(a);
  else if constexpr (OP == EwOp::Tanh) return m_tanh(a);
  else if constexpr (OP == EwOp::Sigmoid) return T(1) / (T(1) + m_exp(-a));
  else if constexpr (OP == EwOp::Relu)
    return (a > T(0) || a != a) ? a : T(0);  // NaN propagates
  else if constexpr (OP == EwOp::GeluErf) return T(0.5) * a * (T(1) + m_erf(a * T(0.7071067811865476)));
  else if constexpr (OP == EwOp::GeluTanh) return T(0.5) * a * (T(1) + m_tanh(gelu_tanh_inner(a)));
  else if constexpr (OP == EwOp::Silu) return a / (T(1) + m_exp(-a));
  else if constexpr (OP == EwOp::Abs) return a < T(0) ? -a : a;
  else if constexpr (OP == EwOp::Sign) return T((a > T(0)) - (a < T(0)));
  else if constexpr (OP == EwOp::Reciprocal) return T(1) / a;
  else if constexpr (OP == EwOp::Square) return a * a;
  else if constexpr (OP == EwOp::Sin) return m_sin(a);
  else if constexpr (OP == EwOp::Cos) return m_cos(a);
  else if constexpr (OP == EwOp::AddScalar) return a + p0;
  else if constexpr (OP == EwOp::MulScalar) return a * p0;
  else if constexpr (OP == EwOp::PowScalar) return m_pow(a, p0);
  else if constexpr (OP == EwOp::RpowScalar) return m_pow(p0, a);
  else if constexpr (OP == EwOp::Clamp) return a < p0 ? p0 : (a > p1 ? p1 : a);
  else if constexpr (OP == EwOp::Add) return a + b;
  else if constexpr (OP == EwOp::Sub) return a - b;
  else if constexpr (OP == EwOp::Mul) return a * b;
  else if constexpr (OP == EwOp::Div) return a / b;
  else if constexpr (OP == EwOp::Pow) return m_pow(a, b);
  else if constexpr (OP == EwOp::Maximum) return (a != a || a > b) ? a : b;  // NaN propagates
  else if constexpr (OP == EwOp::Minimum) return (a != a || a < b) ? a : b;
  else if constexpr (OP == EwOp::Eq) return T(a == b);
  else if constexpr (OP == EwOp::Ne) return T(a != b);
  else if constexpr (OP == EwOp::Lt) return T(a < b);
  else if constexpr (OP == EwOp::Le) return T(a <= b);
  else if constexpr (OP == EwOp::Gt) return T(a > b);
  else if constexpr (OP == EwOp::Ge) return T(a >= b);
  else if constexpr (OP == EwOp::TanhBackward) return a * (T(1) - b * b);
  else if constexpr (OP == EwOp::SigmoidBackward) return a * b * (T(1) - b);
  else if constexpr (OP == EwOp::ReluBackward) return b > T(0) ? a : T(0);
  else if constexpr (OP == EwOp::GeluErfBackward) {
    T cdf = T(0.5) * (T(1) + m_erf(b * T(0.7071067811865476)));
    T pdf = m_exp_nonpos(T(-0.5) * b * b) * T(0.3989422804014327);  // 1/sqrt(2 pi)
    return a * (cdf + b * pdf);
  } else if constexpr (OP == EwOp::GeluTanhBackward) {
    T th = m_tanh(gelu_tanh_inner(b));
    T dinner = T(0.7978845608028654) * (T(1) + T(3) * T(0.044715) * b * b);
    return a * (T(0.5) * (T(1) + th) + T(0.5) * b * (T(1) - th * th) * dinner);
  } else if constexpr (OP == EwOp::SiluBackward) {
    T s = T(1) / (T(1) + m_exp(-b));
    return a * s * (T(1) + b * (T(1) - s));
  } else if constexpr (OP == EwOp::ClampBackward) return (b >= p0 && b <= p1) ? a : T(0);
  else if constexpr (OP == EwOp::Where) return a != T(0) ? b : c;
  else return T(0);
}

}  // namespace strata::common
