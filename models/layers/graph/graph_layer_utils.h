// What the graph layers share: PyG's Glorot initialisation, a typed graph's relation offsets, and
// block-diagonal matrices built from their blocks (differentiably).
#pragma once

#include <cstdint>
#include <vector>

#include "strata/core/tensor.h"
#include "strata/ops/graph.h"

namespace strata::nn::detail {

// U(-a, a) in place, a = sqrt(6 / (size(-2) + size(-1))): torch_geometric.nn.inits.glorot.
void glorot(Tensor t);
// [R + 1]: relation r's edges are the CSC positions [off[r], off[r + 1]).
std::vector<int64_t> relation_offsets(const Graph& g);
// blocks [R, B, I, O] -> [R, B I, B O], block b of each matrix at rows b I, columns b O.
Tensor block_diagonal(const Tensor& blocks);

}  // namespace strata::nn::detail
