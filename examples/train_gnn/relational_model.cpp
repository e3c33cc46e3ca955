// Relational layers behind one signature, and the relational entity classifier stacked from them.
#include "examples/train_gnn/relational_model.h"

#include "strata/core/error.h"
#include "strata/models/layers/rgat_conv.h"
#include "strata/models/layers/rgcn_conv.h"
#include "strata/ops/elementwise.h"
#include "strata/ops/nn.h"

namespace strata::examples {

bool is_relational_kind(const std::string& kind) { return kind == "rgcn" || kind == "rgat"; }

RelationalLayer make_relational_layer(const std::string& kind, int64_t in_channels, int64_t out_channels,
                                      int64_t num_relations, const RelationalLayerOptions& options) {
  if (kind == "rgcn") {
    auto conv = std::make_shared<nn::RGCNConv>(in_channels, out_channels, num_relations,
                                               nn::RGCNConvOptions{.num_bases = options.num_bases});
    conv->set_materialization(options.materialization);
    nn::RGCNConv* c = conv.get();
    return {conv, [c](const Graph& g, const Tensor& x) { return c->forward(g, x); },
            [c](const Graph& g) { return c->plan(g); }};
  }
  if (kind == "rgat") {
    auto conv =
        std::make_shared<nn::RGATConv>(in_channels, out_channels, num_relations,
                                       nn::RGATConvOptions{.heads = options.heads, .concat = options.concat});
    conv->set_materialization(options.materialization);
    conv->set_reorder(options.reorder);
    nn::RGATConv* c = conv.get();
    return {conv, [c](const Graph& g, const Tensor& x) { return c->forward(g, x); },
            [c](const Graph& g) { return c->plan(g); }};
  }
  throw ValueError("relational layer '" + kind + "' is not one of rgcn, rgat");
}

void RelationalClassifierConfig::validate() const {
  STRATA_CHECK(is_relational_kind(conv), ValueError, "RelationalClassifier: conv '", conv,
               "' is not one of rgcn, rgat");
  STRATA_CHECK(in_channels > 0 && hidden_channels > 0 && num_classes > 0 && num_relations > 0, ValueError,
               "RelationalClassifier: in_channels ", in_channels, ", hidden_channels ", hidden_channels,
               ", num_classes ", num_classes, " and num_relations ", num_relations, " must be positive");
  STRATA_CHECK(num_layers >= 1 && heads >= 1 && num_bases >= 0, ValueError,
               "RelationalClassifier: num_layers ", num_layers, " and heads ", heads,
               " must be at least 1, num_bases ", num_bases, " at least 0");
  STRATA_CHECK(dropout >= 0 && dropout < 1, ValueError, "RelationalClassifier: dropout ", dropout,
               " must be in [0, 1)");
}

RelationalClassifier::RelationalClassifier(const RelationalClassifierConfig& config) : config_(config) {
  config.validate();
  convs = register_module("convs", std::make_shared<nn::ModuleList>());
  int64_t in = config.in_channels;
  for (int64_t l = 0; l < config.num_layers; ++l) {
    const bool last = l + 1 == config.num_layers;
    const int64_t out = last ? config.num_classes : config.hidden_channels;
    const bool rgat = config.conv == "rgat";
    RelationalLayerOptions o{.num_bases = config.num_bases,
                             .heads = rgat && !last ? config.heads : 1,
                             .concat = !last,
                             .materialization = config.materialization,
                             .reorder = config.reorder};
    RelationalLayer layer = make_relational_layer(config.conv, in, out, config.num_relations, o);
    in = out * o.heads;
    layer.module->mark_as_block();
    convs->push_back(layer.module);
    layers_.push_back(std::move(layer));
  }
}

Tensor RelationalClassifier::forward(const Graph& g, const Tensor& x) {
  nn::ModuleScope scope(*this);
  Tensor h = x;
  for (size_t l = 0; l < layers_.size(); ++l) {
    // The conv, its ReLU and its dropout in the conv's scope: one block for the tensor cache.
    const bool last = l + 1 == layers_.size();
    auto forward = layers_[l].forward;
    const double p = config_.dropout;
    const bool drop = is_training() && p > 0;
    auto run = [forward, g, last, p, drop](const std::vector<Tensor>& in) {
      Tensor y = forward(g, in[0]);
      return last ? y : ops::dropout(ops::relu(y), p, drop);
    };
    h = layers_[l].module->call_with(run, {h});
  }
  return h;
}

std::vector<nn::MaterializationPlan> RelationalClassifier::plans(const Graph& g) const {
  std::vector<nn::MaterializationPlan> out;
  for (const RelationalLayer& layer : layers_) out.push_back(layer.plan(g));
  return out;
}

}  // namespace strata::examples
