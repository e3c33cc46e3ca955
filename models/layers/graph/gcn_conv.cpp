#include "strata/models/layers/graph/gcn_conv.h"

#include <cmath>

#include "strata/autograd/grad_mode.h"
#include "strata/core/memory_stats.h"
#include "strata/ops/elementwise.h"
#include "strata/ops/factory.h"
#include "strata/ops/graph_ops.h"
#include "strata/ops/indexing.h"
#include "strata/ops/reduction.h"
#include "strata/ops/shape_ops.h"

namespace strata::nn {

GCNConv::GCNConv(int64_t in_channels, int64_t out_channels, GCNConvOptions options) : options_(options) {
  lin =
      register_module("lin", std::make_shared<Linear>(LinearOptions(in_channels, out_channels).bias(false)));
  if (options.bias) {
    MemoryCategoryGuard category(MemoryCategory::Parameter);
    bias = register_parameter("bias", Tensor::empty({out_channels}));
  }
  reset_parameters();
}

void GCNConv::reset_parameters() {
  NoGradGuard no_grad;
  // PyG's glorot: U(-a, a), a = sqrt(6 / (fan_in + fan_out)).
  const double a = std::sqrt(6.0 / double(lin->weight.size(0) + lin->weight.size(1)));
  ops::uniform_(lin->weight, -a, a);
  if (bias.defined()) bias.zero_();
}

Tensor GCNConv::forward(const Graph& g, const Tensor& x, const Tensor& edge_weight, int64_t num_dst) {
  ModuleScope scope(*this);
  Tensor h = (*lin)(x);
  Graph graph = g;
  Tensor norm = edge_weight;
  if (options_.normalize) {
    if (options_.cached && cached_graph_.defined()) {
      graph = cached_graph_, norm = cached_norm_;
    } else {
      STRATA_CHECK(
          !edge_weight.defined() || !options_.add_self_loops, NotImplementedError,
          "GCNConv: edge weights with add_self_loops (PyG keeps a loop's own weight) are not supported yet");
      if (options_.add_self_loops) graph = g.remove_self_loops().add_self_loops();  // kept with g
      NoGradGuard no_grad;
      if (!edge_weight.defined()) {
        norm = graph.symmetric_norm(x.dtype());
      } else {  // deg(v) = sum of v's in-edge weights; w'(u, v) = deg(u)^-1/2 w deg(v)^-1/2
        Tensor ones = ops::ones({graph.num_nodes(), 1}, TensorOptions(x.dtype()).device(x.device()));
        Tensor deg = ops::reshape(ops::gspmm(graph, ones, edge_weight), {-1});
        Tensor dis = ops::where(ops::gt(deg, 0.0), ops::rsqrt(deg), ops::zeros_like(deg));
        norm = ops::mul(ops::mul(ops::index_select(dis, 0, graph.src().to(DType::i64)), edge_weight),
                        ops::index_select(dis, 0, graph.dst().to(DType::i64)));
      }
      if (options_.cached) cached_graph_ = graph, cached_norm_ = norm;
    }
  }
  Tensor out = first_rows(ops::gspmm(graph, h, norm), num_dst);
  return bias.defined() ? ops::add(out, bias) : out;
}

}  // namespace strata::nn
