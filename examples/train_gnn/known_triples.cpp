// KnownTriples: a knowledge graph's true triples by (head, relation) and (relation, tail).
#include "examples/train_gnn/known_triples.h"

#include <algorithm>

#include "strata/core/error.h"

namespace strata::examples {

namespace {

// (a, b) as one key; ids are below 2^32 (entities and relations of a loaded knowledge graph).
uint64_t pair_key(int64_t a, int64_t b) { return (uint64_t(a) << 32) | uint64_t(uint32_t(b)); }

const std::vector<int64_t>& lookup(const std::unordered_map<uint64_t, std::vector<int64_t>>& m,
                                   uint64_t key) {
  static const std::vector<int64_t> kNone;
  const auto it = m.find(key);
  return it == m.end() ? kNone : it->second;
}

}  // namespace

std::vector<int64_t> triple_rows(const Tensor& triples) {
  STRATA_CHECK(triples.dim() == 2 && triples.size(1) == 3 && triples.dtype() == DType::i64, ValueError,
               "triples must be i64 [n, 3], not ", triples.str());
  const Tensor t = triples.to(kCPU).contiguous();
  const int64_t* p = t.data<int64_t>();
  return std::vector<int64_t>(p, p + t.numel());
}

KnownTriples::KnownTriples(const std::vector<Tensor>& splits) {
  for (const Tensor& split : splits) {
    if (!split.defined() || split.numel() == 0) continue;
    const std::vector<int64_t> rows = triple_rows(split);
    for (size_t i = 0; i < rows.size(); i += 3) {
      tails_[pair_key(rows[i], rows[i + 1])].push_back(rows[i + 2]);
      heads_[pair_key(rows[i + 1], rows[i + 2])].push_back(rows[i]);
    }
  }
  for (auto* m : {&tails_, &heads_})
    for (auto& [key, v] : *m) {
      std::sort(v.begin(), v.end());
      v.erase(std::unique(v.begin(), v.end()), v.end());
    }
}

const std::vector<int64_t>& KnownTriples::tails(int64_t h, int64_t r) const {
  return lookup(tails_, pair_key(h, r));
}
const std::vector<int64_t>& KnownTriples::heads(int64_t r, int64_t t) const {
  return lookup(heads_, pair_key(r, t));
}

bool KnownTriples::contains(int64_t h, int64_t r, int64_t t) const {
  const std::vector<int64_t>& v = tails(h, r);
  return std::binary_search(v.begin(), v.end(), t);
}

}  // namespace strata::examples
