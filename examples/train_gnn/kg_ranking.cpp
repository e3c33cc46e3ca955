// Filtered realistic ranks of link-prediction queries, and the metrics summed from them.
#include "examples/train_gnn/kg_ranking.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "strata/core/error.h"
#include "strata/ops/factory.h"
#include "strata/ops/shape_ops.h"

namespace strata::examples {

double realistic_rank(const float* scores, int64_t n, int64_t target, const std::vector<int64_t>& known) {
  STRATA_CHECK(target >= 0 && target < n, IndexError, "realistic_rank: target ", target, " not in [0, ", n,
               ")");
  const float s = scores[target];
  int64_t higher = 0, tied = 0, candidates = 0;  // tied: other candidates scoring exactly s
  size_t k = 0;                                  // the next known entity, walking in order
  for (int64_t e = 0; e < n; ++e) {
    while (k < known.size() && known[size_t(k)] < e) ++k;
    const bool filtered = k < known.size() && known[k] == e;
    if (e == target || filtered || std::isnan(scores[e])) continue;
    ++candidates;
    higher += scores[e] > s;
    tied += scores[e] == s;
  }
  if (std::isnan(s)) return double(candidates + 1);
  const double optimistic = double(higher + 1), pessimistic = double(higher + tied + 1);
  return 0.5 * (optimistic + pessimistic);
}

std::string RankingMetrics::str() const {
  char buf[160];
  std::snprintf(buf, sizeof buf, "MRR %.3f, MR %.2f, Hits@1 %.1f%%, Hits@3 %.1f%%, Hits@10 %.1f%%", mrr,
                mean_rank, 100 * hits1, 100 * hits3, 100 * hits10);
  return buf;
}

void RankAccumulator::add(double rank) {
  ++n_;
  reciprocal_ += 1.0 / rank;
  sum_ += rank;
  hits1_ += rank <= 1;
  hits3_ += rank <= 3;
  hits10_ += rank <= 10;
}

RankingMetrics RankAccumulator::result() const {
  RankingMetrics m;
  m.ranks = n_;
  if (n_ == 0) return m;
  const double n = double(n_);
  m.mrr = reciprocal_ / n, m.mean_rank = sum_ / n;
  m.hits1 = double(hits1_) / n, m.hits3 = double(hits3_) / n, m.hits10 = double(hits10_) / n;
  return m;
}

RankingMetrics rank_triples(const Tensor& triples, const KnownTriples& known, int64_t batch, Device device,
                            const QueryScorer& tails, const QueryScorer& heads) {
  STRATA_CHECK(batch > 0, ValueError, "rank_triples: batch ", batch, " must be positive");
  const std::vector<int64_t> rows = triple_rows(triples);
  const int64_t n = triples.size(0);
  RankAccumulator acc;
  for (int64_t start = 0; start < n; start += batch) {
    const int64_t B = std::min(batch, n - start);
    std::vector<int64_t> h(static_cast<size_t>(B)), r(h), t(h);
    for (int64_t i = 0; i < B; ++i) {
      const size_t row = size_t(3 * (start + i));
      h[size_t(i)] = rows[row], r[size_t(i)] = rows[row + 1], t[size_t(i)] = rows[row + 2];
    }
    const Tensor hs = ops::from_vector(h, {B}).to(device), rs = ops::from_vector(r, {B}).to(device),
                 ts = ops::from_vector(t, {B}).to(device);
    for (const bool tail_side : {true, false}) {
      const Tensor scores = (tail_side ? tails(hs, rs) : heads(ts, rs)).to(kCPU).to(DType::f32).contiguous();
      STRATA_CHECK(scores.dim() == 2 && scores.size(0) == B, ShapeError, "rank_triples: scores ",
                   scores.str(), " must be [", B, ", entities]");
      const int64_t N = scores.size(1);
      const float* p = scores.data<float>();
      for (int64_t i = 0; i < B; ++i) {
        const size_t q = size_t(i);
        const std::vector<int64_t>& k = tail_side ? known.tails(h[q], r[q]) : known.heads(r[q], t[q]);
        acc.add(realistic_rank(p + i * N, N, tail_side ? t[q] : h[q], k));
      }
    }
  }
  return acc.result();
}

}  // namespace strata::examples
