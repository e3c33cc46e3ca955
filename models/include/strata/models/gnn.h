// GNN: a node classifier of stacked GCNConv, SAGEConv, GATConv or, on typed graphs, RGCNConv,
// RGATConv or HGTConv layers, named as PyTorch Geometric's basic models name theirs (convs.0,
// convs.1, ...), each layer (its input dropout, the conv, its activation) a planner block. It
// runs on the whole graph or on sampled message-flow graphs (one per layer, input layer first;
// the homogeneous convs only). On a typed graph whose node types differ in feature width, or
// where some have none, a typed input brings them to one width first (GNNConfig::type_in_channels).
//
//   models::GNN model({.conv = "gat", .in_channels = 128, .hidden_channels = 8, .num_classes = 4});
//   Tensor logits = model.forward(graph, features);    // [N, num_classes]
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "strata/models/layers/container.h"
#include "strata/models/layers/graph/graph_conv.h"
#include "strata/models/layers/graph/typed_node_input.h"

namespace strata::models {

struct GNNConfig {
  std::string conv = "sage";  // "gcn", "sage", "gat", or relational: "rgcn", "rgat", "hgt"
  int64_t in_channels = 0;
  int64_t hidden_channels = 64;  // gat: per head
  int64_t num_classes = 0;
  int64_t num_layers = 2;
  int64_t heads = 8;               // gat's hidden layers (concatenated); the last layer has one head
  std::string aggr = "mean";       // sage: mean, sum, max, min
  double dropout = 0.5;            // on every layer's input features while training
  double attention_dropout = 0.0;  // gat: on the attention coefficients
  // Relational convs: the graph's node types and relations (rgcn and rgat use their count), RGCN's
  // bases (0: none), and each layer's materialization ("auto", "edge", "compact",
  // "aggregate_first") and reordering ("auto", "on", "off").
  std::vector<std::string> node_types{};
  std::vector<Relation> relations{};
  int64_t num_bases = 0;
  std::string materialization = "auto";
  std::string reorder = "auto";
  // Typed input (relational convs): each node type's feature width (0: the type has none) and node
  // count, in node_types' order. Given, the model starts with an nn::TypedNodeInput ("input") that
  // brings every type to in_channels (a Linear per type with features, a learned row per node for a
  // type without), and forward takes the features per type.
  std::vector<int64_t> type_in_channels{}, type_num_nodes{};
  bool typed_input() const { return !type_in_channels.empty(); }
  bool relational() const { return conv == "rgcn" || conv == "rgat" || conv == "hgt"; }
  // Throws ValueError naming the field that is out of range.
  void validate() const;
};

class GNN : public nn::Module {
 public:
  explicit GNN(const GNNConfig& config);
  // Every layer on the whole graph: x [N, in_channels] -> logits [N, num_classes]. Between
  // layers: ReLU (gcn, sage, the relational convs) or ELU (gat), as PyG's examples do.
  Tensor forward(const Graph& g, const Tensor& x);
  // With a typed input: the features of every node type with a width ([nodes, width] each), through
  // `input` to in_channels, then the layers.
  Tensor forward(const Graph& g, const std::map<std::string, Tensor>& x);
  // Layer l on blocks[l], producing rows for its destinations (the next block's nodes):
  // x [blocks[0] nodes, in] -> [blocks.back().destinations(), num_classes].
  Tensor forward(const std::vector<nn::GraphBlock>& blocks, const Tensor& x);
  const GNNConfig& config() const { return config_; }
  // Each relational layer's plan on g, one line per layer (empty for the homogeneous convs).
  std::vector<std::string> plans(const Graph& g) const;

  std::shared_ptr<nn::TypedNodeInput> input;  // with a typed input only
  std::shared_ptr<nn::ModuleList> convs;      // the layers, as registered (convs.0, convs.1, ...)

 private:
  Tensor layer(size_t l, const nn::GraphBlock& block, const Tensor& x);
  Tensor layers_on(const Graph& g, Tensor h);  // every layer on the whole graph
  GNNConfig config_;
  std::vector<std::shared_ptr<nn::GraphConv>> layers_;  // convs' modules, as graph layers
  bool elu_ = false;                                    // between layers: ELU (gat), else ReLU
};

}  // namespace strata::models
