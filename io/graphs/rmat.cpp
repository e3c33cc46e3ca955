// R-MAT edges (Chakrabarti, Zhan, Faloutsos, "R-MAT: A Recursive Model for Graph Mining",
// SDM 2004), without Graph500's per-level noise, with its vertex permutation.
#include <algorithm>
#include <numeric>

#include "io/graphs/edge_dedup.h"
#include "io/graphs/graph_assembly.h"
#include "io/graphs/random_draws.h"
#include "io/graphs/rmat_quadrants.h"
#include "strata/core/error.h"
#include "strata/io/graphs/graph_generators.h"

namespace strata::io {
namespace {

// Stream ids of the R-MAT draws under the seed.
constexpr uint64_t kQuadrantStream = 1, kPermutationStream = 2;
constexpr int64_t kMaxEdges = int64_t(1) << 34;

void check(const RmatOptions& o) {
  STRATA_CHECK(o.scale >= 1 && o.scale <= 30, ValueError, "rmat: scale ", o.scale, " is not in [1, 30]");
  STRATA_CHECK(o.edge_factor >= 1 && o.edge_factor <= (kMaxEdges >> o.scale), ValueError,
               "rmat: edge_factor ", o.edge_factor, " at scale ", o.scale, " is not in [1, ",
               (kMaxEdges >> o.scale), "]");
}

}  // namespace

GeneratedEdges rmat_edges(const RmatOptions& o) {
  check(o);
  const int64_t n = int64_t(1) << o.scale;
  const int64_t m = o.edge_factor * n;
  const RmatQuadrants quadrants(o.a, o.b, o.c, o.d, "rmat");
  const int64_t blocks_per_edge = (o.scale + 3) / 4;
  const PhiloxStream rng(o.seed, kQuadrantStream);

  std::vector<int64_t> perm;
  if (o.permute_ids) {
    perm.resize(size_t(n));
    std::iota(perm.begin(), perm.end(), int64_t(0));
    shuffle(&perm, o.seed, kPermutationStream);
  }
  std::vector<int64_t> src(static_cast<size_t>(m)), dst(static_cast<size_t>(m));
#pragma omp parallel for schedule(static, 65536)
  for (int64_t e = 0; e < m; ++e) {
    uint64_t u = 0, v = 0;
    for (int level = 0; level < o.scale; level += 4) {
      philox::U32x4 r = rng.block(uint64_t(e * blocks_per_edge + level / 4));
      const uint32_t words[4] = {r.x, r.y, r.z, r.w};
      for (int k = 0; k < 4 && level + k < o.scale; ++k) {
        const uint32_t w = words[k];
        u = u << 1 | quadrants.row_bit(w);
        v = v << 1 | quadrants.col_bit(w);
      }
    }
    src[size_t(e)] = o.permute_ids ? perm[u] : int64_t(u);
    dst[size_t(e)] = o.permute_ids ? perm[v] : int64_t(v);
  }

  if (o.remove_self_loops || o.remove_duplicates) {
    std::vector<uint8_t> keep(size_t(m), 1);
    if (o.remove_duplicates) {
      std::vector<uint64_t> keys(static_cast<size_t>(m));
      for (size_t e = 0; e < size_t(m); ++e) {
        uint64_t s = uint64_t(src[e]), d = uint64_t(dst[e]);
        if (o.undirected && s > d) std::swap(s, d);
        keys[e] = s << o.scale | d;
      }
      keep = first_occurrences(keys, 2 * o.scale);
    }
    size_t kept = 0;
    for (size_t e = 0; e < size_t(m); ++e) {
      if (!keep[e] || (o.remove_self_loops && src[e] == dst[e])) continue;
      src[kept] = src[e];
      dst[kept] = dst[e];
      ++kept;
    }
    src.resize(kept);
    dst.resize(kept);
  }
  if (o.undirected) append_reverse_edges(&src, &dst);
  return GeneratedEdges{n, host_tensor(src), host_tensor(dst)};
}

GraphDataset generate_rmat(const RmatOptions& options) {
  GeneratedEdges edges = rmat_edges(options);
  GraphDataset data;
  data.graph = Graph::from_edges(edges.num_nodes, edges.src, edges.dst);
  data.name = detail::concat("rmat(scale=", options.scale, ", edge_factor=", options.edge_factor, ")");
  return data;
}

}  // namespace strata::io
