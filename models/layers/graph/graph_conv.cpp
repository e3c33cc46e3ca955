#include "strata/models/layers/graph/graph_conv.h"

#include "strata/core/error.h"
#include "strata/ops/shape_ops.h"

namespace strata::nn {

const Graph& whole_graph(const GraphBlock& block, const char* layer) {
  STRATA_CHECK(block.num_dst < 0 || block.num_dst == block.graph.num_nodes(), NotImplementedError, layer,
               " on a sampled message-flow block (", block.num_dst, " destinations of ",
               block.graph.num_nodes(), " nodes): the relational layers run on the whole graph");
  return block.graph;
}

MaterializationPlan GraphConv::plan(const Graph& g) const { return plan_counts(type_name(), g); }

Tensor first_rows(const Tensor& x, int64_t num_dst) {
  if (num_dst < 0 || num_dst == x.size(0)) return x;
  STRATA_CHECK(num_dst <= x.size(0), ShapeError, "num_dst ", num_dst, " is more than the ", x.size(0),
               " rows");
  return ops::narrow(x, 0, 0, num_dst);
}

}  // namespace strata::nn
