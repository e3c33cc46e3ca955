// StridedArgs<N>: the by-value kernel argument describing N strided operands of one shape
// (dims coalesced like the CPU's strided loop), the host function that builds it, and the
// launch size of a grid-stride loop.
#pragma once

#include <array>
#include <cstdint>

#include "ops/common/strided_layout.h"
#include "strata/core/tensor.h"

namespace strata::gpu {

using common::kMaxDims;

// Operand 0 is usually the output. Strides are in bytes; dims are the shape after dropping
// size-1 dims and merging dims contiguous in every operand (at least one dim).
template <int N>
struct StridedArgs {
  int ndim;
  int64_t numel;
  int64_t shape[kMaxDims];
  int64_t stride[N][kMaxDims];
  char* ptr[N];
  DType dtype[N];
};

// All tensors must have ts[0]'s shape (inputs broadcast as stride-0 views).
template <int N>
StridedArgs<N> make_strided_args(const std::array<const Tensor*, N>& ts);

// Threads per block and a grid size for a grid-stride loop over n elements.
inline constexpr int kThreads = 256;
inline unsigned grid_for(int64_t n, int threads = kThreads) {
  int64_t b = (n + threads - 1) / threads;
  return unsigned(b < 1 ? 1 : (b > (int64_t(1) << 16) ? (int64_t(1) << 16) : b));
}

}  // namespace strata::gpu
