// Filtered link-prediction ranking: each evaluation triple (h, r, t) ranks its tail among all
// entities for (h, r, ?) and its head for (?, r, t), every other true triple of train, valid and
// test left out (the filtered setting of Bordes et al., NIPS 2013), ties counted as PyKEEN's
// realistic rank (the expected rank under random tie breaking).
//
//   KnownTriples known({kg.train, kg.valid, kg.test});
//   RankingMetrics m = rank_triples(kg.test, known, 256, score_tails, score_heads);
//   std::puts(m.str().c_str());  // "MRR 0.812, MR 2.31, Hits@1 71.2%, Hits@3 88.0%, Hits@10 97.1%"
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "examples/train_gnn/known_triples.h"
#include "strata/core/tensor.h"

namespace strata::examples {

// The realistic rank of entity `target` among `scores[0, n)`, the entities of `known` (sorted)
// other than `target` left out: the mean of the optimistic rank (1 + entities scoring higher) and
// the pessimistic rank (entities scoring at least as high, `target` included). NaN scores are
// left out too; a NaN target score ranks last.
double realistic_rank(const float* scores, int64_t n, int64_t target, const std::vector<int64_t>& known);

struct RankingMetrics {
  int64_t ranks = 0;                                                // two per triple: its head and its tail
  double mrr = 0, mean_rank = 0, hits1 = 0, hits3 = 0, hits10 = 0;  // hits as fractions
  // "MRR 0.812, MR 2.31, Hits@1 71.2%, Hits@3 88.0%, Hits@10 97.1%".
  std::string str() const;
};

// Sums ranks into RankingMetrics (Hits@k: the realistic rank at most k).
class RankAccumulator {
 public:
  void add(double rank);
  RankingMetrics result() const;

 private:
  int64_t n_ = 0;
  double reciprocal_ = 0, sum_ = 0;
  int64_t hits1_ = 0, hits3_ = 0, hits10_ = 0;
};

// Scores of every entity for a batch of queries: (entity index [B], relation [B]) i64 on the
// model's device -> [B, num_entities] (any float dtype and device).
using QueryScorer = std::function<Tensor(const Tensor& entity, const Tensor& relation)>;

// Both ranks of every triple of `triples` (i64 [n, 3]), `batch` queries at a time: tails(h, r)
// scores the candidate tails of (h, r, ?), heads(t, r) the candidate heads of (?, r, t). `device`
// is where the scorers want their index tensors.
RankingMetrics rank_triples(const Tensor& triples, const KnownTriples& known, int64_t batch, Device device,
                            const QueryScorer& tails, const QueryScorer& heads);

}  // namespace strata::examples
