#include "strata/models/layers/graph/typed_node_input.h"

#include <set>

#include "strata/core/error.h"
#include "strata/ops/hetero_graph.h"

namespace strata::nn {

namespace {
// PyG's ModuleDict level ("emb.<type>"); never called.
class EmbeddingsByType final : public Module {};
}  // namespace

TypedNodeInput::TypedNodeInput(const std::vector<NodeType>& types, int64_t out_channels) : types_(types) {
  STRATA_CHECK(!types.empty(), ValueError, "TypedNodeInput: no node type");
  std::set<std::string> seen;
  std::vector<std::pair<std::string, int64_t>> with_features;
  std::shared_ptr<Module> group;
  for (const NodeType& t : types) {
    STRATA_CHECK(seen.insert(t.name).second, ValueError, "TypedNodeInput: node type '", t.name,
                 "' is given twice");
    STRATA_CHECK(t.width >= 0 && t.nodes >= 1, ValueError, "TypedNodeInput: node type '", t.name, "' has ",
                 t.nodes, " nodes of width ", t.width, "; a type needs a node and a width of 0 or more");
    if (t.width > 0) {
      with_features.emplace_back(t.name, t.width);
      continue;
    }
    if (!group) group = register_module("emb", std::make_shared<EmbeddingsByType>());
    emb[t.name] = group->register_module(t.name, std::make_shared<Embedding>(t.nodes, out_channels));
  }
  if (!with_features.empty())
    proj = register_module("proj", std::make_shared<HeteroDictLinear>(with_features, out_channels));
}

Tensor TypedNodeInput::forward(const Graph& g, const std::map<std::string, Tensor>& x) {
  for (const auto& [type, rows] : x)
    STRATA_CHECK(
        proj && proj->lins.count(type), ValueError, "TypedNodeInput: features given for node type '", type,
        "', ",
        emb.count(type) ? "which has no width (it learns a row per node)" : "which is not one of its types");
  std::map<std::string, Tensor> h;
  if (proj) {
    for (const auto& [type, lin] : proj->lins)
      STRATA_CHECK(x.count(type), ValueError, "TypedNodeInput: no features for node type '", type,
                   "' (width ", lin->weight.size(1), ")");
    h = proj->forward(x);
  }
  for (const auto& [type, e] : emb) h[type] = e->weight;
  return cat_node_features(g, h);
}

}  // namespace strata::nn
