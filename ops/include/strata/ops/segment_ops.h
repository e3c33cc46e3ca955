// Row reductions by segment, row gathers and row scatter-reductions, differentiable and
// deterministic (the same bits for any thread count: every output row is reduced in a fixed order,
// the gradients are gathered through the transpose instead of scattered with atomics).
//
//   Tensor s = ops::segment_reduce(x, offsets, "max");          // rows [o[s], o[s+1]) of x -> row s
//   Tensor y = ops::gather_rows(x, index);                      // y[i] = x[index[i]]
//   Tensor z = ops::scatter_reduce_rows(src, index, n, "mean");  // z[r] = mean of src[i], index[i] == r
//
// reduce is one of "sum", "mean", "max", "min". Empty segments and rows nobody writes give 0 (as
// torch_scatter and PyG's aggregations do). max and min send the gradient to the first row that
// reaches the extreme.
#pragma once

#include <cstdint>
#include <string>

#include "strata/core/tensor.h"

namespace strata::ops {

// x [M, ...], offsets i64 [S + 1] non-decreasing from 0 to M (on any device; checked on the host):
// [S, ...], row s reducing rows [offsets[s], offsets[s + 1]) of x.
Tensor segment_reduce(const Tensor& x, const Tensor& offsets, const std::string& reduce);

// x [N, ...], index i32/i64 [M] with values in [0, N): [M, ...], row i = x[index[i]].
Tensor gather_rows(const Tensor& x, const Tensor& index);

// src [M, ...], index i32/i64 [M] with values in [0, num_rows): [num_rows, ...], row r reducing the
// rows i of src with index[i] == r in increasing i.
Tensor scatter_reduce_rows(const Tensor& src, const Tensor& index, int64_t num_rows,
                           const std::string& reduce);

}  // namespace strata::ops
