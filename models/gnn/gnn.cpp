#include "strata/models/gnn.h"

#include <optional>

#include "strata/core/error.h"
#include "strata/models/layers/graph/gat_conv.h"
#include "strata/models/layers/graph/gcn_conv.h"
#include "strata/models/layers/graph/hgt_conv.h"
#include "strata/models/layers/graph/rgat_conv.h"
#include "strata/models/layers/graph/rgcn_conv.h"
#include "strata/models/layers/graph/sage_conv.h"
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
  STRATA_CHECK(!typed_input() || (relational() && type_in_channels.size() == node_types.size() &&
                                  type_num_nodes.size() == node_types.size()),
               ValueError, "GNN: a typed input (", type_in_channels.size(), " widths, ",
               type_num_nodes.size(),
               " node counts) needs a relational conv and one width and count per node type (",
               node_types.size(), ")");
  STRATA_CHECK(dropout >= 0 && dropout < 1 && attention_dropout >= 0 && attention_dropout < 1, ValueError,
               "GNN: dropout ", dropout, " and attention_dropout ", attention_dropout, " must be in [0, 1)");
}

namespace {

// Layer `in` -> `out` of a relational GNN (rgat's hidden layers: heads concatenated).
std::shared_ptr<nn::GraphConv> relational_conv(const GNNConfig& c, int64_t in, int64_t out, bool last) {
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

GNN::GNN(const GNNConfig& config) : config_(config), elu_(config.conv == "gat") {
  config.validate();
  if (config.typed_input()) {
    std::vector<nn::TypedNodeInput::NodeType> types;
    for (size_t t = 0; t < config.node_types.size(); ++t)
      types.push_back({config.node_types[t], config.type_num_nodes[t], config.type_in_channels[t]});
    input = register_module("input", std::make_shared<nn::TypedNodeInput>(types, config.in_channels));
  }
  convs = register_module("convs", std::make_shared<nn::ModuleList>());
  int64_t in = config.in_channels;
  for (int64_t l = 0; l < config.num_layers; ++l) {
    const bool last = l + 1 == config.num_layers;
    const int64_t out = last ? config.num_classes : config.hidden_channels;
    std::shared_ptr<nn::GraphConv> conv;
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
    layers_.push_back(conv);
  }
}

Tensor GNN::layer(size_t l, const nn::GraphBlock& block, const Tensor& x) {
  // Dropout, the conv and the activation run in the conv's scope: one block, so the cache moves
  // (or recomputes) everything the layer saves.
  nn::GraphConv* conv = layers_[l].get();
  const bool last = l + 1 == layers_.size();
  auto run = [this, conv, block, last](const std::vector<Tensor>& in) {
    Tensor h = ops::dropout(in[0], config_.dropout, is_training() && config_.dropout > 0);
    h = conv->forward(block, h);
    if (last) return h;
    if (!elu_) return ops::relu(h);
    // ELU: x for x > 0, exp(x) - 1 otherwise (exp of the clamped value: no overflow in either branch).
    return ops::where(ops::gt(h, 0.0), h, ops::add(ops::exp(ops::clamp(h, -1e300, 0.0)), -1.0));
  };
  return conv->call_with(run, {x});
}

Tensor GNN::forward(const Graph& g, const Tensor& x) {
  STRATA_CHECK(!input, ValueError, "GNN: this model takes its features per node type (it has a typed input)");
  nn::ModuleScope scope(*this);
  return layers_on(g, x);
}

Tensor GNN::forward(const Graph& g, const std::map<std::string, Tensor>& x) {
  STRATA_CHECK(input, ValueError,
               "GNN: features per node type need a typed input (GNNConfig::type_in_channels)");
  nn::ModuleScope scope(*this);
  Tensor h;
  {
    nn::ModuleScope input_scope(*input);
    h = input->forward(g, x);
  }
  return layers_on(g, h);
}

Tensor GNN::layers_on(const Graph& g, Tensor h) {
  for (size_t l = 0; l < layers_.size(); ++l) h = layer(l, g, h);
  return h;
}

std::vector<std::string> GNN::plans(const Graph& g) const {
  std::vector<std::string> out;
  if (config_.relational())
    for (const auto& conv : layers_) out.push_back(conv->plan(g).str());
  return out;
}

Tensor GNN::forward(const std::vector<nn::GraphBlock>& blocks, const Tensor& x) {
  nn::ModuleScope scope(*this);
  STRATA_CHECK(!config_.relational(), NotImplementedError, "GNN: ", config_.conv,
               " on sampled message-flow graphs (the relational convs run on the whole graph)");
  STRATA_CHECK(blocks.size() == layers_.size(), ValueError, "GNN: ", blocks.size(), " blocks for ",
               layers_.size(), " layers");
  Tensor h = x;
  for (size_t l = 0; l < layers_.size(); ++l) {
    STRATA_CHECK(h.size(0) == blocks[l].graph.num_nodes(), ShapeError, "GNN: layer ", l, " gets ", h.size(0),
                 " rows for a graph of ", blocks[l].graph.num_nodes(), " nodes");
    h = layer(l, blocks[l], h);
  }
  return h;
}

}  // namespace strata::models
