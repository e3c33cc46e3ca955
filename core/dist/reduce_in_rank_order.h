// Internal to core/dist: the deterministic reduction the MPI and in-process backends share.
#pragma once

#include <cstdint>
#include <cstring>

#include "strata/core/dtype.h"
#include "strata/core/error.h"
#include "strata/dist/process_group.h"

namespace strata::dist::detail {

// out[j] = (((chunk_0[j] + chunk_1[j]) + chunk_2[j]) + ...) for j < n, where chunk_i starts at
// chunks[i] (rank order); divided by `count` for Avg. Every rank that reduces the same chunks
// gets the same bits, whatever the MPI library or thread timing.
template <class T>
void reduce_in_rank_order(T* out, const T* const* chunks, int count, int64_t n, ReduceOp op) {
  std::memcpy(out, chunks[0], size_t(n) * sizeof(T));
  for (int i = 1; i < count; ++i) {
    const T* c = chunks[i];
    for (int64_t j = 0; j < n; ++j) out[j] += c[j];
  }
  if (op == ReduceOp::Avg && count > 1) {
    const T w = T(count);
    for (int64_t j = 0; j < n; ++j) out[j] /= w;
  }
}

inline void reduce_in_rank_order(DType dtype, void* out, const void* const* chunks, int count, int64_t n, ReduceOp op,
                                 const char* who) {
  if (dtype == DType::f32)
    reduce_in_rank_order(static_cast<float*>(out), reinterpret_cast<const float* const*>(chunks), count, n, op);
  else if (dtype == DType::f64)
    reduce_in_rank_order(static_cast<double*>(out), reinterpret_cast<const double* const*>(chunks), count, n, op);
  else
    throw NotImplementedError(std::string(who) + ": reductions of " + dtype_name(dtype) +
                              " tensors are not implemented (f32 and f64 are)");
}

}  // namespace strata::dist::detail
