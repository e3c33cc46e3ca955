// GATConv: graph attention (Velickovic et al.) with PyTorch Geometric's semantics and parameter
// names (lin.weight, att_src, att_dst, lin_edge.weight, att_edge, res.weight, bias), so weights
// move between the two. Runs in its module scope, as a planner block when marked.
//
//   nn::GATConv conv(16, 8, {.heads = 8});
//   Tensor h = conv.forward(graph, x);   // [N, 16] -> [N, 64]
#pragma once

#include <memory>

#include "strata/models/layers/graph/graph_conv.h"
#include "strata/models/layers/linear.h"

namespace strata::nn {

struct GATConvOptions {
  int64_t heads = 1;
  bool concat = true;           // heads side by side ([N, heads * out]); false: their mean ([N, out])
  double negative_slope = 0.2;  // LeakyReLU of the attention logits
  double dropout = 0.0;         // on the attention coefficients while training (Philox, replayed in backward)
  bool add_self_loops =
      true;              // old loops dropped, one per node added (edge features: the mean of its in-edges')
  int64_t edge_dim = 0;  // > 0: edge features [E, edge_dim] join the attention through lin_edge
  bool bias = true;
  bool residual = false;  // add res(x)
};

// alpha_e = softmax over v's in-edges of LeakyReLU(<att_src, W x_u> + <att_dst, W x_v> [+ <att_edge,
// W_e e>]) per head; out_v = sum_e alpha_e W x_u per head, concatenated or averaged, plus bias
// (torch_geometric.nn.GATConv). Glorot-uniform weights and attention vectors, zero bias, as PyG.
class GATConv : public GraphConv {
 public:
  GATConv(int64_t in_channels, int64_t out_channels, GATConvOptions options = {});
  // x [N, in]; edge_attr [E, edge_dim] (or [E] for edge_dim 1) in the graph's input edge order
  // (Graph::edge_ids), or undefined. Returns [N, heads * out] (concat) or [N, out]; num_dst >= 0:
  // the first num_dst rows only (a message-flow graph's destinations).
  Tensor forward(const Graph& g, const Tensor& x, const Tensor& edge_attr = Tensor(), int64_t num_dst = -1);
  Tensor forward(const GraphBlock& block, const Tensor& x) override {
    return forward(block.graph, x, Tensor(), block.num_dst);
  }
  void reset_parameters();
  const GATConvOptions& options() const { return options_; }

  std::shared_ptr<Linear> lin, lin_edge, res;
  Tensor att_src, att_dst, att_edge, bias;

 private:
  GATConvOptions options_;
  int64_t out_channels_;
};

}  // namespace strata::nn
