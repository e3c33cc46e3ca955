// StridedLayout<N>: N strided operands of one shape with size-1 dims dropped and dims merged
// where every operand is contiguous across them; the layout both backends walk (the CPU's
// strided loop, the CUDA kernels' StridedArgs).
#pragma once

#include <array>
#include <cstdint>

#include "strata/core/error.h"
#include "strata/core/shape.h"

namespace strata::common {

inline constexpr int kMaxDims = 16;

template <int N>
struct StridedLayout {
  int ndim = 0;
  int64_t shape[kMaxDims];
  int64_t stride[N][kMaxDims];  // bytes
};

// Drops size-1 dims and merges dims that are contiguous in every operand.
template <int N>
StridedLayout<N> coalesce(const Shape& shape, const std::array<const Shape*, N>& strides,
                          const std::array<int64_t, N>& esize) {
  StridedLayout<N> L;
  STRATA_CHECK(shape.size() <= size_t(kMaxDims), ShapeError, "tensors of more than ", kMaxDims,
               " dims are not supported, got ", shape_str(shape));
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    if (L.ndim > 0) {
      bool merge = true;
      for (int k = 0; k < N; ++k)
        if (L.stride[k][L.ndim - 1] != (*strides[k])[d] * esize[k] * shape[d]) merge = false;
      if (merge) {
        L.shape[L.ndim - 1] *= shape[d];
        for (int k = 0; k < N; ++k) L.stride[k][L.ndim - 1] = (*strides[k])[d] * esize[k];
        continue;
      }
    }
    L.shape[L.ndim] = shape[d];
    for (int k = 0; k < N; ++k) L.stride[k][L.ndim] = (*strides[k])[d] * esize[k];
    ++L.ndim;
  }
  if (L.ndim == 0) {  // a single element
    L.ndim = 1;
    L.shape[0] = 1;
    for (int k = 0; k < N; ++k) L.stride[k][0] = esize[k];
  }
  return L;
}

}  // namespace strata::common
