// KgLinkPredictor: DistMult scores over entity representations, the representations being
// learned entity embeddings alone or those embeddings through R-GCN layers over the training
// triples (the R-GCN link predictor of Schlichtkrull et al., ESWC 2018, Section 4).
//
//   KgLinkPredictor model({.num_entities = N, .num_relations = R, .encoder = "rgcn",
//                          .encoder_relations = g.num_relations()});
//   Tensor z = model.encode(g);                  // [N, D]
//   Tensor s = model.score(z, h, r, t);          // [B]
//   Tensor all = model.score_tails(z, h, r);     // [B, N]
//   Tensor heads = model.score_heads(z, t, r);   // [B, N]
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "examples/train_gnn/relational_model.h"
#include "strata/models/layers/container.h"
#include "strata/nn/module.h"
#include "strata/ops/graph.h"

namespace strata::examples {

struct KgLinkPredictorConfig {
  int64_t num_entities = 0;
  int64_t num_relations = 0;      // the decoder's: one diagonal per relation
  bool reciprocal = false;        // and one per relation's inverse, for head queries (score_heads)
  int64_t dim = 200;              // embedding and representation width D
  std::string encoder = "rgcn";   // "rgcn" or "none"
  int64_t encoder_relations = 0;  // the encoder graph's relations (the training relations and their reverses)
  int64_t num_layers = 1;         // rgcn layers
  int64_t num_bases = 0;
  double dropout = 0.0;  // on every hidden rgcn layer's output while training
  // Dropout on each query z_h * rel_r while training, the vector DistMult multiplies into every
  // candidate (as ConvE's input dropout on the query's embeddings: Dettmers et al., AAAI 2018).
  double query_dropout = 0.0;
  nn::Materialization materialization = nn::Materialization::kAuto;
  void validate() const;  // ValueError naming the field out of range
};

// Parameters as PyG's examples/rgcn_link_pred.py names them: node_emb [N, D] and rel_emb [R, D]
// ([2R, D] with reciprocal relations, the inverse of r at row R + r; Glorot-uniform), the
// encoder's layers convs.0, convs.1, ... (each a planner block; ReLU and dropout between them,
// none after the last). score(h, r, t) = sum_d z_h[d] rel_emb_r[d] z_t[d] (DistMult: Yang et al.,
// ICLR 2015).
class KgLinkPredictor : public nn::Module {
 public:
  explicit KgLinkPredictor(const KgLinkPredictorConfig& config);
  // Entity representations z [N, D]: node_emb, through the rgcn layers over `g` when there are any.
  Tensor encode(const Graph& g);
  // Scores of the triples (h[i], r[i], t[i]): i64 [B] each -> [B].
  Tensor score(const Tensor& z, const Tensor& h, const Tensor& r, const Tensor& t) const;
  // Scores of every entity as the tail of (h[i], r[i], ?), [B, N].
  Tensor score_tails(const Tensor& z, const Tensor& h, const Tensor& r) const;
  // Scores of every entity as the head of (?, r[i], t[i]), [B, N]: the tails of (t[i], r[i]^-1, ?)
  // with reciprocal relations (Lacroix et al., Canonical Tensor Decomposition for Knowledge Base
  // Completion, ICML 2018), else of (t[i], r[i], ?), DistMult being symmetric.
  Tensor score_heads(const Tensor& z, const Tensor& t, const Tensor& r) const;
  // Each encoder layer's plan on g (empty without an encoder).
  std::vector<nn::MaterializationPlan> plans(const Graph& g) const;
  const KgLinkPredictorConfig& config() const { return config_; }

  Tensor node_emb, rel_emb;
  std::shared_ptr<nn::ModuleList> convs;

 private:
  // The queries z_e[i] * rel[r[i]], [B, D], with query_dropout while training.
  Tensor query(const Tensor& z, const Tensor& e, const Tensor& rel, const Tensor& r) const;

  KgLinkPredictorConfig config_;
  std::vector<RelationalLayer> layers_;
};

}  // namespace strata::examples
