#include "strata/models/layers/graph/rgat_conv.h"

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

RGATConv::RGATConv(int64_t in_channels, int64_t out_channels, int64_t num_relations, RGATConvOptions options)
    : in_(in_channels), out_(out_channels), relations_(num_relations), options_(options) {
  STRATA_CHECK(num_relations >= 1 && in_channels >= 1 && out_channels >= 1 && options.heads >= 1, ValueError,
               "RGATConv(", in_channels, ", ", out_channels, ", ", num_relations, ", heads ", options.heads,
               "): sizes must be positive");
  const int64_t H = options.heads, HC = H * out_channels;
  MemoryCategoryGuard category(MemoryCategory::Parameter);
  weight = register_parameter("weight", Tensor::empty({num_relations, in_channels, HC}));
  q = register_parameter("q", Tensor::empty({HC, H}));
  k = register_parameter("k", Tensor::empty({HC, H}));
  if (options.bias) bias = register_parameter("bias", Tensor::empty({options.concat ? HC : out_channels}));
  // PyG registers these for its other attention modes; its default path, this layer's, never reads them.
  for (const char* absent : {"w", "l1", "b1", "l2", "b2"}) register_absent_state(absent);
  reset_parameters();
}

void RGATConv::reset_parameters() {
  NoGradGuard no_grad;
  detail::glorot(weight);
  detail::glorot(q);
  detail::glorot(k);
  if (bias.defined()) bias.zero_();
}

void RGATConv::set_materialization(Materialization m) {
  STRATA_CHECK(m != Materialization::kAggregateFirst, ValueError,
               "RGATConv: aggregate_first does not apply to attention (the messages are weighted per edge)");
  materialization_ = m;
}

MaterializationPlan RGATConv::plan(const Graph& g) const {
  MaterializationPlan p = plan_counts("RGATConv", g);
  const double E = double(p.edges), P = double(p.source_pairs), D = double(p.destination_pairs);
  const double F = double(in_), H = double(options_.heads), HC = H * double(out_);
  // Scores per row: reordered x (W_r q): F H, after folding W_r q and W_r k once (2 R F HC H); else
  // (x W_r) q on top of the typed linear: F HC + HC H.
  const double R = double(relations_), fold = 2 * R * F * HC * H;
  auto cost = [&](double src_rows, double dst_rows, bool reorder) {
    const double score = reorder ? F * H : F * HC + HC * H;
    return src_rows * F * HC + (src_rows + dst_rows) * score + E * HC + (reorder ? fold : 0);
  };
  const bool reorder = reorder_.value_or(cost(P, D, true) <= cost(P, D, false));
  p.reorder = reorder;
  p.cost_edge = cost(E, E, reorder), p.rows_edge = E * HC;
  p.cost_compact = cost(P, D, reorder), p.rows_compact = P * HC;
  p.strategy = cheapest(p, materialization_);
  return p;
}

Tensor RGATConv::forward(const Graph& g, const Tensor& x) {
  ModuleScope scope(*this);
  STRATA_CHECK(g.num_relations() == relations_, ShapeError, "RGATConv: the graph has ", g.num_relations(),
               " relations, the layer ", relations_);
  STRATA_CHECK(x.dim() == 2 && x.size(0) == g.num_nodes() && x.size(1) == in_, ShapeError, "RGATConv: x ",
               shape_str(x.shape()), " must be [", g.num_nodes(), ", ", in_, "]");
  const MaterializationPlan p = plan(g);
  const int64_t H = options_.heads, C = out_, N = g.num_nodes();
  const bool compact = p.strategy == Materialization::kCompact;
  // Rows of the messages: per source pair (compact) or per edge; the scores' source and
  // destination rows alike.
  const NodeRelationPairs sp = compact ? g.source_pairs() : NodeRelationPairs{};
  const NodeRelationPairs dp = compact ? g.destination_pairs() : NodeRelationPairs{};
  const std::vector<int64_t> src_off = compact ? sp.offsets : detail::relation_offsets(g);
  const std::vector<int64_t> dst_off = compact ? dp.offsets : detail::relation_offsets(g);
  const Tensor src_rows = compact ? sp.nodes : g.src(), dst_rows = compact ? dp.nodes : g.dst();
  const Tensor z = ops::segment_matmul(x, src_off, weight, {.gather = src_rows});  // g_j, [rows, H C]
  Tensor s_src, s_dst;
  if (p.reorder) {  // x_u (W_r k), x_u (W_r q): [R, in, H] each
    s_src = ops::segment_matmul(x, src_off, ops::matmul(weight, k), {.gather = src_rows});
    s_dst = ops::segment_matmul(x, dst_off, ops::matmul(weight, q), {.gather = dst_rows});
  } else {
    s_src = ops::matmul(z, k);
    s_dst = ops::matmul(ops::segment_matmul(x, dst_off, weight, {.gather = dst_rows}), q);
  }
  if (compact) s_src = ops::gather_rows(s_src, sp.edge_pair), s_dst = ops::gather_rows(s_dst, dp.edge_pair);
  Tensor alpha = ops::add(s_src, s_dst);                                                     // [E, H]
  alpha = ops::where(ops::gt(alpha, 0.0), alpha, ops::mul(alpha, options_.negative_slope));  // LeakyReLU
  alpha = ops::edge_softmax(g, alpha, /*across_relations=*/true);
  Tensor out = compact ? ops::gspmm_pairs(g, z, alpha) : ops::gspmm_edges(g, z, alpha);  // [N, H C]
  out = options_.concat ? out : ops::mean(ops::reshape(out, {N, H, C}), {1});
  return bias.defined() ? ops::add(out, bias) : out;
}

}  // namespace strata::nn
