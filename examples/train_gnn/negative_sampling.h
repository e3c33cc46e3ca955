// Link prediction's training batches: the training triples in a Philox-keyed order per epoch,
// and corrupted copies of each triple, so a run's batches are a function of (seed, step) alone and
// a resumed run needs only its step.
#pragma once

#include <cstdint>
#include <vector>

#include "examples/train_gnn/known_triples.h"

namespace strata::examples {

// A permutation of [0, n) for epoch `epoch`: the rows sorted by Philox words keyed by (seed, epoch).
std::vector<int64_t> epoch_order(int64_t n, uint64_t seed, int64_t epoch);

// `k` corrupted copies of each (h, r, t) row of `positives` (host i64, 3 per row): in each copy
// the head or the tail (one half each) is replaced by an entity drawn uniformly from the other
// num_entities - 1, as PyKEEN's BasicNegativeSampler does. With `exclude`, a copy that is one of
// its triples is drawn again, side and entity, up to kCorruptionAttempts times (the last draw
// stays), so the copies are uniform over the corruptions that are not known true triples. Draws
// are Philox words keyed by (seed, step, copy, attempt). Returns 3 * k values per row, copy j of
// row i at row i * k + j.
constexpr int kCorruptionAttempts = 8;
std::vector<int64_t> corrupt_triples(const std::vector<int64_t>& positives, int64_t k, int64_t num_entities,
                                     uint64_t seed, int64_t step, const KnownTriples* exclude = nullptr);

}  // namespace strata::examples
