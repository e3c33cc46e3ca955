// Double-precision references for the message-passing and segment ops: plain loops over an edge
// list, independent of the kernels' compressed layouts.
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "support/op_reference.h"

namespace strata::testing::ref {

// out[r] = reduce over i with index[i] == r (increasing i) of x[i]; x [M, ...] -> [rows, ...];
// rows nobody writes are 0.
inline Ref scatter_rows(const Ref& x, const std::vector<int64_t>& index, int64_t rows,
                        const std::string& reduce) {
  Shape s = x.shape;
  s[0] = rows;
  Ref out(s);
  const int64_t D = x.shape[0] == 0 ? 0 : x.numel() / x.shape[0];
  std::vector<int64_t> count(size_t(rows), 0);
  for (size_t i = 0; i < index.size(); ++i) {
    const int64_t r = index[i];
    for (int64_t d = 0; d < D; ++d) {
      double& o = out.v[size_t(r * D + d)];
      const double v = x.v[i * size_t(D) + size_t(d)];
      if (reduce == "max")
        o = count[size_t(r)] == 0 ? v : nan_max(o, v);
      else if (reduce == "min")
        o = count[size_t(r)] == 0 ? v : nan_min(o, v);
      else
        o += v;
    }
    ++count[size_t(r)];
  }
  if (reduce == "mean")
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t d = 0; d < D; ++d) out.v[size_t(r * D + d)] /= std::max<int64_t>(count[size_t(r)], 1);
  return out;
}

// Rows x[index[i]]: x [N, ...] -> [M, ...].
inline Ref gather_rows(const Ref& x, const std::vector<int64_t>& index) {
  Shape s = x.shape;
  s[0] = int64_t(index.size());
  Ref out(s);
  const int64_t D = x.shape[0] == 0 ? 0 : x.numel() / x.shape[0];
  for (size_t i = 0; i < index.size(); ++i)
    for (int64_t d = 0; d < D; ++d) out.v[i * size_t(D) + size_t(d)] = x.v[size_t(index[i] * D + d)];
  return out;
}

// g-SpMM on an edge list: out[v] = reduce over edges e = (src[e], v) of w[e, head] * x[src[e]], with
// w [E] or [E, H] (head of a flattened feature f = f / (F / H)) or empty (1).
inline Ref gspmm(const std::vector<int64_t>& src, const std::vector<int64_t>& dst, int64_t num_nodes,
                 const Ref& x, const Ref* w, const std::string& reduce) {
  Ref msg = gather_rows(x, src);
  if (w) {
    const int64_t E = int64_t(src.size()), F = msg.numel() / std::max<int64_t>(E, 1);
    const int64_t H = w->dim() == 2 ? w->shape[1] : 1;
    for (int64_t e = 0; e < E; ++e)
      for (int64_t f = 0; f < F; ++f) msg.v[size_t(e * F + f)] *= w->v[size_t(e * H + f / (F / H))];
  }
  return scatter_rows(msg, dst, num_nodes, reduce);
}

// The segment id of every row for offsets [S + 1].
inline std::vector<int64_t> segment_ids(const Ref& offsets) {
  std::vector<int64_t> ids;
  for (int64_t s = 0; s + 1 < offsets.numel(); ++s)
    for (int64_t k = int64_t(offsets.v[size_t(s)]); k < int64_t(offsets.v[size_t(s + 1)]); ++k)
      ids.push_back(s);
  return ids;
}

inline std::vector<int64_t> as_ids(const Ref& r) { return std::vector<int64_t>(r.v.begin(), r.v.end()); }

// Ids of the distinct (node[e], rel[e]) pairs, numbered by relation, then node: the id of each
// edge's pair.
inline std::vector<int64_t> pair_ids(const std::vector<int64_t>& node, const std::vector<int64_t>& rel) {
  std::vector<std::pair<int64_t, int64_t>> keys;
  for (size_t e = 0; e < node.size(); ++e) keys.emplace_back(rel[e], node[e]);
  std::vector<std::pair<int64_t, int64_t>> uniq = keys;
  std::sort(uniq.begin(), uniq.end());
  uniq.erase(std::unique(uniq.begin(), uniq.end()), uniq.end());
  std::vector<int64_t> ids;
  for (const auto& k : keys) ids.push_back(std::lower_bound(uniq.begin(), uniq.end(), k) - uniq.begin());
  return ids;
}

// Relational GEMM: row i of segment s (rows [offsets[s], offsets[s + 1])) is
// y_i = scale[i] * x[gather[i]] @ w[s] (empty gather: x[i]; no scale: 1); the result is [M, N] rows
// y_i, or with a scatter index [rows, N] where row r sums the y_i with scatter[i] == r.
inline Ref segment_mm(const Ref& x, const std::vector<int64_t>& gather, const Ref& w,
                      const std::vector<int64_t>& offsets, const std::vector<int64_t>& scatter,
                      const Ref* scale, int64_t rows) {
  const int64_t M = offsets.back(), K = x.shape[1], N = w.shape[2];
  Ref out(Shape{scatter.empty() ? M : rows, N});
  for (size_t s = 0; s + 1 < offsets.size(); ++s)
    for (int64_t i = offsets[s]; i < offsets[s + 1]; ++i) {
      const int64_t from = gather.empty() ? i : gather[size_t(i)],
                    to = scatter.empty() ? i : scatter[size_t(i)];
      const double c = scale ? scale->v[size_t(i)] : 1.0;
      for (int64_t n = 0; n < N; ++n) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k)
          acc += x.v[size_t(from * K + k)] * w.v[size_t((int64_t(s) * K + k) * N + n)];
        out.v[size_t(to * N + n)] += c * acc;
      }
    }
  return out;
}

}  // namespace strata::testing::ref
