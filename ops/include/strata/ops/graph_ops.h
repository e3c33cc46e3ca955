// Message passing on a Graph (strata/ops/graph.h), differentiable: g-SpMM aggregates each node's
// in-edges, g-SDDMM computes a value per edge. Per-edge tensors are in the graph's CSC order.
//
//   Tensor h = ops::gspmm(g, x, g.symmetric_norm());       // GCN's propagation: sum_u w_uv x_u
//   Tensor m = ops::gspmm(g, x, Tensor(), "mean");         // SAGE's mean aggregation
//   Tensor s = ops::gsddmm_dot(g, q, k);                   // <q_u, k_v> on every edge (u, v)
//   Tensor p = ops::gspmm(g, x, Tensor(), "max");          // SAGE's max aggregation
//
// The kernels visit each destination's (backward: each source's, through the graph's CSR) edges in
// a fixed order: the same bits for any thread count, no atomics, no per-edge message tensors.
#pragma once

#include <string>

#include "strata/core/tensor.h"
#include "strata/ops/graph.h"

namespace strata::ops {

// out[v] = sum over v's in-edges e = (u, v) of w[e] * x[u] (`edge_weight` undefined: 1), for x
// [N, ...] -> [N, ...]. edge_weight is [E], or [E, H] for H heads: head h weighs the h-th of H equal
// blocks of x's flattened features (x [N, H, C] with attention weights [E, H], as GAT does).
// reduce "mean" divides by v's in-degree; "max" and "min" take the extreme per feature (no edge
// weights; the gradient goes to the first edge reaching it). Nodes without in-edges get 0. A typed
// graph aggregates over every relation. Differentiable in x and edge_weight.
Tensor gspmm(const Graph& g, const Tensor& x, const Tensor& edge_weight = Tensor(),
             const std::string& reduce = "sum");

// gspmm over messages that are already rows: out[v] = sum over v's in-edges e of w[e] * rows[r(e)],
// for messages kept once per (source, relation) pair (gspmm_pairs: rows [P, ...] for
// g.source_pairs(), r(e) = its edge_pair: compact materialization) or once per edge (gspmm_edges:
// rows [E, ...] in CSC order, r(e) = e). edge_weight [E], [E, H] or undefined (1), as gspmm's.
// Differentiable in rows and edge_weight; the gradients gather through the pairs' edge lists.
Tensor gspmm_pairs(const Graph& g, const Tensor& rows, const Tensor& edge_weight = Tensor());
Tensor gspmm_edges(const Graph& g, const Tensor& rows, const Tensor& edge_weight = Tensor());
// Per-edge dot products between a source-relation pair's row and the destination's row, per head:
// out[e, h] = <pair_rows[pair of e], dst_rows[dst e]> over head h's columns, pair_rows [P, F] for
// g.source_pairs(), dst_rows [N, F] -> [E, heads] (HGT's attention on compact keys). Differentiable
// in both; the gradients gather.
Tensor gsddmm_pairs(const Graph& g, const Tensor& pair_rows, const Tensor& dst_rows, int64_t heads);
// Aggregation per (destination, relation) pair: out[p] = sum over the in-edges e of pair p of
// w[e] * x[src e], x [N, ...] -> [P, ...] for P = g.destination_pairs().size() (aggregate-then-
// transform: the typed linear then runs once per pair). Differentiable in x and edge_weight.
Tensor gspmm_to_pairs(const Graph& g, const Tensor& x, const Tensor& edge_weight = Tensor());

// out[e] = <a[u], b[v]> for every edge e = (u, v): a, b [N, F] -> [E]. Differentiable in a and b.
Tensor gsddmm_dot(const Graph& g, const Tensor& a, const Tensor& b);

// A value per edge e = (u, v) from source ("u"), edge ("e", [E, ...] in CSC order) and destination
// ("v") data: lhs op rhs with op add, sub, mul, div (broadcasting as the elementwise ops do) or dot
// (over the last dimension: [N, H, C] u and v data give [E, H] without gathering [E, H, C]).
//   ops::gsddmm(g, "add", alpha_src, alpha_dst, "u", "v")   // GAT's a_u + a_v per edge and head
Tensor gsddmm(const Graph& g, const std::string& op, const Tensor& lhs, const Tensor& rhs,
              const std::string& lhs_target = "u", const std::string& rhs_target = "v");

// Rows of node data x [N, ...] per edge in CSC order: x[src e] and x[dst e], [E, ...]. Their
// gradients sum each node's out- (in-) edges in order, without atomics.
Tensor gather_src(const Graph& g, const Tensor& x);
Tensor gather_dst(const Graph& g, const Tensor& x);

// Softmax of edge scores [E] or [E, H] (H heads) over each destination's in-edges, as DGL's
// edge_softmax and PyG's softmax(src, index=dst); on a typed graph over each relation's in-edges of
// each destination separately, or with across_relations over all of them (RGAT's and HGT's
// attention). Differentiable in scores (first order).
Tensor edge_softmax(const Graph& g, const Tensor& scores, bool across_relations = false);

}  // namespace strata::ops
