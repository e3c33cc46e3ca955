// GNN: a node classifier of stacked GCNConv, SAGEConv or GATConv layers, named as PyTorch
// Geometric's basic models name theirs (convs.0, convs.1, ...), each layer (its input dropout,
// the conv, its activation) a planner block. It
// runs on the whole graph or on sampled message-flow graphs (one per layer, input layer first).
//
//   models::GNN model({.conv = "gat", .in_channels = 128, .hidden_channels = 8, .num_classes = 4});
//   Tensor logits = model.forward(graph, features);    // [N, num_classes]
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "strata/models/layers/container.h"
#include "strata/nn/module.h"
#include "strata/ops/graph.h"

namespace strata::models {

struct GNNConfig {
  std::string conv = "sage";  // "gcn", "sage" or "gat"
  int64_t in_channels = 0;
  int64_t hidden_channels = 64;  // gat: per head
  int64_t num_classes = 0;
  int64_t num_layers = 2;
  int64_t heads = 8;               // gat's hidden layers (concatenated); the last layer has one head
  std::string aggr = "mean";       // sage: mean, sum, max, min
  double dropout = 0.5;            // on every layer's input features while training
  double attention_dropout = 0.0;  // gat: on the attention coefficients
  // Throws ValueError naming the field that is out of range.
  void validate() const;
};

class GNN : public nn::Module {
 public:
  explicit GNN(const GNNConfig& config);
  // Every layer on the whole graph: x [N, in_channels] -> logits [N, num_classes]. Between
  // layers: ReLU (gcn, sage) or ELU (gat), as PyG's examples do.
  Tensor forward(const Graph& g, const Tensor& x);
  // Layer l on graphs[l], producing rows for its first num_dst[l] nodes (the next layer's nodes):
  // x [graphs[0] nodes, in] -> [num_dst.back(), num_classes].
  Tensor forward(const std::vector<Graph>& graphs, const std::vector<int64_t>& num_dst, const Tensor& x);
  const GNNConfig& config() const { return config_; }

  std::shared_ptr<nn::ModuleList> convs;

 private:
  Tensor layer(size_t l, const Graph& g, const Tensor& x, int64_t num_dst);
  GNNConfig config_;
};

}  // namespace strata::models
