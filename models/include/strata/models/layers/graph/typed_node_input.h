// TypedNodeInput: the node types of a typed graph brought to one width in the graph's global rows,
// as PyG's heterogeneous examples do before their first relational layer: a Linear per type that
// has features (a HeteroDictLinear, proj.lins.<type>) and a learned row per node for a type without
// (emb.<type>.weight [nodes, width], N(0, 1) as nn.Embedding; ogbn-mag's authors, fields and
// institutions have no features).
//
//   nn::TypedNodeInput input({{"paper", 6, 128}, {"author", 5, 0}}, 64);
//   Tensor h = input.forward(g, {{"paper", x_paper}});  // [11, 64]: papers projected, authors learned
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "strata/models/layers/embedding.h"
#include "strata/models/layers/graph/hetero_dict_linear.h"
#include "strata/nn/module.h"
#include "strata/ops/graph.h"

namespace strata::nn {

class TypedNodeInput : public Module {
 public:
  struct NodeType {
    std::string name;
    int64_t nodes = 0;
    int64_t width = 0;  // features per node; 0: none (the type learns a row per node)
  };
  // ValueError naming a type given twice, a negative width or a count below one.
  TypedNodeInput(const std::vector<NodeType>& types, int64_t out_channels);
  // x: the features of every type with a width, [nodes, width] each -> [N, out] in g's global
  // order. ValueError naming a type whose features are missing or not expected; ShapeError (the
  // Linear's or cat_node_features') for a width or count that differs.
  Tensor forward(const Graph& g, const std::map<std::string, Tensor>& x);
  const std::vector<NodeType>& node_types() const { return types_; }

  std::shared_ptr<HeteroDictLinear> proj;                 // null when no type has features
  std::map<std::string, std::shared_ptr<Embedding>> emb;  // the types without features

 private:
  std::vector<NodeType> types_;
};

}  // namespace strata::nn
