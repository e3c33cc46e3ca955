// KgLinkPredictor: entity embeddings, the optional R-GCN encoder and DistMult scores.
#include "examples/train_gnn/kg_model.h"

#include <cmath>

#include "strata/autograd/grad_mode.h"
#include "strata/core/error.h"
#include "strata/core/memory_stats.h"
#include "strata/ops/elementwise.h"
#include "strata/ops/factory.h"
#include "strata/ops/linalg.h"
#include "strata/ops/nn.h"
#include "strata/ops/reduction.h"
#include "strata/ops/segment_ops.h"
#include "strata/ops/shape_ops.h"

namespace strata::examples {

namespace {

// torch.nn.init.xavier_uniform_: U(-a, a), a = sqrt(6 / (fan_in + fan_out)).
Tensor glorot(int64_t rows, int64_t cols) {
  Tensor t = Tensor::empty({rows, cols});
  const double a = std::sqrt(6.0 / double(rows + cols));
  ops::uniform_(t, -a, a);
  return t;
}

}  // namespace

void KgLinkPredictorConfig::validate() const {
  STRATA_CHECK(num_entities >= 2 && num_relations >= 1 && dim >= 1, ValueError,
               "KgLinkPredictor: ", num_entities, " entities, ", num_relations, " relations and dim ", dim,
               " (needs 2 entities, 1 relation and dim 1 at least)");
  STRATA_CHECK(encoder == "rgcn" || encoder == "none", ValueError, "KgLinkPredictor: encoder '", encoder,
               "' is not one of rgcn, none");
  STRATA_CHECK(encoder == "none" || (encoder_relations >= 1 && num_layers >= 1 && num_bases >= 0), ValueError,
               "KgLinkPredictor: the rgcn encoder needs encoder_relations and num_layers >= 1 (",
               encoder_relations, ", ", num_layers, ") and num_bases >= 0 (", num_bases, ")");
  STRATA_CHECK(dropout >= 0 && dropout < 1 && query_dropout >= 0 && query_dropout < 1, ValueError,
               "KgLinkPredictor: dropout ", dropout, " and query_dropout ", query_dropout,
               " must be in [0, 1)");
}

KgLinkPredictor::KgLinkPredictor(const KgLinkPredictorConfig& config) : config_(config) {
  config.validate();
  {
    NoGradGuard no_grad;
    MemoryCategoryGuard category(MemoryCategory::Parameter);
    node_emb = register_parameter("node_emb", glorot(config.num_entities, config.dim));
    const int64_t rows = (config.reciprocal ? 2 : 1) * config.num_relations;
    rel_emb = register_parameter("rel_emb", glorot(rows, config.dim));
  }
  convs = register_module("convs", std::make_shared<nn::ModuleList>());
  if (config.encoder == "none") return;
  for (int64_t l = 0; l < config.num_layers; ++l) {
    RelationalLayer layer = make_relational_layer(
        "rgcn", config.dim, config.dim, config.encoder_relations,
        {.num_bases = config.num_bases, .materialization = config.materialization, .reorder = std::nullopt});
    layer.module->mark_as_block();
    convs->push_back(layer.module);
    layers_.push_back(std::move(layer));
  }
}

Tensor KgLinkPredictor::encode(const Graph& g) {
  nn::ModuleScope scope(*this);
  Tensor z = node_emb;
  for (size_t l = 0; l < layers_.size(); ++l) {
    const bool last = l + 1 == layers_.size();
    auto forward = layers_[l].forward;
    const double p = config_.dropout;
    const bool drop = is_training() && p > 0;
    auto run = [forward, g, last, p, drop](const std::vector<Tensor>& in) {
      Tensor y = forward(g, in[0]);
      return last ? y : ops::dropout(ops::relu(y), p, drop);
    };
    z = layers_[l].module->call_with(run, {z});
  }
  return z;
}

Tensor KgLinkPredictor::score(const Tensor& z, const Tensor& h, const Tensor& r, const Tensor& t) const {
  return ops::sum(ops::mul(query(z, h, rel_emb, r), ops::gather_rows(z, t)), {1});
}

Tensor KgLinkPredictor::score_tails(const Tensor& z, const Tensor& h, const Tensor& r) const {
  return ops::matmul(query(z, h, rel_emb, r), ops::transpose(z, 0, 1));
}

Tensor KgLinkPredictor::score_heads(const Tensor& z, const Tensor& t, const Tensor& r) const {
  const int64_t R = config_.num_relations;
  const Tensor rel = config_.reciprocal ? ops::narrow(rel_emb, 0, R, R) : rel_emb;  // [R, D]
  return ops::matmul(query(z, t, rel, r), ops::transpose(z, 0, 1));
}

Tensor KgLinkPredictor::query(const Tensor& z, const Tensor& e, const Tensor& rel, const Tensor& r) const {
  const Tensor q = ops::mul(ops::gather_rows(z, e), ops::gather_rows(rel, r));  // [B, D]
  const double p = config_.query_dropout;
  return p > 0 && is_training() ? ops::dropout(q, p) : q;
}

std::vector<nn::MaterializationPlan> KgLinkPredictor::plans(const Graph& g) const {
  std::vector<nn::MaterializationPlan> out;
  for (const RelationalLayer& layer : layers_) out.push_back(layer.plan(g));
  return out;
}

}  // namespace strata::examples
