// Link prediction's Philox-keyed epoch orders and corrupted triples.
#include "examples/train_gnn/negative_sampling.h"

#include <algorithm>
#include <utility>

#include "strata/core/error.h"
#include "strata/core/philox.h"

namespace strata::examples {

namespace {

// Separate Philox streams for the two uses, in the counter's third word.
constexpr uint32_t kOrderStream = 0x6f726472u;     // "ordr"
constexpr uint32_t kNegativeStream = 0x6e656773u;  // "negs"

philox::U32x4 draw(uint64_t seed, uint32_t stream, uint64_t counter, int64_t round) {
  return philox::philox4x32_10(
      philox::U32x4{uint32_t(counter), uint32_t(counter >> 32), stream, uint32_t(round)}, uint32_t(seed),
      uint32_t(seed >> 32));
}

// A uniform integer in [0, n) from 32 random bits (Lemire's multiply-shift; n < 2^32).
int64_t below(uint32_t bits, int64_t n) { return int64_t((uint64_t(bits) * uint64_t(n)) >> 32); }

}  // namespace

std::vector<int64_t> epoch_order(int64_t n, uint64_t seed, int64_t epoch) {
  std::vector<std::pair<uint64_t, int64_t>> keyed(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const philox::U32x4 w = draw(seed, kOrderStream, uint64_t(i), epoch);
    keyed[size_t(i)] = {(uint64_t(w.x) << 32) | w.y, i};
  }
  std::sort(keyed.begin(), keyed.end());
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[size_t(i)] = keyed[size_t(i)].second;
  return order;
}

std::vector<int64_t> corrupt_triples(const std::vector<int64_t>& positives, int64_t k, int64_t num_entities,
                                     uint64_t seed, int64_t step, const KnownTriples* exclude) {
  STRATA_CHECK(positives.size() % 3 == 0 && k >= 1 && num_entities >= 2 && num_entities < (int64_t(1) << 32),
               ValueError, "corrupt_triples: ", positives.size(), " values, k ", k, ", ", num_entities,
               " entities (needs rows of 3, k >= 1 and 2 to 2^32 - 1 entities)");
  const int64_t B = int64_t(positives.size() / 3);
  std::vector<int64_t> out(size_t(3 * B * k));
  for (int64_t i = 0; i < B; ++i)
    for (int64_t j = 0; j < k; ++j) {
      const int64_t c = i * k + j;
      const int64_t* positive = &positives[size_t(3 * i)];
      int64_t* row = &out[size_t(3 * c)];
      for (int attempt = 0; attempt < kCorruptionAttempts; ++attempt) {
        const philox::U32x4 w = draw(seed, kNegativeStream + uint32_t(attempt), uint64_t(c), step);
        std::copy_n(positive, 3, row);
        const int side = (w.x & 1u) ? 2 : 0;  // tail or head
        int64_t e = below(w.y, num_entities - 1);
        e += e >= row[side];  // skip the true entity: uniform over the others
        row[side] = e;
        if (exclude == nullptr || !exclude->contains(row[0], row[1], row[2])) break;
      }
    }
  return out;
}

}  // namespace strata::examples
