// DType (f32, f64, bf16, f16, i32, i64, u8, bool) and the 16-bit float storage types.
#pragma once

#include <cstdint>
#include <string>

#include "strata/core/host_device.h"

namespace strata {

enum class DType : uint8_t { f32, f64, bf16, f16, i32, i64, u8, boolean };

constexpr size_t element_size(DType t) {
  switch (t) {
    case DType::f32: return 4;
    case DType::f64: return 8;
    case DType::bf16: return 2;
    case DType::f16: return 2;
    case DType::i32: return 4;
    case DType::i64: return 8;
    case DType::u8: return 1;
    case DType::boolean: return 1;
  }
  return 0;
}

constexpr bool is_floating(DType t) {
  return t == DType::f32 || t == DType::f64 || t == DType::bf16 || t == DType::f16;
}
constexpr bool is_integral(DType t) { return !is_floating(t); }

const char* dtype_name(DType t);
// Parses "f32", "float32", "bf16", ...; throws ValueError on an unknown name.
DType parse_dtype(const std::string& name);

// Type promotion for binary ops (PyTorch's rules restricted to our dtypes).
DType promote_types(DType a, DType b);

// Conversions between float and the 16-bit formats, written once for the host and CUDA.
// bfloat16 is the top half of an IEEE float32; rounding is to nearest even.
STRATA_HD uint16_t float_to_bf16_bits(float f) {
  uint32_t u = detail::float_to_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}
STRATA_HD float bf16_bits_to_float(uint16_t b) { return detail::bits_to_float(uint32_t(b) << 16); }

// IEEE 754 binary16, rounding to nearest even, with subnormals and inf/nan.
STRATA_HD uint16_t float_to_f16_bits(float f) {
  uint32_t x = detail::float_to_bits(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t mant = x & 0x007fffffu;
  int32_t exp = int32_t((x >> 23) & 0xff);
  if (exp == 0xff) return uint16_t(sign | 0x7c00u | (mant ? 0x200u : 0u));  // inf / nan
  int32_t e = exp - 127 + 15;
  if (e >= 0x1f) return uint16_t(sign | 0x7c00u);  // overflow -> inf
  if (e <= 0) {                                     // subnormal or zero
    if (e < -10) return uint16_t(sign);
    mant |= 0x00800000u;
    uint32_t shift = uint32_t(14 - e);
    uint32_t half = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1u);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1u))) ++half;
    return uint16_t(sign | half);
  }
  uint32_t half = sign | (uint32_t(e) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) ++half;  // may carry into the exponent
  return uint16_t(half);
}

STRATA_HD float f16_bits_to_float(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t x;
  if (exp == 0x1f) {
    x = sign | 0x7f800000u | (mant << 13);
  } else if (exp == 0) {
    if (mant == 0) {
      x = sign;
    } else {  // normalize the subnormal
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while (!(mant & 0x400u));
      x = sign | (uint32_t(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
    }
  } else {
    x = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  return detail::bits_to_float(x);
}

// Storage types for bfloat16 and float16 tensors.
struct bf16 {
  uint16_t bits = 0;
  bf16() = default;
  explicit bf16(float f) : bits(float_to_bf16_bits(f)) {}
  operator float() const { return bf16_bits_to_float(bits); }
  static uint16_t from_float(float f) { return float_to_bf16_bits(f); }
};

struct f16 {
  uint16_t bits = 0;
  f16() = default;
  explicit f16(float f) : bits(float_to_f16_bits(f)) {}
  operator float() const { return f16_bits_to_float(bits); }
  static uint16_t from_float(float f) { return float_to_f16_bits(f); }
  static float to_float(uint16_t h) { return f16_bits_to_float(h); }
};

template <class T> struct dtype_of;
template <> struct dtype_of<float> { static constexpr DType value = DType::f32; };
template <> struct dtype_of<double> { static constexpr DType value = DType::f64; };
template <> struct dtype_of<bf16> { static constexpr DType value = DType::bf16; };
template <> struct dtype_of<f16> { static constexpr DType value = DType::f16; };
template <> struct dtype_of<int32_t> { static constexpr DType value = DType::i32; };
template <> struct dtype_of<int64_t> { static constexpr DType value = DType::i64; };
template <> struct dtype_of<uint8_t> { static constexpr DType value = DType::u8; };
template <> struct dtype_of<bool> { static constexpr DType value = DType::boolean; };

}  // namespace strata
