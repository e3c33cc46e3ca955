// SpmmChunks: the edge-balanced split of a CSR SpMM (merge-path style; Merrill and Garland,
// "Merge-based parallel sparse matrix-vector multiplication", SC 2016) that the CUDA kernels
// (ops/cuda/cuda_graph.cu) run, host + device so that the CPU tests replay it. The E edges are cut
// into chunks of C; one worker walks a chunk's edges in order. A row that lies inside one chunk is
// summed there and written once; a row that crosses a chunk boundary (a hub row crosses many)
// leaves one piece per chunk in a partial buffer, and a fix-up adds its pieces in chunk order.
// Every row's sum is thus taken in one fixed order whatever the scheduling (the same bits every
// run), and no worker walks more than C edges however skewed the degrees are.
#pragma once

#include <cstdint>

#include "strata/core/host_device.h"

namespace strata::common {

struct SpmmChunks {
  const int64_t* off;  // CSR offsets, R + 1 of them (off[0] need not be 0: a slice of a larger CSR)
  int64_t R, C;        // rows, edges per chunk

  STRATA_HD int64_t edges() const { return off[R] - off[0]; }
  STRATA_HD int64_t chunks() const { return (edges() + C - 1) / C; }
  STRATA_HD int64_t chunk_of(int64_t k) const { return (k - off[0]) / C; }
  // The row that holds edge k (off[0] <= k < off[R]): the last r with off[r] <= k (empty rows skipped).
  STRATA_HD int64_t row_of_edge(int64_t k) const {
    int64_t lo = 0, hi = R - 1;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo + 1) / 2;
      if (off[mid] <= k)
        lo = mid;
      else
        hi = mid - 1;
    }
    return lo;
  }
  // Whether row r's edges lie in more than one chunk (its sum goes through the fix-up).
  STRATA_HD bool crosses(int64_t r) const {
    const int64_t b = off[r], e = off[r + 1];
    return e - b > 0 && chunk_of(b) != chunk_of(e - 1);
  }
  // Where chunk c keeps its piece of a crossing row r: slot 0 when r is the row that holds the
  // chunk's first edge, else slot 1 (then r is the chunk's last row, continuing past it).
  STRATA_HD int slot(int64_t r, int64_t c) const {
    const int64_t first = off[0] + c * C;
    return off[r] <= first && first < off[r + 1] ? 0 : 1;
  }

  // Walks chunk c for one output column: value(k, r) is edge k's contribution (r: its row), folded from
  // `init` by combine(acc, v) (a sum, or a max); whole(r, acc) receives the rows that lie inside the chunk,
  // piece(r, slot, acc) the pieces of crossing rows.
  template <class T, class Value, class Combine, class Whole, class Piece>
  STRATA_HD void walk_fold(int64_t c, T init, Value value, Combine combine, Whole whole, Piece piece) const {
    const int64_t b = off[0] + c * C, e = b + C < off[R] ? b + C : off[R];
    int64_t r = row_of_edge(b);
    T acc = init;
    for (int64_t k = b; k < e; ++k) {
      acc = combine(acc, value(k, r));
      if (k + 1 == off[r + 1] || k + 1 == e) {  // row r ends here, or the chunk does
        if (off[r] >= b && off[r + 1] <= e)
          whole(r, acc);
        else
          piece(r, slot(r, c), acc);
        acc = init;
        if (k + 1 < e)
          while (off[r + 1] <= k + 1) ++r;  // the next row with edges (empty rows hold none)
      }
    }
  }
  template <class T, class Value, class Whole, class Piece>
  STRATA_HD void walk(int64_t c, Value value, Whole whole, Piece piece) const {
    walk_fold<T>(
        c, T(0), [&](int64_t k, int64_t) { return value(k); }, [](T a, T v) { return a + v; }, whole, piece);
  }

  // The fix-up of a crossing row r: piece(c, slot) of each chunk it crosses, folded in chunk order.
  template <class T, class Piece, class Combine>
  STRATA_HD T gather_fold(int64_t r, T init, Piece piece, Combine combine) const {
    T acc = init;
    for (int64_t c = chunk_of(off[r]); c <= chunk_of(off[r + 1] - 1); ++c)
      acc = combine(acc, piece(c, slot(r, c)));
    return acc;
  }
  template <class T, class Piece>
  STRATA_HD T gather(int64_t r, Piece piece) const {
    return gather_fold<T>(r, T(0), piece, [](T a, T v) { return a + v; });
  }

  // Calls edge(k, r) for every edge k of chunk c with the row r that holds it, in order.
  template <class Edge>
  STRATA_HD void for_each_edge(int64_t c, Edge edge) const {
    const int64_t b = off[0] + c * C, e = b + C < off[R] ? b + C : off[R];
    int64_t r = row_of_edge(b);
    for (int64_t k = b; k < e; ++k) {
      while (off[r + 1] <= k) ++r;
      edge(k, r);
    }
  }
};

}  // namespace strata::common
