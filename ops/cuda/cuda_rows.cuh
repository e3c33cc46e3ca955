// Shared pieces of the CUDA row kernels (softmax, cross-entropy, layer norm): the [rows, cols]
// view, block-per-row loops, and the host-side dtype and size checks.
#pragma once

#include <algorithm>
#include <initializer_list>
#include <limits>

#include "ops/cuda/cuda_backend.h"
#include "ops/cuda/cuda_device_utils.cuh"
#include "ops/cuda/cuda_strided.h"
#include "strata/core/error.h"

namespace strata::gpu::row_util {

struct Rows {
  int64_t R, C;
};

inline Rows rows_of(const Tensor& t) {
  const int64_t C = t.dim() == 0 ? 1 : t.size(-1);
  return {t.numel() / std::max<int64_t>(C, 1), C};
}

inline unsigned row_grid(int64_t R) { return grid_for(R, 1); }

#define STRATA_FOR_ROWS(r, R) for (int64_t r = blockIdx.x; r < (R); r += gridDim.x)
#define STRATA_FOR_COLS(i, C) for (int64_t i = threadIdx.x; i < (C); i += blockDim.x)

template <class T>
__device__ __forceinline__ T row_max(const T* x, int64_t C, T* smem) {
  T m = -std::numeric_limits<T>::infinity();
  STRATA_FOR_COLS(i, C) m = x[i] > m ? x[i] : m;
  return block_max(m, smem);
}

template <class T>
const T* ptr_or_null(const Tensor& t) {
  return t.defined() ? static_cast<const T*>(t.data_ptr()) : nullptr;
}
template <class T>
T* mut_or_null(const Tensor& t) {
  return t.defined() ? static_cast<T*>(t.data_ptr()) : nullptr;
}

// Runs f(T{}) for the row kernels' dtypes (contiguous f32/f64, as on the CPU).
template <class F>
void by_dtype(const Tensor& t, F f) {
  if (t.dtype() == DType::f32)
    f(float{});
  else
    f(double{});
}

inline void check_rows(const char* op, std::initializer_list<const Tensor*> ts, DType dt) {
  for (const Tensor* t : ts)
    if (t->defined())
      STRATA_CHECK(t->is_contiguous() && t->dtype() == dt, TypeError, op, ": expects contiguous ",
                   dtype_name(dt), " tensors, got ", t->str());
}

// Kernels index these tensors by row and column, so their sizes are checked (a GPU fault
// would end the CUDA context): each defined tensor must hold `n` elements.
inline void check_numel(const char* op, std::initializer_list<const Tensor*> ts, int64_t n) {
  for (const Tensor* t : ts)
    if (t->defined())
      STRATA_CHECK(t->numel() == n, ShapeError, op, ": ", t->str(), " should hold ", n, " elements");
}

// A tensor's elements beside f32/f64 rows, as the kernels' compute type T: T itself, or the bits
// of bf16/f16 beside f32 rows, loaded exactly and stored rounded once (the host's rounding, as a
// cast of the f32 value would round it).
struct SameElement {
  template <class T>
  __device__ T load(T v) const {
    return v;
  }
  template <class T>
  __device__ T store(T v) const {
    return v;
  }
};
struct Bf16Element {
  __device__ float load(uint16_t v) const { return bf16_to_float(v); }
  __device__ uint16_t store(float v) const { return float_to_bf16(v); }
};
struct F16Element {
  __device__ float load(uint16_t v) const { return f16_to_float(v); }
  __device__ uint16_t store(float v) const { return float_to_f16(v); }
};

// Runs f(T{}, E{}, Conv{}) for f32/f64 rows and a tensor `other` whose elements are T, or bf16/f16
// beside f32 rows (E uint16_t).
template <class F>
void by_row_and_element_dtype(const Tensor& rows, const Tensor& other, F f) {
  if (other.dtype() == DType::bf16)
    f(float{}, uint16_t{}, Bf16Element{});
  else if (other.dtype() == DType::f16)
    f(float{}, uint16_t{}, F16Element{});
  else
    by_dtype(rows, [&](auto v) { f(v, v, SameElement{}); });
}

// Whether t may hold a row kernel's 16-bit elements beside `rows`: bf16/f16 beside f32.
inline bool narrow_beside(const Tensor& t, const Tensor& rows) {
  return t.defined() && rows.dtype() == DType::f32 && (t.dtype() == DType::bf16 || t.dtype() == DType::f16);
}

}  // namespace strata::gpu::row_util
