#include "strata/models/layers/graph/hetero_dict_linear.h"

#include "strata/core/error.h"
#include "strata/ops/hetero_graph.h"

namespace strata::nn {

namespace {
// PyG's ModuleDict level ("lins.<type>"); never called.
class LinearsByType final : public Module {};
}  // namespace

HeteroDictLinear::HeteroDictLinear(const std::vector<std::pair<std::string, int64_t>>& in_channels,
                                   int64_t out_channels, bool bias)
    : out_(out_channels) {
  STRATA_CHECK(!in_channels.empty(), ValueError, "HeteroDictLinear: no node type");
  auto group = register_module("lins", std::make_shared<LinearsByType>());
  for (const auto& [type, width] : in_channels) {
    STRATA_CHECK(!lins.count(type), ValueError, "HeteroDictLinear: node type '", type, "' is given twice");
    lins[type] =
        group->register_module(type, std::make_shared<Linear>(LinearOptions(width, out_channels).bias(bias)));
  }
}

std::map<std::string, Tensor> HeteroDictLinear::forward(const std::map<std::string, Tensor>& x) {
  std::map<std::string, Tensor> out;
  for (const auto& [type, rows] : x) {
    auto it = lins.find(type);
    STRATA_CHECK(it != lins.end(), ValueError, "HeteroDictLinear: no Linear for node type '", type, "'");
    out[type] = it->second->forward(rows);
  }
  return out;
}

Tensor HeteroDictLinear::forward(const Graph& g, const std::map<std::string, Tensor>& x) {
  return cat_node_features(g, forward(x));
}

}  // namespace strata::nn
