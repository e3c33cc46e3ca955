#include "models/layers/graph/graph_layer_utils.h"

#include <cmath>

#include "strata/ops/factory.h"
#include "strata/ops/shape_ops.h"

namespace strata::nn::detail {

void glorot(Tensor t) {
  const double a = std::sqrt(6.0 / double(t.size(-2) + t.size(-1)));
  ops::uniform_(t, -a, a);
}

std::vector<int64_t> relation_offsets(const Graph& g) {
  std::vector<int64_t> off;
  for (int64_t r = 0; r <= g.num_relations(); ++r) off.push_back(g.relation_offset(r));
  return off;
}

Tensor block_diagonal(const Tensor& blocks) {
  const int64_t R = blocks.size(0), B = blocks.size(1), I = blocks.size(2), O = blocks.size(3);
  if (B == 1) return ops::reshape(blocks, {R, I, O});
  const TensorOptions to = TensorOptions(blocks.dtype()).device(blocks.device());
  std::vector<Tensor> rows;
  for (int64_t b = 0; b < B; ++b) {
    std::vector<Tensor> parts;
    if (b > 0) parts.push_back(ops::zeros({R, I, b * O}, to));
    parts.push_back(ops::select(blocks, 1, b));
    if (b + 1 < B) parts.push_back(ops::zeros({R, I, (B - b - 1) * O}, to));
    rows.push_back(ops::cat(parts, 2));
  }
  return ops::cat(rows, 1);
}

}  // namespace strata::nn::detail
