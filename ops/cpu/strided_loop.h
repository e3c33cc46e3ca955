// strided_for_each: the CPU's N-operand strided iteration (dims coalesced, OpenMP-chunked
// over the linear index so work splits evenly whatever the shape).
#pragma once

#include <omp.h>

#include <array>
#include <cstdint>

#include "ops/common/strided_layout.h"

namespace strata::cpu {

using common::kMaxDims;
using common::StridedLayout;
using common::coalesce;
inline constexpr int64_t kParallelGrain = 32768;

// Calls inner(ptrs, byte_strides, n) over runs of the innermost dim covering [begin, end).
template <int N, class Inner>
void strided_range(const StridedLayout<N>& L, std::array<char*, N> base, int64_t begin,
                   int64_t end, Inner& inner) {
  const int last = L.ndim - 1;
  int64_t idx[kMaxDims];
  int64_t rem = begin;
  for (int d = last; d >= 0; --d) {
    idx[d] = rem % L.shape[d];
    rem /= L.shape[d];
  }
  std::array<char*, N> p;
  for (int k = 0; k < N; ++k) {
    p[k] = base[k];
    for (int d = 0; d <= last; ++d) p[k] += idx[d] * L.stride[k][d];
  }
  int64_t inner_stride[N];
  for (int k = 0; k < N; ++k) inner_stride[k] = L.stride[k][last];
  int64_t pos = begin;
  while (pos < end) {
    int64_t n = std::min(L.shape[last] - idx[last], end - pos);
    inner(p, inner_stride, n);
    pos += n;
    if (pos >= end) break;
    // advance to the start of the next row
    for (int k = 0; k < N; ++k) p[k] += n * L.stride[k][last];
    idx[last] += n;
    for (int d = last; d > 0 && idx[d] == L.shape[d]; --d) {
      for (int k = 0; k < N; ++k) p[k] += L.stride[k][d - 1] - L.shape[d] * L.stride[k][d];
      idx[d] = 0;
      ++idx[d - 1];
    }
  }
}

template <int N, class Inner>
void strided_for_each(const Shape& shape, std::array<char*, N> base,
                      const std::array<const Shape*, N>& strides,
                      const std::array<int64_t, N>& esize, Inner inner) {
  StridedLayout<N> L = coalesce<N>(shape, strides, esize);
  int64_t total = 1;
  for (int d = 0; d < L.ndim; ++d) total *= L.shape[d];
  if (total == 0) return;
  if (total <= kParallelGrain || omp_get_max_threads() == 1) {
    strided_range<N>(L, base, 0, total, inner);
    return;
  }
  int64_t chunks = (total + kParallelGrain - 1) / kParallelGrain;
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    Inner local = inner;
    strided_range<N>(L, base, c * kParallelGrain, std::min(total, (c + 1) * kParallelGrain), local);
  }
}

}  // namespace strata::cpu
