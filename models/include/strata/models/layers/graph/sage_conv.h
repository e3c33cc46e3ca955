// SAGEConv: GraphSAGE's convolution with PyTorch Geometric's semantics and parameter names
// (lin_l.weight, lin_l.bias, lin_r.weight), so weights move between the two. Runs in its module
// scope, as a planner block when marked.
//
//   nn::SAGEConv conv(16, 32, {.aggr = "max"});
//   Tensor h = conv.forward(graph, x);  // [N, 16] -> [N, 32]
#pragma once

#include <memory>
#include <string>

#include "strata/models/layers/graph/graph_conv.h"
#include "strata/models/layers/linear.h"

namespace strata::nn {

struct SAGEConvOptions {
  std::string aggr = "mean";  // "mean", "sum", "max" or "min" (nodes without in-edges: 0)
  bool normalize = false;     // L2-normalise each output row
  bool root_weight = true;    // add lin_r(x)
  bool bias = true;           // lin_l's bias
};

// out = lin_l(aggr over in-neighbours u of x_u) + lin_r(x) (torch_geometric.nn.SAGEConv).
class SAGEConv : public GraphConv {
 public:
  SAGEConv(int64_t in_channels, int64_t out_channels, SAGEConvOptions options = {});
  // x [N, in] -> [N, out]; num_dst >= 0: the first num_dst rows only (a message-flow graph's
  // destinations), without transforming the other rows.
  Tensor forward(const Graph& g, const Tensor& x, int64_t num_dst = -1);
  Tensor forward(const GraphBlock& block, const Tensor& x) override {
    return forward(block.graph, x, block.num_dst);
  }

  std::shared_ptr<Linear> lin_l, lin_r;

 private:
  SAGEConvOptions options_;
};

}  // namespace strata::nn
