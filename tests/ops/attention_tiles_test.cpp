// AttentionTiles, the tiling the fused CUDA attention kernels run: every (query, key) pair a causal
// or full mask keeps is visited exactly once by the forward's and dQ's walk (query tile -> key
// tiles) and by dK/dV's walk (key tile -> query tiles), and a causal walk visits no tile that
// holds no kept pair.
#include "ops/common/attention_tiles.h"

#include <gtest/gtest.h>

#include <vector>

namespace strata {
namespace {

using common::AttentionTiles;

struct Walks {
  std::vector<int> by_query, by_key;  // visits of each (t, s), row-major over [T, S]
  int empty_tiles_by_query = 0, empty_tiles_by_key = 0;
};

Walks walk(const AttentionTiles& tl) {
  Walks w;
  w.by_query.assign(size_t(tl.T * tl.S), 0);
  w.by_key.assign(size_t(tl.T * tl.S), 0);
  auto visit = [&](int64_t qt, int64_t kt, std::vector<int>& count) {
    bool any = false;
    for (int64_t t = qt * tl.rows; t < (qt + 1) * tl.rows && t < tl.T; ++t)
      for (int64_t s = kt * tl.cols; s < (kt + 1) * tl.cols && s < tl.S; ++s)
        if (tl.kept(t, s)) ++count[size_t(t * tl.S + s)], any = true;
    return any;
  };
  for (int64_t qt = 0; qt < tl.query_tiles(); ++qt)
    for (int64_t kt = 0; kt < tl.key_tile_end(qt); ++kt) w.empty_tiles_by_query += !visit(qt, kt, w.by_query);
  for (int64_t kt = 0; kt < tl.key_tiles(); ++kt)
    for (int64_t qt = tl.query_tile_begin(kt); qt < tl.query_tiles(); ++qt)
      w.empty_tiles_by_key += !visit(qt, kt, w.by_key);
  return w;
}

TEST(AttentionTiles, EveryKeptPairIsVisitedOnceByBothWalks) {
  for (bool causal : {false, true})
    for (int64_t T : {1, 15, 64, 77, 130, 256})
      for (int64_t S : {1, 33, 64, 65, 200, 256})
        for (auto [rows, cols] : {std::pair<int64_t, int64_t>{64, 64}, {64, 32}, {16, 64}}) {
          const AttentionTiles tl{T, S, rows, cols, causal};
          const Walks w = walk(tl);
          for (int64_t t = 0; t < T; ++t)
            for (int64_t s = 0; s < S; ++s) {
              const int want = (!causal || s <= t) ? 1 : 0;
              ASSERT_EQ(w.by_query[size_t(t * S + s)], want)
                  << "query walk, t=" << t << " s=" << s << " T=" << T << " S=" << S << " causal=" << causal;
              ASSERT_EQ(w.by_key[size_t(t * S + s)], want)
                  << "key walk, t=" << t << " s=" << s << " T=" << T << " S=" << S << " causal=" << causal;
            }
          if (causal) {  // the walks skip the tiles wholly above the diagonal
            EXPECT_EQ(w.empty_tiles_by_query, 0)
                << "T=" << T << " S=" << S << " rows=" << rows << " cols=" << cols;
            EXPECT_EQ(w.empty_tiles_by_key, 0)
                << "T=" << T << " S=" << S << " rows=" << rows << " cols=" << cols;
          }
        }
}

TEST(AttentionTiles, CausalWalksStopAtTheDiagonal) {
  const AttentionTiles tl{1024, 1024, 64, 64, true};
  EXPECT_EQ(tl.query_tiles(), 16);
  EXPECT_EQ(tl.key_tile_end(0), 1);
  EXPECT_EQ(tl.key_tile_end(15), 16);
  EXPECT_EQ(tl.query_tile_begin(0), 0);
  EXPECT_EQ(tl.query_tile_begin(15), 15);
  int64_t pairs = 0;
  for (int64_t qt = 0; qt < tl.query_tiles(); ++qt) pairs += tl.key_tile_end(qt);
  EXPECT_EQ(pairs, 16 * 17 / 2);  // half the 256 tile pairs, plus the diagonal
  // More keys than queries: causal keys past the last query are never visited.
  const AttentionTiles wide{100, 500, 64, 64, true};
  EXPECT_EQ(wide.key_tile_end(1), 2);
  EXPECT_EQ(wide.query_tile_begin(7), wide.query_tiles());
}

}  // namespace
}  // namespace strata
