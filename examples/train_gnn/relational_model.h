// Relational layers behind one signature (rgcn, rgat) and RelationalClassifier, the entity
// classifier train_gnn stacks from them on a typed graph.
//
//   RelationalClassifier model({.conv = "rgcn", .in_channels = 128, .num_classes = 16,
//                               .num_relations = g.num_relations()});
//   for (const nn::MaterializationPlan& p : model.plans(g)) std::puts(p.str().c_str());
//   Tensor logits = model.forward(g, x);  // [N, 16]
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "strata/models/layers/container.h"
#include "strata/models/layers/materialization.h"
#include "strata/nn/module.h"
#include "strata/ops/graph.h"

namespace strata::examples {

// The relational kinds make_relational_layer builds, as --model spells them.
bool is_relational_kind(const std::string& kind);

struct RelationalLayerOptions {
  int64_t num_bases = 0;  // rgcn: W_r from this many shared bases (0: a matrix per relation)
  int64_t heads = 1;      // rgat
  bool concat = true;     // rgat: heads side by side [N, heads * out], else averaged [N, out]
  nn::Materialization materialization = nn::Materialization::kAuto;
  std::optional<bool> reorder;  // rgat: nullopt chooses by the layer's estimate
};

// One relational convolution: forward maps x [N, in] on every node of a graph of num_relations
// relations to [N, out] ([N, heads * out] for rgat with concat); plan says how it will compute
// on a graph. The closures hold the module by a plain pointer, so they can run inside a planner
// block (Module::call_with) and again in backward.
struct RelationalLayer {
  std::shared_ptr<nn::Module> module;
  std::function<Tensor(const Graph&, const Tensor&)> forward;
  std::function<nn::MaterializationPlan(const Graph&)> plan;
};

// The layer `kind` names ("rgcn": nn::RGCNConv with mean aggregation, root weight and bias, as
// PyG's; "rgat": nn::RGATConv). A new kind is one branch here; one whose inputs are per node
// type (a heterogeneous graph transformer) splits x at the graph's type offsets in its forward
// and concatenates its outputs, so the models above keep their [N, F] signature.
RelationalLayer make_relational_layer(const std::string& kind, int64_t in_channels, int64_t out_channels,
                                      int64_t num_relations, const RelationalLayerOptions& options);

struct RelationalClassifierConfig {
  std::string conv = "rgcn";  // a kind of make_relational_layer
  int64_t in_channels = 0;
  int64_t hidden_channels = 64;  // rgat: per head
  int64_t num_classes = 0;
  int64_t num_layers = 2;
  int64_t num_relations = 0;
  int64_t heads = 8;     // rgat's hidden layers (concatenated); its last layer has one head
  double dropout = 0.5;  // on every hidden layer's output while training
  int64_t num_bases = 0;
  nn::Materialization materialization = nn::Materialization::kAuto;
  std::optional<bool> reorder;
  // Throws ValueError naming the field that is out of range.
  void validate() const;
};

// Stacked relational convolutions (convs.0, convs.1, ...), ReLU and dropout between them, the last
// producing class logits (PyG's examples/rgcn.py entity classifier). Each layer with its ReLU and
// dropout is a planner block, as in models::GNN.
class RelationalClassifier : public nn::Module {
 public:
  explicit RelationalClassifier(const RelationalClassifierConfig& config);
  // x [N, in_channels] on every node of g -> logits [N, num_classes].
  Tensor forward(const Graph& g, const Tensor& x);
  // Each layer's plan on g, in layer order.
  std::vector<nn::MaterializationPlan> plans(const Graph& g) const;
  const RelationalClassifierConfig& config() const { return config_; }

  std::shared_ptr<nn::ModuleList> convs;

 private:
  RelationalClassifierConfig config_;
  std::vector<RelationalLayer> layers_;
};

}  // namespace strata::examples
