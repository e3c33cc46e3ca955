// AttentionTiles: which key tiles a query tile visits, and which query tiles a key tile visits,
// in the fused attention kernels (ops/cuda/cuda_fused_attention.cu), host + device so that the
// CPU tests check the tiling the device runs: every (query, key) pair a causal or full mask keeps
// lies in exactly one visited (query tile, key tile) pair, and causal runs skip the tiles wholly
// above the diagonal (FlashAttention-2, Dao 2023, section 3.1).
#pragma once

#include <cstdint>

#include "strata/core/host_device.h"

namespace strata::common {

struct AttentionTiles {
  int64_t T = 0, S = 0;          // queries, keys
  int64_t rows = 64, cols = 64;  // query rows per tile, key rows per tile
  bool causal = false;           // key s is kept for query t only when s <= t (the CPU's rule)

  STRATA_HD int64_t query_tiles() const { return (T + rows - 1) / rows; }
  STRATA_HD int64_t key_tiles() const { return (S + cols - 1) / cols; }
  // A query tile visits key tiles [0, key_tile_end(qt)).
  STRATA_HD int64_t key_tile_end(int64_t qt) const {
    const int64_t all = key_tiles();
    if (!causal) return all;
    const int64_t last_query = (qt + 1) * rows < T ? (qt + 1) * rows - 1 : T - 1;
    const int64_t end = last_query / cols + 1;
    return end < all ? end : all;
  }
  // A key tile is visited by query tiles [query_tile_begin(kt), query_tiles()).
  STRATA_HD int64_t query_tile_begin(int64_t kt) const {
    if (!causal) return 0;
    if (kt * cols >= T) return query_tiles();  // keys past the last query: nobody attends them
    const int64_t first = (kt * cols) / rows;
    return first < query_tiles() ? first : query_tiles();
  }
  STRATA_HD bool kept(int64_t t, int64_t s) const { return t < T && s < S && (!causal || s <= t); }
};

}  // namespace strata::common
