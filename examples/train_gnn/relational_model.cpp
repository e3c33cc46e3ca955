// Relational layers behind one signature.
#include "examples/train_gnn/relational_model.h"

#include "strata/core/error.h"
#include "strata/models/layers/graph/rgat_conv.h"
#include "strata/models/layers/graph/rgcn_conv.h"

namespace strata::examples {

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

}  // namespace strata::examples
