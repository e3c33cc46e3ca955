#include "strata/models/layers/graph/rgcn_conv.h"

#include <cmath>
#include <vector>

#include "models/layers/graph/graph_layer_utils.h"
#include "strata/autograd/grad_mode.h"
#include "strata/core/memory_stats.h"
#include "strata/ops/elementwise.h"
#include "strata/ops/factory.h"
#include "strata/ops/graph_ops.h"
#include "strata/ops/linalg.h"
#include "strata/ops/reduction.h"
#include "strata/ops/relational_ops.h"
#include "strata/ops/segment_ops.h"
#include "strata/ops/shape_ops.h"

namespace strata::nn {

RGCNConv::RGCNConv(int64_t in_channels, int64_t out_channels, int64_t num_relations, RGCNConvOptions options)
    : in_(in_channels), out_(out_channels), relations_(num_relations), options_(options) {
  STRATA_CHECK(options.aggr == "mean" || options.aggr == "add", ValueError, "RGCNConv: aggr '", options.aggr,
               "' is not one of mean, add");
  STRATA_CHECK(options.num_bases == 0 || options.num_blocks == 0, ValueError,
               "RGCNConv: num_bases and num_blocks cannot both be set");
  STRATA_CHECK(num_relations >= 1 && in_channels >= 1 && out_channels >= 1, ValueError, "RGCNConv(",
               in_channels, ", ", out_channels, ", ", num_relations, "): sizes must be positive");
  MemoryCategoryGuard category(MemoryCategory::Parameter);
  if (options.num_bases > 0) {
    weight = register_parameter("weight", Tensor::empty({options.num_bases, in_channels, out_channels}));
    comp = register_parameter("comp", Tensor::empty({num_relations, options.num_bases}));
  } else if (options.num_blocks > 0) {
    const int64_t b = options.num_blocks;
    STRATA_CHECK(in_channels % b == 0 && out_channels % b == 0, ValueError, "RGCNConv: ", b,
                 " blocks must divide in_channels ", in_channels, " and out_channels ", out_channels);
    weight =
        register_parameter("weight", Tensor::empty({num_relations, b, in_channels / b, out_channels / b}));
  } else {
    weight = register_parameter("weight", Tensor::empty({num_relations, in_channels, out_channels}));
  }
  if (options.root_weight) root = register_parameter("root", Tensor::empty({in_channels, out_channels}));
  if (options.bias) bias = register_parameter("bias", Tensor::empty({out_channels}));
  reset_parameters();
}

void RGCNConv::reset_parameters() {
  NoGradGuard no_grad;
  detail::glorot(weight);
  if (comp.defined()) detail::glorot(comp);
  if (root.defined()) detail::glorot(root);
  if (bias.defined()) bias.zero_();
}

Tensor RGCNConv::relation_weights() const {
  if (options_.num_bases > 0)  // comp [R, B] @ weight [B, in * out]
    return ops::reshape(ops::matmul(comp, ops::reshape(weight, {options_.num_bases, in_ * out_})),
                        {relations_, in_, out_});
  if (options_.num_blocks > 0)
    return detail::block_diagonal(weight);  // block b at rows b in/B, columns b out/B
  return weight;
}

MaterializationPlan RGCNConv::plan(const Graph& g) const {
  MaterializationPlan p = plan_counts("RGCNConv", g);
  const double E = double(p.edges), P = double(p.source_pairs), D = double(p.destination_pairs);
  const double in = double(in_), out = double(out_);
  p.cost_edge = E * in * out + E * out, p.rows_edge = E * out;
  p.cost_compact = P * in * out + E * out, p.rows_compact = P * out;
  p.cost_aggregate_first = E * in + D * in * out, p.rows_aggregate_first = D * in;
  p.strategy = cheapest(p, materialization_);
  return p;
}

Tensor RGCNConv::forward(const Graph& g, const Tensor& x) {
  ModuleScope scope(*this);
  STRATA_CHECK(g.num_relations() == relations_, ShapeError, "RGCNConv: the graph has ", g.num_relations(),
               " relations, the layer ", relations_);
  STRATA_CHECK(x.dim() == 2 && x.size(0) == g.num_nodes() && x.size(1) == in_, ShapeError, "RGCNConv: x ",
               shape_str(x.shape()), " must be [", g.num_nodes(), ", ", in_, "]");
  const Tensor W = relation_weights();
  const Tensor norm = options_.aggr == "mean" ? g.relation_mean_norm(x.dtype()) : Tensor();
  Tensor out;
  switch (plan(g).strategy) {
    case Materialization::kCompact: {  // W_r x_u once per (u, r), gathered per edge
      const NodeRelationPairs sp = g.source_pairs();
      out = ops::gspmm_pairs(g, ops::segment_matmul(x, sp.offsets, W, {.gather = sp.nodes}), norm);
      break;
    }
    case Materialization::kAggregateFirst: {  // (aggr_r x)_v once per (v, r), then W_r
      const NodeRelationPairs dp = g.destination_pairs();
      out = ops::segment_matmul(ops::gspmm_to_pairs(g, x, norm), dp.offsets, W,
                                {.scatter = dp.nodes, .num_rows = g.num_nodes()});
      break;
    }
    default: {  // a message per edge
      out = ops::gspmm_edges(g, ops::segment_matmul(x, detail::relation_offsets(g), W, {.gather = g.src()}),
                             norm);
      break;
    }
  }
  if (root.defined()) out = ops::add(out, ops::matmul(x, root));
  return bias.defined() ? ops::add(out, bias) : out;
}

}  // namespace strata::nn
