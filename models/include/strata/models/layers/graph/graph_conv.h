// GraphConv: what every graph convolution is to a model: forward on a graph block (a whole graph,
// or a message-flow block whose first num_dst nodes are its destinations) and the plan of what
// forward does on a graph. GCNConv, SAGEConv, GATConv, RGCNConv, RGATConv and HGTConv are ones.
//
//   std::shared_ptr<nn::GraphConv> conv = std::make_shared<nn::SAGEConv>(16, 32);
//   Tensor h = conv->forward({block, num_dst}, x);  // [block nodes, 16] -> [num_dst, 32]
#pragma once

#include <cstdint>

#include "strata/models/layers/graph/materialization.h"
#include "strata/nn/module.h"
#include "strata/ops/graph.h"

namespace strata::nn {

// A graph a layer runs on: the whole graph (num_dst < 0: every node gets an output row), or a
// sampled message-flow block whose first num_dst nodes are its destinations (the next layer's nodes).
struct GraphBlock {
  GraphBlock(const Graph& graph) : graph(graph) {}  // NOLINT: a whole graph is a block
  GraphBlock(const Graph& graph, int64_t num_dst) : graph(graph), num_dst(num_dst) {}
  Graph graph;
  int64_t num_dst = -1;
  // The rows a layer's output has: num_dst, or every node of the graph.
  int64_t destinations() const { return num_dst < 0 ? graph.num_nodes() : num_dst; }
};

class GraphConv : public Module {
 public:
  // x [block.graph nodes, in] -> [block.destinations(), out], in the layer's module scope.
  virtual Tensor forward(const GraphBlock& block, const Tensor& x) = 0;
  // What forward does on g. Layers that choose how to materialize messages (the relational ones)
  // say their choice and its cost estimates; the others give g's counts with no strategy offered.
  virtual MaterializationPlan plan(const Graph& g) const;
};

// block.graph when the block is the whole graph; else NotImplementedError naming `layer` (the
// relational layers run on whole graphs).
const Graph& whole_graph(const GraphBlock& block, const char* layer);

// The first num_dst rows of x (all of them for num_dst < 0): a message-flow block's destinations.
Tensor first_rows(const Tensor& x, int64_t num_dst);

}  // namespace strata::nn
