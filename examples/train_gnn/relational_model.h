// Relational layers behind one signature (rgcn, rgat), for models that stack them with other
// modules (kg_model.h's link-prediction encoder). Entity classification stacks its layers in
// models::GNN (conv "rgcn", "rgat", "hgt").
//
//   RelationalLayer layer = make_relational_layer("rgcn", 128, 64, g.num_relations(), {});
//   Tensor h = layer.forward(g, x);  // [N, 64]
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "strata/models/layers/graph/materialization.h"
#include "strata/nn/module.h"
#include "strata/ops/graph.h"

namespace strata::examples {

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
// PyG's; "rgat": nn::RGATConv). A new kind is one branch here.
RelationalLayer make_relational_layer(const std::string& kind, int64_t in_channels, int64_t out_channels,
                                      int64_t num_relations, const RelationalLayerOptions& options);

}  // namespace strata::examples
