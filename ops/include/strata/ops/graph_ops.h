// Message passing on a Graph (strata/ops/graph.h), differentiable: g-SpMM aggregates each node's
// in-edges, g-SDDMM computes a value per edge. Per-edge tensors are in the graph's CSC order.
//
//   Tensor h = ops::gspmm(g, x, g.symmetric_norm());       // GCN's propagation: sum_u w_uv x_u
//   Tensor m = ops::gspmm(g, x, Tensor(), "mean");         // SAGE's mean aggregation
//   Tensor s = ops::gsddmm_dot(g, q, k);                   // <q_u, k_v> on every edge (u, v)
//
// The kernels visit each destination's (backward: each source's, through the graph's CSR) edges in
// a fixed order: the same bits for any thread count, no atomics, no per-edge message tensors.
#pragma once

#include <string>

#include "strata/core/tensor.h"
#include "strata/ops/graph.h"

namespace strata::ops {

// out[v] = sum over v's in-edges e = (u, v) of w[e] * x[u] (`edge_weight` [E] undefined: 1), for
// x [N, F] -> [N, F]. reduce "mean" divides by v's in-degree (rows without in-edges are 0). A
// typed graph aggregates over every relation. Differentiable in x and edge_weight.
Tensor gspmm(const Graph& g, const Tensor& x, const Tensor& edge_weight = Tensor(),
             const std::string& reduce = "sum");

// out[e] = <a[u], b[v]> for every edge e = (u, v): a, b [N, F] -> [E]. Differentiable in a and b.
Tensor gsddmm_dot(const Graph& g, const Tensor& a, const Tensor& b);

// Softmax of edge scores [E] or [E, H] (H heads) over each destination's in-edges, as DGL's
// edge_softmax and PyG's softmax(src, index=dst); on a typed graph over each relation's in-edges of
// each destination separately. Differentiable in scores (first order).
Tensor edge_softmax(const Graph& g, const Tensor& scores);

}  // namespace strata::ops
