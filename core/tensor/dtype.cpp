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

}  // namespace strata
