// Ref and the naive double-precision reference kernels the conformance harness compares every
// op against: plain loops over row-major values, written for clarity, never for speed.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "strata/core/dtype.h"
#include "strata/core/shape.h"

namespace strata::testing {

using Index = std::vector<int64_t>;

// A dense row-major tensor of doubles. `dtype` is set only where the op's output dtype does not
// follow its inputs (comparisons give bool, argmax gives i64, to() gives its target); such
// outputs with an integral dtype are compared exactly.
struct Ref {
  Shape shape;
  std::vector<double> v;
  std::optional<DType> dtype;

  Ref() = default;
  explicit Ref(Shape s, double fill = 0.0) : shape(std::move(s)), v(size_t(shape_numel(shape)), fill) {}
  Ref(Shape s, std::vector<double> values) : shape(std::move(s)), v(std::move(values)) {}
  int64_t numel() const { return int64_t(v.size()); }
  int64_t dim() const { return int64_t(shape.size()); }
  int64_t offset(const Index& idx) const {
    int64_t o = 0;
    for (size_t d = 0; d < shape.size(); ++d) o = o * shape[d] + idx[d];
    return o;
  }
  double& at(const Index& idx) { return v[size_t(offset(idx))]; }
  double at(const Index& idx) const { return v[size_t(offset(idx))]; }
  Ref as(DType t) && {
    dtype = t;
    return std::move(*this);
  }
};

namespace ref {

// max and min as PyTorch's relu, clamp, max-pool and scatter_reduce see them: a NaN on either
// side wins (std::max keeps its first argument when the comparison is false, so it would not).
inline double nan_max(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? std::numeric_limits<double>::quiet_NaN() : std::max(a, b);
}
inline double nan_min(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? std::numeric_limits<double>::quiet_NaN() : std::min(a, b);
}

inline int64_t wrap(int64_t d, int64_t n) { return d < 0 ? d + n : d; }

inline Index unravel(int64_t flat, const Shape& s) {
  Index idx(s.size());
  for (size_t d = s.size(); d-- > 0;) {
    idx[d] = flat % s[d];
    flat /= s[d];
  }
  return idx;
}

// NumPy broadcasting of two shapes (the harness's own, independent of strata's).
inline Shape broadcast(const Shape& a, const Shape& b) {
  Shape out(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    int64_t da = i < out.size() - a.size() ? 1 : a[i - (out.size() - a.size())];
    int64_t db = i < out.size() - b.size() ? 1 : b[i - (out.size() - b.size())];
    out[i] = da == 1 ? db : da;
  }
  return out;
}

// Offset into a tensor of shape `small` for an index of the broadcast shape (right-aligned,
// size-1 dims repeat).
inline int64_t broadcast_offset(const Shape& small, const Index& big) {
  const size_t lead = big.size() - small.size();
  int64_t o = 0;
  for (size_t d = 0; d < small.size(); ++d) o = o * small[d] + (small[d] == 1 ? 0 : big[lead + d]);
  return o;
}

template <class F>
Ref map(const Ref& a, F f) {
  Ref out(a.shape);
  for (int64_t i = 0; i < a.numel(); ++i) out.v[size_t(i)] = f(a.v[size_t(i)]);
  return out;
}

template <class F>
Ref zip(const Ref& a, const Ref& b, F f) {
  Ref out(broadcast(a.shape, b.shape));
  for (int64_t i = 0; i < out.numel(); ++i) {
    Index idx = unravel(i, out.shape);
    out.v[size_t(i)] = f(a.v[size_t(broadcast_offset(a.shape, idx))], b.v[size_t(broadcast_offset(b.shape, idx))]);
  }
  return out;
}

inline Ref where(const Ref& c, const Ref& a, const Ref& b) {
  Ref out(broadcast(c.shape, broadcast(a.shape, b.shape)));
  for (int64_t i = 0; i < out.numel(); ++i) {
    Index idx = unravel(i, out.shape);
    bool cv = c.v[size_t(broadcast_offset(c.shape, idx))] != 0.0;
    out.v[size_t(i)] = cv ? a.v[size_t(broadcast_offset(a.shape, idx))] : b.v[size_t(broadcast_offset(b.shape, idx))];
  }
  return out;
}

inline Ref broadcast_to(const Ref& a, const Shape& shape) {
  Ref out(shape);
  for (int64_t i = 0; i < out.numel(); ++i) out.v[size_t(i)] = a.v[size_t(broadcast_offset(a.shape, unravel(i, shape)))];
  return out;
}

// Same values (row-major), new shape.
inline Ref reshape(Ref a, Shape shape) {
  a.shape = std::move(shape);
  return a;
}

// Groups the elements of `a` by output position, reducing `dims` (all when empty), and calls
// f(values in row-major order) for each output.
template <class F>
Ref reduce(const Ref& a, const std::vector<int64_t>& dims, bool keepdim, F f) {
  std::vector<bool> red(size_t(a.dim()), dims.empty());
  for (int64_t d : dims) red[size_t(wrap(d, a.dim()))] = true;
  Shape keep, out_shape;
  for (int64_t d = 0; d < a.dim(); ++d) {
    keep.push_back(red[size_t(d)] ? 1 : a.shape[size_t(d)]);
    if (!red[size_t(d)] || keepdim) out_shape.push_back(keep.back());
  }
  Ref k(keep);
  std::vector<std::vector<double>> groups(size_t(k.numel()));
  for (int64_t i = 0; i < a.numel(); ++i) {
    Index idx = unravel(i, a.shape);
    for (size_t d = 0; d < idx.size(); ++d)
      if (red[d]) idx[d] = 0;
    groups[size_t(k.offset(idx))].push_back(a.v[size_t(i)]);
  }
  Ref out(out_shape);
  for (size_t g = 0; g < groups.size(); ++g) out.v[g] = f(groups[g]);
  return out;
}

inline double sum_of(const std::vector<double>& x) {
  double s = 0;
  for (double v : x) s += v;
  return s;
}
inline Ref sum(const Ref& a, const std::vector<int64_t>& dims = {}, bool keepdim = false) {
  return reduce(a, dims, keepdim, sum_of);
}
inline Ref mean(const Ref& a, const std::vector<int64_t>& dims = {}, bool keepdim = false) {
  return reduce(a, dims, keepdim, [](const std::vector<double>& x) { return sum_of(x) / double(x.size()); });
}
inline Ref var(const Ref& a, const std::vector<int64_t>& dims, int64_t correction, bool keepdim) {
  return reduce(a, dims, keepdim, [correction](const std::vector<double>& x) {
    double m = sum_of(x) / double(x.size()), ss = 0;
    for (double v : x) ss += (v - m) * (v - m);
    return ss / double(int64_t(x.size()) - correction);
  });
}
// torch.linalg.vector_norm.
inline Ref norm(const Ref& a, double p, const std::vector<int64_t>& dims, bool keepdim) {
  return reduce(a, dims, keepdim, [p](const std::vector<double>& x) {
    double r = 0;
    for (double v : x) r = std::isinf(p) ? std::max(r, std::abs(v)) : r + std::pow(std::abs(v), p);
    return std::isinf(p) ? r : std::pow(r, 1.0 / p);
  });
}
// First position of the max (or min): PyTorch's tie rule.
inline int64_t arg_extremum(const std::vector<double>& x, bool is_max) {
  int64_t best = 0;
  for (size_t i = 1; i < x.size(); ++i)
    if (is_max ? x[i] > x[size_t(best)] : x[i] < x[size_t(best)]) best = int64_t(i);
  return best;
}
inline Ref extremum(const Ref& a, const std::vector<int64_t>& dims, bool keepdim, bool is_max) {
  return reduce(a, dims, keepdim, [is_max](const std::vector<double>& x) { return x[size_t(arg_extremum(x, is_max))]; });
}
inline Ref arg_extremum(const Ref& a, int64_t dim, bool keepdim, bool is_max) {
  return reduce(a, {dim}, keepdim, [is_max](const std::vector<double>& x) { return double(arg_extremum(x, is_max)); })
      .as(DType::i64);
}

// torch.matmul: 1-D operands are promoted and the added dim removed afterwards; batch dims
// broadcast.
inline Ref matmul(Ref a, Ref b) {
  const bool a1 = a.dim() == 1, b1 = b.dim() == 1;
  if (a1) a.shape.insert(a.shape.begin(), 1);
  if (b1) b.shape.push_back(1);
  const int64_t M = a.shape[a.shape.size() - 2], K = a.shape.back(), N = b.shape.back();
  Shape ba(a.shape.begin(), a.shape.end() - 2), bb(b.shape.begin(), b.shape.end() - 2);
  Shape batch = broadcast(ba, bb);
  Shape os = batch;
  os.push_back(M);
  os.push_back(N);
  Ref out(os);
  const int64_t nb = shape_numel(batch);
  for (int64_t bi = 0; bi < nb; ++bi) {
    Index bidx = unravel(bi, batch);
    const double* A = a.v.data() + broadcast_offset(ba, bidx) * M * K;
    const double* B = b.v.data() + broadcast_offset(bb, bidx) * K * N;
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k) s += A[m * K + k] * B[k * N + n];
        out.v[size_t((bi * M + m) * N + n)] = s;
      }
  }
  if (a1) out.shape.erase(out.shape.end() - 2);
  if (b1) out.shape.pop_back();
  return out;
}

// [outer, D, inner] view of a shape around `dim`.
struct Split3 {
  int64_t outer = 1, d = 1, inner = 1;
};
inline Split3 split3(const Shape& s, int64_t dim) {
  Split3 r;
  r.d = s[size_t(dim)];
  for (int64_t i = 0; i < dim; ++i) r.outer *= s[size_t(i)];
  for (size_t i = size_t(dim) + 1; i < s.size(); ++i) r.inner *= s[i];
  return r;
}

inline Ref softmax(const Ref& a, int64_t dim, bool log) {
  dim = wrap(dim, a.dim());
  Split3 s = split3(a.shape, dim);
  Ref out(a.shape);
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t in = 0; in < s.inner; ++in) {
      auto at = [&](int64_t j) { return size_t((o * s.d + j) * s.inner + in); };
      double m = -std::numeric_limits<double>::infinity(), z = 0;
      for (int64_t j = 0; j < s.d; ++j) m = std::max(m, a.v[at(j)]);
      for (int64_t j = 0; j < s.d; ++j) z += std::exp(a.v[at(j)] - m);
      for (int64_t j = 0; j < s.d; ++j)
        out.v[at(j)] = log ? a.v[at(j)] - m - std::log(z) : std::exp(a.v[at(j)] - m) / z;
    }
  return out;
}

// Normalizes over the trailing `k` dims; w and b may be null.
inline Ref layer_norm(const Ref& x, int64_t k, const Ref* w, const Ref* b, double eps) {
  int64_t C = 1;
  for (int64_t i = x.dim() - k; i < x.dim(); ++i) C *= x.shape[size_t(i)];
  const int64_t R = x.numel() / C;
  Ref out(x.shape);
  for (int64_t r = 0; r < R; ++r) {
    double mu = 0, var = 0;
    for (int64_t c = 0; c < C; ++c) mu += x.v[size_t(r * C + c)];
    mu /= double(C);
    for (int64_t c = 0; c < C; ++c) var += (x.v[size_t(r * C + c)] - mu) * (x.v[size_t(r * C + c)] - mu);
    var /= double(C);
    for (int64_t c = 0; c < C; ++c) {
      double y = (x.v[size_t(r * C + c)] - mu) / std::sqrt(var + eps);
      if (w) y *= w->v[size_t(c)];
      if (b) y += b->v[size_t(c)];
      out.v[size_t(r * C + c)] = y;
    }
  }
  return out;
}

enum class Reduce { None, Mean, Sum };
inline Ref cross_entropy(const Ref& logits, const Ref& target, int64_t ignore, Reduce red) {
  const int64_t C = logits.shape.back(), R = logits.numel() / C;
  Ref loss(target.shape);
  double total = 0, count = 0;
  for (int64_t r = 0; r < R; ++r) {
    const int64_t t = int64_t(target.v[size_t(r)]);
    if (t == ignore) continue;
    double m = -std::numeric_limits<double>::infinity(), z = 0;
    for (int64_t c = 0; c < C; ++c) m = std::max(m, logits.v[size_t(r * C + c)]);
    for (int64_t c = 0; c < C; ++c) z += std::exp(logits.v[size_t(r * C + c)] - m);
    loss.v[size_t(r)] = m + std::log(z) - logits.v[size_t(r * C + t)];
    total += loss.v[size_t(r)];
    count += 1;
  }
  if (red == Reduce::None) return loss;
  return Ref({}, {red == Reduce::Sum ? total : total / count});
}

inline Ref permute(const Ref& a, const Shape& dims) {
  Shape s;
  for (int64_t d : dims) s.push_back(a.shape[size_t(wrap(d, a.dim()))]);
  Ref out(s);
  for (int64_t i = 0; i < out.numel(); ++i) {
    Index oi = unravel(i, s), ai(a.shape.size());
    for (size_t k = 0; k < dims.size(); ++k) ai[size_t(wrap(dims[k], a.dim()))] = oi[k];
    out.v[size_t(i)] = a.at(ai);
  }
  return out;
}
inline Ref transpose(const Ref& a, int64_t d0, int64_t d1) {
  Shape dims;
  for (int64_t i = 0; i < a.dim(); ++i) dims.push_back(i);
  std::swap(dims[size_t(wrap(d0, a.dim()))], dims[size_t(wrap(d1, a.dim()))]);
  return permute(a, dims);
}

// Elements start, start + step, ... < end along dim (start/end already in range).
inline Ref slice(const Ref& a, int64_t dim, int64_t start, int64_t end, int64_t step = 1) {
  dim = wrap(dim, a.dim());
  Shape s = a.shape;
  s[size_t(dim)] = (end - start + step - 1) / step;
  Ref out(s);
  for (int64_t i = 0; i < out.numel(); ++i) {
    Index idx = unravel(i, s);
    idx[size_t(dim)] = start + idx[size_t(dim)] * step;
    out.v[size_t(i)] = a.at(idx);
  }
  return out;
}
inline Ref select(const Ref& a, int64_t dim, int64_t index) {
  dim = wrap(dim, a.dim());
  Ref out = slice(a, dim, index, index + 1);
  out.shape.erase(out.shape.begin() + dim);
  return out;
}

inline Ref cat(const std::vector<Ref>& xs, int64_t dim) {
  dim = wrap(dim, xs[0].dim());
  Shape s = xs[0].shape;
  s[size_t(dim)] = 0;
  for (const Ref& x : xs) s[size_t(dim)] += x.shape[size_t(dim)];
  Ref out(s);
  int64_t at = 0;
  for (const Ref& x : xs) {
    for (int64_t i = 0; i < x.numel(); ++i) {
      Index idx = unravel(i, x.shape);
      idx[size_t(dim)] += at;
      out.at(idx) = x.v[size_t(i)];
    }
    at += x.shape[size_t(dim)];
  }
  return out;
}
inline Ref unsqueeze(Ref a, int64_t dim) {
  a.shape.insert(a.shape.begin() + wrap(dim, a.dim() + 1), 1);
  return a;
}
inline Ref stack(const std::vector<Ref>& xs, int64_t dim) {
  std::vector<Ref> u;
  for (const Ref& x : xs) u.push_back(unsqueeze(x, dim));
  return cat(u, dim);
}

inline Ref index_select(const Ref& x, int64_t dim, const Ref& index) {
  dim = wrap(dim, x.dim());
  Shape s = x.shape;
  s[size_t(dim)] = index.numel();
  Ref out(s);
  for (int64_t i = 0; i < out.numel(); ++i) {
    Index idx = unravel(i, s);
    idx[size_t(dim)] = int64_t(index.v[size_t(idx[size_t(dim)])]);
    out.v[size_t(i)] = x.at(idx);
  }
  return out;
}
inline Ref gather(const Ref& x, int64_t dim, const Ref& index) {
  dim = wrap(dim, x.dim());
  Ref out(index.shape);
  for (int64_t i = 0; i < out.numel(); ++i) {
    Index idx = unravel(i, index.shape);
    idx[size_t(dim)] = int64_t(index.v[size_t(i)]);
    out.v[size_t(i)] = x.at(idx);
  }
  return out;
}
inline Ref scatter_add(Ref x, int64_t dim, const Ref& index, const Ref& src) {
  dim = wrap(dim, x.dim());
  for (int64_t i = 0; i < index.numel(); ++i) {
    Index idx = unravel(i, index.shape);
    idx[size_t(dim)] = int64_t(index.v[size_t(i)]);
    x.at(idx) += src.v[size_t(i)];
  }
  return x;
}
inline Ref index_add(Ref x, int64_t dim, const Ref& index, const Ref& src) {
  dim = wrap(dim, x.dim());
  for (int64_t i = 0; i < src.numel(); ++i) {
    Index idx = unravel(i, src.shape);
    idx[size_t(dim)] = int64_t(index.v[size_t(idx[size_t(dim)])]);
    x.at(idx) += src.v[size_t(i)];
  }
  return x;
}

// softmax(q k^T * scale + mask) v, composed from the references above. `mask` (may be null) is
// additive, or boolean (true = attend) when `bool_mask`; causal masks keys s > t.
inline Ref attention(const Ref& q, const Ref& k, const Ref& v, const Ref* mask, bool bool_mask, bool causal,
                     double scale) {
  const double ninf = -std::numeric_limits<double>::infinity();
  Ref s = map(matmul(q, transpose(k, -1, -2)), [scale](double x) { return x * scale; });
  if (mask) {
    s = bool_mask ? where(*mask, s, Ref({}, std::vector<double>{ninf}))
                  : zip(s, *mask, [](double a, double b) { return a + b; });
  }
  if (causal) {
    const int64_t T = s.shape[s.shape.size() - 2], S = s.shape.back();
    for (int64_t i = 0; i < s.numel(); ++i)
      if ((i % S) > (i / S) % T) s.v[size_t(i)] = ninf;
  }
  return matmul(softmax(s, -1, false), v);
}

}  // namespace ref
}  // namespace strata::testing
