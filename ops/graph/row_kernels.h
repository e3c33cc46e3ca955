// Raw (non-differentiable) launchers of the backends' row kernels that the graph, segment, gather
// and scatter ops share: the sum and max/min over compressed rows and the max/min gradient.
#pragma once

#include <cstdint>

#include "strata/core/tensor.h"

namespace strata::ops::detail {

// i64 [n] = 0, 1, ..., n - 1 on `device`.
Tensor iota(int64_t n, Device device);
// out [R, F] with out[r] = sum over k in [offsets[r], offsets[r + 1]) of w(k) x[indices[k]]
// (Backend::spmm); x contiguous [N, F].
Tensor row_sum(const Tensor& offsets, const Tensor& indices, const Tensor& weights,
               const Tensor& weight_index, const Tensor& x, int64_t rows);
// out [R, F] and arg i64 [R, F] (Backend::spmm_extreme).
Tensor row_extreme(const Tensor& offsets, const Tensor& indices, const Tensor& weight_index, const Tensor& x,
                   int64_t rows, bool minimum, Tensor* arg);
// grad_x [N, F] (Backend::spmm_extreme_backward).
Tensor row_extreme_backward(const Tensor& offsets, const Tensor& positions, const Tensor& rows,
                            const Tensor& arg, const Tensor& grad_out, int64_t n);

// A contiguous 2-D view [x.size(0), rest] of x (rest = 1 for a vector).
Tensor as_rows(const Tensor& x);

}  // namespace strata::ops::detail
