#include "strata/models/gnn.h"

#include <optional>

#include "strata/core/error.h"
#include "strata/models/layers/gat_conv.h"
#include "strata/models/layers/gnn_conv.h"
#include "strata/models/layers/hgt_conv.h"
#include "strata/models/layers/rgat_conv.h"
#include "strata/models/layers/rgcn_conv.h"
#include "strata/ops/elementwise.h"
#include "strata/ops/nn.h"

namespace strata::models {

void GNNConfig::validate() const {
  STRATA_CHECK(conv == "gcn" || conv == "sage" || conv == "gat" || relational(), ValueError, "GNN: conv '",
               conv, "' is not one of gcn, sage, gat, rgcn, rgat, hgt");
  STRATA_CHECK(!relational() || (!relations.empty() && !node_types.empty()), ValueError, "GNN: conv '", conv,
               "' needs the graph's node types and relations");
  STRATA_CHECK(conv != "hgt" || (hidden_channels % heads == 0), ValueError, "GNN: hgt's heads ", heads,
               " must divide hidden_channels ", hidden_channels);
  nn::materialization_from_name(materialization);  // throws ValueError on a bad name
  STRATA_CHECK(reorder == "auto" || reorder == "on" || reorder == "off", ValueError, "GNN: reorder '",
               reorder, "' is not one of auto, on, off");
  STRATA_CHECK(in_channels > 0 && hidden_channels > 0 && num_classes > 0, ValueError, "GNN: in_channels ",
               in_channels, ", hidden_channels ", hidden_channels, " and num_classes ", num_classes,
               " must be positive");
  STRATA_CHECK(num_layers >= 1, ValueError, "GNN: num_layers ", num_layers, " must be at least 1");
  STRATA_CHECK(heads >= 1, ValueError, "GNN: heads ", heads, " must be at least 1");
  STRATA_CHECK(dropout >= 0 && dropout < 1 && attention_dropout >= 0 && attention_dropout < 1, ValueError,
               "GNN: dropout ", dropout, " and attention_dropout ", attention_dropout, " must be in [0, 1)");
}

namespace {

// Layer `in` -> `out` of a relational GNN (rgat's hidden layers: heads concatenated).
std::shared_ptr<nn::Module> relational_conv(const GNNConfig& c, int64_t in, int64_t out, bool last) {
  const nn::Materialization m = nn::materialization_from_name(c.materialization);
  const std::optional<bool> reorder =
      c.reorder == "auto" ? std::nullopt : std::optional<bool>(c.reorder == "on");
  const int64_t R = int64_t(c.relations.size());
  if (c.conv == "rgcn") {
    auto conv = std::make_shared<nn::RGCNConv>(in, out, R, nn::RGCNConvOptions{.num_bases = c.num_bases});
    conv->set_materialization(m);
    return conv;
  }
  if (c.conv == "rgat") {
    auto conv = std::make_shared<nn::RGATConv>(in, out, R, nn::RGATConvOptions{.heads = last ? 1 : c.heads});
    conv->set_materialization(m);
    conv->set_reorder(reorder);
    return conv;
  }
  auto conv = std::make_shared<nn::HGTConv>(in, out, c.node_types, c.relations,
                                            nn::HGTConvOptions{.heads = last ? 1 : c.heads});
  conv->set_materialization(m);
  conv->set_reorder(reorder);
  return conv;
}

}  // namespace

GNN::GNN(const GNNConfig& config) : config_(config) {
  config.validate();
  convs = register_module("convs", std::make_shared<nn::ModuleList>());
  int64_t in = config.in_channels;
  for (int64_t l = 0; l < config.num_layers; ++l) {
    const bool last = l + 1 == config.num_layers;
    const int64_t out = last ? config.num_classes : config.hidden_channels;
    std::shared_ptr<nn::Module> conv;
    if (config.conv == "gcn") {
      conv = std::make_shared<nn::GCNConv>(in, out);
      in = out;
    } else if (config.conv == "sage") {
      conv = std::make_shared<nn::SAGEConv>(in, out, nn::SAGEConvOptions{.aggr = config.aggr});
      in = out;
    } else if (config.relational()) {
      conv = relational_conv(config, in, out, last);
      in = config.conv == "rgat" && !last ? out * config.heads : out;
    } else {
      nn::GATConvOptions o;
      o.heads = last ? 1 : config.heads;
      o.concat = !last;
      o.dropout = config.attention_dropout;
      conv = std::make_shared<nn::GATConv>(in, out, o);
      in = last ? out : out * config.heads;
    }
    conv->mark_as_block();
    convs->push_back(conv);
  }
}

Tensor GNN::layer(size_t l, const Graph& g, const Tensor& x, int64_t num_dst) {
  // Dropout, the conv and the activation run in the conv's scope: one block, so the cache moves
  // (or recomputes) everything the layer saves.
  nn::Module* m = (*convs)[l].get();
  const bool last = l + 1 == convs->size();
  auto run = [this, m, g, num_dst, last](const std::vector<Tensor>& in) {
    Tensor h = ops::dropout(in[0], config_.dropout, is_training() && config_.dropout > 0);
    if (config_.conv == "gcn")
      h = static_cast<nn::GCNConv*>(m)->forward(g, h, Tensor(), num_dst);
    else if (config_.conv == "sage")
      h = static_cast<nn::SAGEConv*>(m)->forward(g, h, num_dst);
    else if (config_.conv == "rgcn")
      h = static_cast<nn::RGCNConv*>(m)->forward(g, h);
    else if (config_.conv == "rgat")
      h = static_cast<nn::RGATConv*>(m)->forward(g, h);
    else if (config_.conv == "hgt")
      h = static_cast<nn::HGTConv*>(m)->forward(g, h);
    else
      h = static_cast<nn::GATConv*>(m)->forward(g, h, Tensor(), num_dst);
    if (last) return h;
    if (config_.conv != "gat") return ops::relu(h);
    // ELU: x for x > 0, exp(x) - 1 otherwise (exp of the clamped value: no overflow in either branch).
    return ops::where(ops::gt(h, 0.0), h, ops::add(ops::exp(ops::clamp(h, -1e300, 0.0)), -1.0));
  };
  return m->call_with(run, {x});
}

Tensor GNN::forward(const Graph& g, const Tensor& x) {
  nn::ModuleScope scope(*this);
  Tensor h = x;
  for (size_t l = 0; l < convs->size(); ++l) h = layer(l, g, h, -1);
  return h;
}

std::vector<std::string> GNN::plans(const Graph& g) const {
  std::vector<std::string> out;
  for (size_t l = 0; l < convs->size(); ++l) {
    const nn::Module* m = (*convs)[l].get();
    if (auto* c = dynamic_cast<const nn::RGCNConv*>(m)) out.push_back(c->plan(g).str());
    if (auto* c = dynamic_cast<const nn::RGATConv*>(m)) out.push_back(c->plan(g).str());
    if (auto* c = dynamic_cast<const nn::HGTConv*>(m)) out.push_back(c->plan(g).str());
  }
  return out;
}

Tensor GNN::forward(const std::vector<Graph>& graphs, const std::vector<int64_t>& num_dst, const Tensor& x) {
  nn::ModuleScope scope(*this);
  STRATA_CHECK(!config_.relational(), NotImplementedError, "GNN: ", config_.conv,
               " on sampled message-flow graphs (the relational convs run on the whole graph)");
  STRATA_CHECK(graphs.size() == convs->size() && num_dst.size() == graphs.size(), ValueError,
               "GNN: ", graphs.size(), " graphs and ", num_dst.size(), " destination counts for ",
               convs->size(), " layers");
  Tensor h = x;
  for (size_t l = 0; l < convs->size(); ++l) {
    STRATA_CHECK(h.size(0) == graphs[l].num_nodes(), ShapeError, "GNN: layer ", l, " gets ", h.size(0),
                 " rows for a graph of ", graphs[l].num_nodes(), " nodes");
    h = layer(l, graphs[l], h, num_dst[l]);
  }
  return h;
}

}  // namespace strata::models
