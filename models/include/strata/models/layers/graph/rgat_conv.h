// RGATConv: relational graph attention with PyTorch Geometric's default semantics
// (across-relation additive self-attention) and parameter names (weight, q, k, bias), computed
// edge-wise or compactly, with the attention vectors folded into the relation weights or not
// (strata/models/layers/graph/materialization.h); every way gives the same result.
//
//   nn::RGATConv conv(16, 8, g.num_relations(), {.heads = 4});
//   Tensor h = conv.forward(g, x);  // [N, 16] -> [N, 4 * 8]
#pragma once

#include <cstdint>
#include <optional>

#include "strata/models/layers/graph/graph_conv.h"
#include "strata/models/layers/graph/materialization.h"
#include "strata/ops/graph.h"

namespace strata::nn {

struct RGATConvOptions {
  int64_t heads = 1;
  bool concat = true;  // heads side by side [N, heads * out], else averaged [N, out]
  double negative_slope = 0.2;
  bool bias = true;
};

// For every edge e = (j -> i) of relation r and head h: g_u = x_u W_r [heads * out],
// s_e = g_i q + g_j k [heads], alpha_e = softmax over all of i's in-edges (every relation) of
// LeakyReLU(s_e); out_i = sum_e alpha_e[h] g_j[head h] per head, concatenated or averaged, + bias
// (torch_geometric.nn.RGATConv with attention_mechanism "across-relation", attention_mode
// "additive-self-attention", no bases or blocks, no edge features, dropout 0). weight
// [R, in, heads * out], q and k [heads * out, heads]: each head's score reads every head's
// features, as PyG's. Glorot-uniform weight, q, k; zero bias. Reordered, the scores come from
// x_u (W_r q) and x_u (W_r k): in instead of in x heads * out multiply-adds per row. Row r of weight
// belongs to the graph's relation r (for hetero_graph, the r-th edge type given: PyG's edge_type r
// in HeteroData.edge_types' order).
class RGATConv : public GraphConv {
 public:
  RGATConv(int64_t in_channels, int64_t out_channels, int64_t num_relations, RGATConvOptions options = {});
  Tensor forward(const Graph& g, const Tensor& x);
  // The whole graph only: a block with destinations of its own is NotImplementedError.
  Tensor forward(const GraphBlock& block, const Tensor& x) override {
    return forward(whole_graph(block, "RGATConv"), x);
  }
  // kEdgeWise or kCompact (kAggregateFirst does not apply to attention), and whether reordered.
  MaterializationPlan plan(const Graph& g) const override;
  void set_materialization(Materialization m);
  void set_reorder(std::optional<bool> reorder) { reorder_ = reorder; }  // nullopt: by the estimate
  void reset_parameters();

  Tensor weight, q, k, bias;

 private:
  int64_t in_, out_, relations_;
  RGATConvOptions options_;
  Materialization materialization_ = Materialization::kAuto;
  std::optional<bool> reorder_;
};

}  // namespace strata::nn
