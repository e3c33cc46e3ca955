// GCNConv: graph convolution with PyTorch Geometric's semantics and parameter names (lin.weight,
// bias), so weights move between the two. Runs in its module scope, as a planner block when marked.
//
//   nn::GCNConv conv(16, 32);
//   Tensor h = conv.forward(graph, x);  // [N, 16] -> [N, 32]
#pragma once

#include <memory>
#include <string>

#include "strata/models/layers/graph/graph_conv.h"
#include "strata/models/layers/linear.h"

namespace strata::nn {

struct GCNConvOptions {
  bool add_self_loops = true;  // PyG's add_remaining_self_loops: one loop per node, old loops dropped
  bool normalize = true;       // symmetric normalisation D^-1/2 (A + I) D^-1/2
  bool cached = false;         // keep the first graph's normalised structure for every call
  bool bias = true;
};

// out = D^-1/2 (A + I) D^-1/2 (x W^T) + b (torch_geometric.nn.GCNConv, without improved=True).
// lin.weight [out, in] is Glorot-uniform, bias [out] zero, as PyG initialises them.
class GCNConv : public GraphConv {
 public:
  GCNConv(int64_t in_channels, int64_t out_channels, GCNConvOptions options = {});
  // x [N, in] -> [N, out]; edge_weight [E] (the graph's CSC order) or undefined: 1. With
  // normalize and add_self_loops, weights are for the graph's edges and loops get 1. num_dst >= 0
  // keeps the first num_dst rows only (a sampled message-flow graph's destinations; the degrees
  // are the message-flow graph's).
  Tensor forward(const Graph& g, const Tensor& x, const Tensor& edge_weight = Tensor(), int64_t num_dst = -1);
  Tensor forward(const GraphBlock& block, const Tensor& x) override {
    return forward(block.graph, x, Tensor(), block.num_dst);
  }
  void reset_parameters();

  std::shared_ptr<Linear> lin;
  Tensor bias;

 private:
  GCNConvOptions options_;
  Graph cached_graph_;
  Tensor cached_norm_;
};

}  // namespace strata::nn
