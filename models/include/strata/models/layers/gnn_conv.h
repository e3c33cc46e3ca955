// Graph convolutions with PyTorch Geometric's semantics and parameter names, so weights move
// between the two: GCNConv (lin.weight, bias) and SAGEConv (lin_l.weight, lin_l.bias,
// lin_r.weight). Each runs in its module scope, as a planner block when marked.
//
//   nn::GCNConv conv(16, 32);
//   Tensor h = conv.call(&nn::GCNConv::forward, graph, x, Tensor(), int64_t(-1));  // [N, 16] -> [N, 32]
#pragma once

#include <memory>
#include <string>

#include "strata/models/layers/linear.h"
#include "strata/nn/module.h"
#include "strata/ops/graph.h"

namespace strata::nn {

// The first num_dst rows of x (all of them for num_dst < 0): a message-flow graph's destinations.
Tensor first_rows(const Tensor& x, int64_t num_dst);

struct GCNConvOptions {
  bool add_self_loops = true;  // PyG's add_remaining_self_loops: one loop per node, old loops dropped
  bool normalize = true;       // symmetric normalisation D^-1/2 (A + I) D^-1/2
  bool cached = false;         // keep the first graph's normalised structure for every call
  bool bias = true;
};

// out = D^-1/2 (A + I) D^-1/2 (x W^T) + b (torch_geometric.nn.GCNConv, without improved=True).
// lin.weight [out, in] is Glorot-uniform, bias [out] zero, as PyG initialises them.
class GCNConv : public Module {
 public:
  GCNConv(int64_t in_channels, int64_t out_channels, GCNConvOptions options = {});
  // x [N, in] -> [N, out]; edge_weight [E] (the graph's CSC order) or undefined: 1. With
  // normalize and add_self_loops, weights are for the graph's edges and loops get 1. num_dst >= 0
  // keeps the first num_dst rows only (a sampled message-flow graph's destinations; the degrees
  // are the message-flow graph's).
  Tensor forward(const Graph& g, const Tensor& x, const Tensor& edge_weight = Tensor(), int64_t num_dst = -1);
  void reset_parameters();

  std::shared_ptr<Linear> lin;
  Tensor bias;

 private:
  GCNConvOptions options_;
  Graph cached_graph_;
  Tensor cached_norm_;
};

struct SAGEConvOptions {
  std::string aggr = "mean";  // "mean", "sum", "max" or "min" (nodes without in-edges: 0)
  bool normalize = false;     // L2-normalise each output row
  bool root_weight = true;    // add lin_r(x)
  bool bias = true;           // lin_l's bias
};

// out = lin_l(aggr over in-neighbours u of x_u) + lin_r(x) (torch_geometric.nn.SAGEConv).
class SAGEConv : public Module {
 public:
  SAGEConv(int64_t in_channels, int64_t out_channels, SAGEConvOptions options = {});
  // x [N, in] -> [N, out]; num_dst >= 0: the first num_dst rows only (a message-flow graph's
  // destinations), without transforming the other rows.
  Tensor forward(const Graph& g, const Tensor& x, int64_t num_dst = -1);

  std::shared_ptr<Linear> lin_l, lin_r;

 private:
  SAGEConvOptions options_;
};

}  // namespace strata::nn
