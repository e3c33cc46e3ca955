#include "strata/core/dtype.h"

#include "strata/core/error.h"

namespace strata {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::f64: return "f64";
    case DType::bf16: return "bf16";
    case DType::f16: return "f16";
    case DType::i32: return "i32";
    case DType::i64: return "i64";
    case DType::u8: return "u8";
    case DType::boolean: return "bool";
  }
  return "?";
}

DType parse_dtype(const std::string& n) {
  if (n == "f32" || n == "float32" || n == "float") return DType::f32;
  if (n == "f64" || n == "float64" || n == "double") return DType::f64;
  if (n == "bf16" || n == "bfloat16") return DType::bf16;
  if (n == "f16" || n == "float16" || n == "half") return DType::f16;
  if (n == "i32" || n == "int32") return DType::i32;
  if (n == "i64" || n == "int64" || n == "long") return DType::i64;
  if (n == "u8" || n == "uint8") return DType::u8;
  if (n == "bool") return DType::boolean;
  throw ValueError("unknown dtype '" + n + "'");
}

namespace {
int rank(DType t) {
  switch (t) {
    case DType::boolean: return 0;
    case DType::u8: return 1;
    case DType::i32: return 2;
    case DType::i64: return 3;
    case DType::f16: return 4;
    case DType::bf16: return 4;
    case DType::f32: return 5;
    case DType::f64: return 6;
  }
  return 0;
}
}  // namespace

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  // f16 with bf16 has no common 16-bit type: PyTorch promotes to f32.
  if ((a == DType::f16 && b == DType::bf16) || (a == DType::bf16 && b == DType::f16)) return DType::f32;
  return rank(a) >= rank(b) ? a : b;
}

uint16_t f16::from_float(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
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
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) ++half;  // may carry into exponent
  return uint16_t(half);
}

float f16::to_float(uint16_t h) {
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
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

}  // namespace strata
