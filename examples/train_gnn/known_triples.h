// KnownTriples: the true (head, relation, tail) triples of a knowledge graph, looked up by
// (head, relation) and by (relation, tail), for filtered ranking and filtered negative sampling.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "strata/core/tensor.h"

namespace strata::examples {

// The values of an i64 [n, 3] (head, relation, tail) tensor on any device, row by row on the host;
// ValueError for any other shape or dtype.
std::vector<int64_t> triple_rows(const Tensor& triples);

// Every true triple, looked up by (head, relation) and by (relation, tail).
class KnownTriples {
 public:
  // `splits`: i64 [n, 3] (head, relation, tail) tensors on any device.
  explicit KnownTriples(const std::vector<Tensor>& splits);
  // The true tails of (h, r, ?) and heads of (?, r, t), sorted (empty when none).
  const std::vector<int64_t>& tails(int64_t h, int64_t r) const;
  const std::vector<int64_t>& heads(int64_t r, int64_t t) const;
  // Whether (h, r, t) is one of them.
  bool contains(int64_t h, int64_t r, int64_t t) const;

 private:
  std::unordered_map<uint64_t, std::vector<int64_t>> tails_, heads_;
};

}  // namespace strata::examples
