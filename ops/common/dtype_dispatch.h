// dispatch_dtype: runs a generic lambda with the C++ type of a DType; convert<To>(from): the
// element conversion both backends round with (the CUDA kernels launch from these on the host);
// is_half(dt): whether dt is one of the 16-bit floats.
#pragma once

#include <cstdint>

#include "strata/core/dtype.h"
#include "strata/core/error.h"

namespace strata::common {

inline bool is_half(DType t) { return t == DType::bf16 || t == DType::f16; }

template <class F>
decltype(auto) dispatch_dtype(DType t, F&& f) {
  switch (t) {
    case DType::f32: return f(float{});
    case DType::f64: return f(double{});
    case DType::bf16: return f(bf16{});
    case DType::f16: return f(f16{});
    case DType::i32: return f(int32_t{});
    case DType::i64: return f(int64_t{});
    case DType::u8: return f(uint8_t{});
    case DType::boolean: return f(bool{});
  }
  throw TypeError("unknown dtype");
}

// Like dispatch_dtype for the dtypes the indexing kernels accumulate in: f32, f64, i64, i32;
// throws TypeError naming `op` for the others.
template <class F>
void dispatch_float_or_int(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::f32: return f(float{});
    case DType::f64: return f(double{});
    case DType::i64: return f(int64_t{});
    case DType::i32: return f(int32_t{});
    default: throw TypeError(detail::concat(op, ": not defined for ", dtype_name(t)));
  }
}

// Conversions through float for the 16-bit types, static_cast otherwise.
template <class To, class From>
inline To convert(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<To, bf16> || std::is_same_v<To, f16>) {
    return To(static_cast<float>(v));
  } else if constexpr (std::is_same_v<From, bf16> || std::is_same_v<From, f16>) {
    return static_cast<To>(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else {
    return static_cast<To>(v);
  }
}

}  // namespace strata::common
