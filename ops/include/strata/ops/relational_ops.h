// Relational (typed) GEMMs: rows grouped in segments (one per relation or node type), each segment
// multiplied by its own matrix in one call, with a row gather, a row scatter and a per-row scale
// fused in. The building block of RGCN, RGAT and HGT (Hector's GEMM template).
//
//   // y[dst e] += norm[e] * x[src e] @ W[relation of e] over edges grouped by relation:
//   Tensor y = ops::segment_matmul(x, rel_offsets, W,
//                                  {.gather = src, .scatter = dst, .scale = norm, .num_rows = N});
//   // W_r h_u once per (node, relation) pair: compact rows [U, N]
//   Tensor z = ops::segment_matmul(x, pair_offsets, W, {.gather = pair_nodes});
//
// Backward: grad x gathers through the same indices swapped (the transposed weights, no atomics on
// the CPU), grad W sums each segment's rows in a fixed order, grad scale is the row dot product of
// the unscaled product with the output gradient.
#pragma once

#include <cstdint>
#include <vector>

#include "strata/core/tensor.h"

namespace strata::ops {

struct SegmentMatmulOptions {
  Tensor gather{};        // i32/i64 [M]: the x row each row reads (undefined: row i)
  Tensor scatter{};       // i32/i64 [M]: the output row each row adds to (undefined: row i)
  Tensor scale{};         // [M]: a factor per row (undefined: 1)
  int64_t num_rows = -1;  // the output's rows, needed with a scatter index
};

// Rows i in [offsets[s], offsets[s + 1]) form segment s (offsets: S + 1 values from 0 to M,
// non-decreasing): y_i = scale[i] * x[gather[i]] @ weight[s], for x [*, K] and weight [S, K, N].
// Without scatter the result is [M, N] with row i = y_i; with it, [num_rows, N] where each row is
// the sum of the y_i scattered to it (0 where none is). Differentiable in x, weight and scale.
Tensor segment_matmul(const Tensor& x, const std::vector<int64_t>& offsets, const Tensor& weight,
                      const SegmentMatmulOptions& options = {});

}  // namespace strata::ops
