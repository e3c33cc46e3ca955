#include "strata/models/layers/graph/gat_conv.h"

#include <cmath>

#include "models/layers/graph/graph_layer_utils.h"
#include "strata/autograd/grad_mode.h"
#include "strata/core/memory_stats.h"
#include "strata/ops/elementwise.h"
#include "strata/ops/factory.h"
#include "strata/ops/graph_ops.h"
#include "strata/ops/nn.h"
#include "strata/ops/reduction.h"
#include "strata/ops/segment_ops.h"
#include "strata/ops/shape_ops.h"

namespace strata::nn {

GATConv::GATConv(int64_t in_channels, int64_t out_channels, GATConvOptions options)
    : options_(options), out_channels_(out_channels) {
  STRATA_CHECK(options.heads >= 1 && out_channels >= 1 && in_channels >= 1, ValueError,
               "GATConv: in_channels ", in_channels, ", out_channels ", out_channels, " and heads ",
               options.heads, " must be positive");
  STRATA_CHECK(options.dropout >= 0 && options.dropout < 1, ValueError, "GATConv: dropout ", options.dropout,
               " is not in [0, 1)");
  const int64_t H = options.heads, C = out_channels, total = options.concat ? H * C : C;
  lin = register_module("lin", std::make_shared<Linear>(LinearOptions(in_channels, H * C).bias(false)));
  {
    MemoryCategoryGuard category(MemoryCategory::Parameter);
    att_src = register_parameter("att_src", Tensor::empty({1, H, C}));
    att_dst = register_parameter("att_dst", Tensor::empty({1, H, C}));
  }
  if (options.edge_dim > 0) {
    lin_edge = register_module("lin_edge",
                               std::make_shared<Linear>(LinearOptions(options.edge_dim, H * C).bias(false)));
    MemoryCategoryGuard category(MemoryCategory::Parameter);
    att_edge = register_parameter("att_edge", Tensor::empty({1, H, C}));
  }
  if (options.residual)
    res = register_module("res", std::make_shared<Linear>(LinearOptions(in_channels, total).bias(false)));
  if (options.bias) {
    MemoryCategoryGuard category(MemoryCategory::Parameter);
    bias = register_parameter("bias", Tensor::empty({total}));
  }
  reset_parameters();
}

void GATConv::reset_parameters() {
  NoGradGuard no_grad;
  detail::glorot(lin->weight);
  if (lin_edge) detail::glorot(lin_edge->weight);
  if (res) detail::glorot(res->weight);
  detail::glorot(att_src);
  detail::glorot(att_dst);
  if (att_edge.defined()) detail::glorot(att_edge);
  if (bias.defined()) bias.zero_();
}

Tensor GATConv::forward(const Graph& g, const Tensor& x, const Tensor& edge_attr, int64_t num_dst) {
  ModuleScope scope(*this);
  const int64_t N = x.size(0), H = options_.heads, C = out_channels_;
  STRATA_CHECK(!edge_attr.defined() || lin_edge, ValueError, "GATConv: edge_attr ", edge_attr.str(),
               " given to a layer built without edge_dim");
  STRATA_CHECK(!lin_edge || edge_attr.defined(), ValueError, "GATConv: the layer has edge_dim ",
               options_.edge_dim, " but no edge_attr was given");
  Tensor ea;
  if (edge_attr.defined()) {
    ea = edge_attr.dim() == 1 ? ops::reshape(edge_attr, {-1, 1}) : edge_attr;
    STRATA_CHECK(ea.dim() == 2 && ea.size(1) == options_.edge_dim, ShapeError, "GATConv: edge_attr ",
                 shape_str(edge_attr.shape()), " must be [E, ", options_.edge_dim, "]");
  }
  Tensor h = ops::reshape((*lin)(x), {N, H, C});
  Tensor a_src = ops::sum(ops::mul(h, att_src), {-1});  // [N, H]
  Tensor a_dst = ops::sum(ops::mul(h, att_dst), {-1});

  const Graph graph = options_.add_self_loops ? g.remove_self_loops().add_self_loops() : g;  // kept with g
  Tensor e_csc;  // edge features per edge of `graph`, CSC order
  if (ea.defined()) {
    STRATA_CHECK(ea.size(0) >= g.num_edges(), ShapeError, "GATConv: edge_attr has ", ea.size(0),
                 " rows for a graph of ", g.num_edges(), " edges");
    if (options_.add_self_loops) {
      STRATA_CHECK(g.num_relations() == 1 && g.num_node_types() == 1, NotImplementedError,
                   "GATConv: edge features with self loops on a typed graph");
      // A loop's features: the mean of its node's in-edges' (loops removed), PyG's fill_value 'mean'.
      const Graph plain = g.remove_self_loops();
      Tensor in_edges = ops::gather_rows(ea, plain.edge_ids());
      Tensor loop_attr = ops::segment_reduce(in_edges, plain.in_offsets(), "mean");
      // The looped graph numbers node v's loop next_edge_id() + v, after every remaining id.
      Tensor table = ops::cat({ops::narrow(ea, 0, 0, plain.next_edge_id()), loop_attr}, 0);
      e_csc = ops::gather_rows(table, graph.edge_ids());
    } else {
      e_csc = ops::gather_rows(ea, graph.edge_ids());
    }
  }

  Tensor alpha = ops::gsddmm(graph, "add", a_src, a_dst, "u", "v");  // [E, H]
  if (e_csc.defined()) {
    Tensor he = ops::reshape((*lin_edge)(e_csc), {graph.num_edges(), H, C});
    alpha = ops::add(alpha, ops::sum(ops::mul(he, att_edge), {-1}));
  }
  alpha = ops::where(ops::gt(alpha, 0.0), alpha, ops::mul(alpha, options_.negative_slope));  // LeakyReLU
  alpha = ops::edge_softmax(graph, alpha);
  if (options_.dropout > 0 && is_training()) alpha = ops::dropout(alpha, options_.dropout, true);
  Tensor out = first_rows(ops::gspmm(graph, h, alpha), num_dst);  // [rows, H, C]
  const int64_t rows = out.size(0);
  out = options_.concat ? ops::reshape(out, {rows, H * C}) : ops::mean(out, {1});
  if (res) out = ops::add(out, (*res)(first_rows(x, num_dst)));
  return bias.defined() ? ops::add(out, bias) : out;
}

}  // namespace strata::nn
