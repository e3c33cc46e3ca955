// HeteroDictLinear: one Linear per node type, for node types of different feature widths, with
// PyTorch Geometric's parameter names (lins.<type>.weight, lins.<type>.bias).
//
//   nn::HeteroDictLinear proj({{"author", 5}, {"paper", 7}}, 16);
//   Tensor x = proj.forward(g, {{"author", x_author}, {"paper", x_paper}});  // [N, 16], global rows
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "strata/models/layers/linear.h"
#include "strata/nn/module.h"
#include "strata/ops/graph.h"

namespace strata::nn {

class HeteroDictLinear : public Module {
 public:
  // `in_channels`: each node type and its feature width.
  HeteroDictLinear(const std::vector<std::pair<std::string, int64_t>>& in_channels, int64_t out_channels,
                   bool bias = true);
  // Each type's rows through its Linear: [n_t, in_t] -> [n_t, out]; ValueError naming a type the
  // layer has no Linear for, ShapeError (Linear's) for a width that differs from in_t.
  std::map<std::string, Tensor> forward(const std::map<std::string, Tensor>& x);
  // The same, then the rows in g's global order (cat_node_features): [N, out], ready for a
  // relational layer.
  Tensor forward(const Graph& g, const std::map<std::string, Tensor>& x);

  std::map<std::string, std::shared_ptr<Linear>> lins;

 private:
  int64_t out_;
};

}  // namespace strata::nn
