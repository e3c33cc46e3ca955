// RGCNConv: the relational graph convolution (Schlichtkrull et al.) with PyTorch Geometric's
// semantics and parameter names (weight, comp, root, bias), computed edge-wise, compactly or
// aggregate-first (strata/models/layers/graph/materialization.h), every way giving the same result.
//
//   nn::RGCNConv conv(16, 32, g.num_relations(), {.num_bases = 4});
//   Tensor h = conv.forward(g, x);  // [N, 16] -> [N, 32]
#pragma once

#include <cstdint>
#include <string>

#include "strata/models/layers/graph/graph_conv.h"
#include "strata/models/layers/graph/materialization.h"
#include "strata/ops/graph.h"

namespace strata::nn {

struct RGCNConvOptions {
  int64_t num_bases = 0;      // W_r = sum_b comp[r, b] weight[b] (0: a matrix per relation)
  int64_t num_blocks = 0;     // W_r block-diagonal with this many blocks (0: dense)
  std::string aggr = "mean";  // "mean" (per destination and relation) or "add"
  bool root_weight = true;    // add x @ root
  bool bias = true;
};

// out_v = x_v root + bias + sum_r aggr_{u in N_r(v)} x_u W_r (torch_geometric.nn.RGCNConv). Shapes:
// weight [R, in, out] ([B, in, out] with bases, [R, blocks, in / blocks, out / blocks] with
// blocks), comp [R, B], root [in, out], bias [out]; Glorot-uniform weights and a zero bias, as PyG.
// Row r of weight (of comp) belongs to the graph's relation r: for a graph from hetero_graph, the
// r-th edge type given, which matches PyG's edge_type r when they are given in HeteroData.edge_types'
// order (strata/ops/hetero_graph.h).
class RGCNConv : public GraphConv {
 public:
  RGCNConv(int64_t in_channels, int64_t out_channels, int64_t num_relations, RGCNConvOptions options = {});
  // x [N, in] -> [N, out] on a graph of num_relations relations (relation r's edges use W_r).
  Tensor forward(const Graph& g, const Tensor& x);
  // The whole graph only: a block with destinations of its own is NotImplementedError.
  Tensor forward(const GraphBlock& block, const Tensor& x) override {
    return forward(whole_graph(block, "RGCNConv"), x);
  }
  // What forward does on g: the strategy (the cheapest by its estimate unless overridden) and the
  // estimates behind it.
  MaterializationPlan plan(const Graph& g) const override;
  void set_materialization(Materialization m) { materialization_ = m; }
  // W_r for every relation, [R, in, out] (from the bases or blocks; differentiable).
  Tensor relation_weights() const;
  void reset_parameters();

  Tensor weight, comp, root, bias;

 private:
  int64_t in_, out_, relations_;
  RGCNConvOptions options_;
  Materialization materialization_ = Materialization::kAuto;
};

}  // namespace strata::nn
