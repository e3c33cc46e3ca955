// The CPU's message-passing kernels: SpMM (sum, or max/min with arg bookkeeping) over compressed rows,
// the edge-wise dot (SDDMM) and the segment softmax.
// One thread per block of rows or edges, each summed in its stored order: the same bits for any
// thread count.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>

#include "ops/cpu/cpu_backend.h"
#include "strata/core/error.h"

namespace strata::cpu {

namespace {

// Calls fn(A{}) where `first`, else fn(B{}).
template <class A, class B, class Fn>
void dispatch_either(bool first, Fn&& fn) {
  if (first)
    fn(A{});
  else
    fn(B{});
}

// Calls fn(I{}) with I = int32_t or int64_t for an index tensor's dtype.
template <class Fn>
void dispatch_index(const Tensor& t, Fn&& fn) {
  dispatch_either<int32_t, int64_t>(t.dtype() == DType::i32, std::forward<Fn>(fn));
}

// Calls fn(T{}) with T = double or float for a float tensor's dtype.
template <class Fn>
void dispatch_float(const Tensor& t, Fn&& fn) {
  dispatch_either<double, float>(t.dtype() == DType::f64, std::forward<Fn>(fn));
}

void check_index(const char* op, const Tensor& t, const char* what) {
  STRATA_CHECK((t.dtype() == DType::i32 || t.dtype() == DType::i64) && t.is_contiguous(), TypeError, op, ": ",
               what, " must be a contiguous i32 or i64 tensor, got ", t.str());
}

void check_float(const char* op, const Tensor& t, const Tensor& like, const char* what) {
  STRATA_CHECK(t.dtype() == like.dtype() && t.is_contiguous(), TypeError, op, ": ", what, " ", t.str(),
               " must be contiguous ", dtype_name(like.dtype()));
}

}  // namespace

namespace {

// Heads of per-edge data: 1 for [E], H for [E, H]; F must split into H equal column blocks.
int64_t heads_of(const char* op, const Tensor& per_edge, int64_t F) {
  if (!per_edge.defined() || per_edge.dim() == 1) return 1;
  const int64_t H = per_edge.size(1);
  STRATA_CHECK(per_edge.dim() == 2 && H >= 1 && F % H == 0, ShapeError, op, ": per-edge data ",
               per_edge.str(), " must be [E] or [E, H] with H dividing the ", F, " features");
  return H;
}

}  // namespace

void CpuBackend::spmm(const Tensor& out, const Tensor& offsets, const Tensor& indices, const Tensor& weights,
                      const Tensor& weight_index, const Tensor& x) {
  STRATA_CHECK((x.dtype() == DType::f32 || x.dtype() == DType::f64) && x.is_contiguous() && x.dim() == 2,
               TypeError, "spmm: x must be a contiguous f32/f64 matrix, got ", x.str());
  check_float("spmm", out, x, "out");
  STRATA_CHECK(offsets.dtype() == DType::i64 && offsets.is_contiguous() && offsets.numel() == out.size(0) + 1,
               ShapeError, "spmm: offsets ", offsets.str(), " must be contiguous i64 [", out.size(0) + 1,
               "]");
  check_index("spmm", indices, "indices");
  if (weights.defined()) check_float("spmm", weights, x, "weights");
  if (weight_index.defined()) check_index("spmm", weight_index, "weight_index");
  const int64_t R = out.size(0), F = x.size(1), H = heads_of("spmm", weights, F), C = F / H;
  const int64_t* off = offsets.data<int64_t>();
  dispatch_float(x, [&](auto tf) {
    using T = decltype(tf);
    const T* xp = x.data<T>();
    T* op = out.data<T>();
    const T* wp = weights.defined() ? weights.data<T>() : nullptr;
    dispatch_index(indices, [&](auto ti) {
      using I = decltype(ti);
      const I* idx = indices.data<I>();
      auto run = [&](const auto* widx) {
#pragma omp parallel for schedule(dynamic, 64) if (R * F >= (int64_t(1) << 14))
        for (int64_t r = 0; r < R; ++r) {
          T* o = op + r * F;
          for (int64_t f = 0; f < F; ++f) o[f] = T(0);
          for (int64_t k = off[r]; k < off[r + 1]; ++k) {
            const T* xr = xp + int64_t(idx[k]) * F;
            if (wp) {
              const T* w = wp + (widx ? int64_t(widx[k]) : k) * H;
              for (int64_t h = 0; h < H; ++h) {
                const T wh = w[h];
                T* oh = o + h * C;
                const T* xh = xr + h * C;
#pragma omp simd
                for (int64_t c = 0; c < C; ++c) oh[c] += wh * xh[c];
              }
            } else {
#pragma omp simd
              for (int64_t f = 0; f < F; ++f) o[f] += xr[f];
            }
          }
        }
      };
      if (weight_index.defined())
        dispatch_index(weight_index, [&](auto tw) { run(weight_index.data<decltype(tw)>()); });
      else
        run(static_cast<const int64_t*>(nullptr));
    });
  });
}

void CpuBackend::spmm_extreme(const Tensor& out, const Tensor& arg, const Tensor& offsets,
                              const Tensor& indices, const Tensor& weight_index, const Tensor& x,
                              bool minimum) {
  STRATA_CHECK((x.dtype() == DType::f32 || x.dtype() == DType::f64) && x.is_contiguous() && x.dim() == 2,
               TypeError, "spmm_extreme: x must be a contiguous f32/f64 matrix, got ", x.str());
  check_float("spmm_extreme", out, x, "out");
  STRATA_CHECK(arg.dtype() == DType::i64 && arg.is_contiguous() && arg.numel() == out.numel(), TypeError,
               "spmm_extreme: arg ", arg.str(), " must be contiguous i64 shaped like out ", out.str());
  STRATA_CHECK(offsets.dtype() == DType::i64 && offsets.is_contiguous() && offsets.numel() == out.size(0) + 1,
               ShapeError, "spmm_extreme: offsets ", offsets.str(), " must be contiguous i64 [",
               out.size(0) + 1, "]");
  check_index("spmm_extreme", indices, "indices");
  if (weight_index.defined()) check_index("spmm_extreme", weight_index, "weight_index");
  const int64_t R = out.size(0), F = x.size(1);
  const int64_t* off = offsets.data<int64_t>();
  int64_t* ap = arg.data<int64_t>();
  dispatch_float(x, [&](auto tf) {
    using T = decltype(tf);
    const T* xp = x.data<T>();
    T* op = out.data<T>();
    dispatch_index(indices, [&](auto ti) {
      const auto* idx = indices.data<decltype(ti)>();
      auto run = [&](const auto* widx) {
#pragma omp parallel for schedule(dynamic, 64) if (R * F >= (int64_t(1) << 14))
        for (int64_t r = 0; r < R; ++r) {
          T* o = op + r * F;
          int64_t* a = ap + r * F;
          if (off[r] == off[r + 1]) {
            for (int64_t f = 0; f < F; ++f) o[f] = T(0), a[f] = -1;
            continue;
          }
          const int64_t k0 = off[r];
          const T* x0 = xp + int64_t(idx[k0]) * F;
          const int64_t p0 = widx ? int64_t(widx[k0]) : k0;
          for (int64_t f = 0; f < F; ++f) o[f] = x0[f], a[f] = p0;
          for (int64_t k = k0 + 1; k < off[r + 1]; ++k) {
            const T* xr = xp + int64_t(idx[k]) * F;
            const int64_t p = widx ? int64_t(widx[k]) : k;
            for (int64_t f = 0; f < F; ++f) {
              // NaN propagates as in PyTorch's scatter_reduce: the first NaN is kept, and its edge.
              const bool better = (xr[f] != xr[f] && o[f] == o[f]) || (minimum ? xr[f] < o[f] : xr[f] > o[f]);
              if (better) o[f] = xr[f], a[f] = p;
            }
          }
        }
      };
      if (weight_index.defined())
        dispatch_index(weight_index, [&](auto tw) { run(weight_index.data<decltype(tw)>()); });
      else
        run(static_cast<const int64_t*>(nullptr));
    });
  });
}

void CpuBackend::spmm_extreme_backward(const Tensor& grad_x, const Tensor& offsets, const Tensor& positions,
                                       const Tensor& rows, const Tensor& arg, const Tensor& grad_out) {
  STRATA_CHECK((grad_out.dtype() == DType::f32 || grad_out.dtype() == DType::f64) &&
                   grad_out.is_contiguous() && grad_out.dim() == 2,
               TypeError, "spmm_extreme_backward: grad_out must be a contiguous f32/f64 matrix, got ",
               grad_out.str());
  check_float("spmm_extreme_backward", grad_x, grad_out, "grad_x");
  STRATA_CHECK(arg.dtype() == DType::i64 && arg.is_contiguous() && arg.numel() == grad_out.numel(), TypeError,
               "spmm_extreme_backward: arg ", arg.str(), " must be contiguous i64 shaped like grad_out ",
               grad_out.str());
  STRATA_CHECK(
      offsets.dtype() == DType::i64 && offsets.is_contiguous() && offsets.numel() == grad_x.size(0) + 1,
      ShapeError, "spmm_extreme_backward: offsets ", offsets.str(), " must be contiguous i64 [",
      grad_x.size(0) + 1, "]");
  check_index("spmm_extreme_backward", positions, "positions");
  check_index("spmm_extreme_backward", rows, "rows");
  const int64_t N = grad_x.size(0), F = grad_out.size(1);
  const int64_t* off = offsets.data<int64_t>();
  const int64_t* ap = arg.data<int64_t>();
  dispatch_float(grad_out, [&](auto tf) {
    using T = decltype(tf);
    const T* gp = grad_out.data<T>();
    T* gx = grad_x.data<T>();
    dispatch_index(positions, [&](auto tp) {
      const auto* pos = positions.data<decltype(tp)>();
      dispatch_index(rows, [&](auto tr) {
        const auto* rw = rows.data<decltype(tr)>();
#pragma omp parallel for schedule(dynamic, 64) if (N * F >= (int64_t(1) << 14))
        for (int64_t n = 0; n < N; ++n) {
          T* o = gx + n * F;
          for (int64_t f = 0; f < F; ++f) o[f] = T(0);
          for (int64_t k = off[n]; k < off[n + 1]; ++k) {
            const int64_t r = int64_t(rw[k]), p = int64_t(pos[k]);
            const int64_t* a = ap + r * F;
            const T* g = gp + r * F;
            for (int64_t f = 0; f < F; ++f)
              if (a[f] == p) o[f] += g[f];
          }
        }
      });
    });
  });
}

void CpuBackend::sddmm_dot(const Tensor& out, const Tensor& a_index, const Tensor& a, const Tensor& b_index,
                           const Tensor& b) {
  STRATA_CHECK((a.dtype() == DType::f32 || a.dtype() == DType::f64) && a.is_contiguous() && a.dim() == 2 &&
                   b.dim() == 2 && a.size(1) == b.size(1),
               TypeError, "sddmm_dot: a ", a.str(), " and b ", b.str(),
               " must be contiguous matrices of one width");
  check_float("sddmm_dot", b, a, "b");
  check_float("sddmm_dot", out, a, "out");
  check_index("sddmm_dot", a_index, "a_index");
  check_index("sddmm_dot", b_index, "b_index");
  const int64_t E = out.size(0), F = a.size(1), H = heads_of("sddmm_dot", out, F), C = F / H;
  dispatch_float(a, [&](auto tf) {
    using T = decltype(tf);
    const T *ap = a.data<T>(), *bp = b.data<T>();
    T* op = out.data<T>();
    dispatch_index(a_index, [&](auto ta) {
      const auto* ai = a_index.data<decltype(ta)>();
      dispatch_index(b_index, [&](auto tb) {
        const auto* bi = b_index.data<decltype(tb)>();
#pragma omp parallel for schedule(static) if (E * F >= (int64_t(1) << 14))
        for (int64_t k = 0; k < E; ++k) {
          const T* x = ap + int64_t(ai[k]) * F;
          const T* y = bp + int64_t(bi[k]) * F;
          for (int64_t h = 0; h < H; ++h) {
            T s = T(0);
            for (int64_t c = h * C; c < (h + 1) * C; ++c) s += x[c] * y[c];
            op[k * H + h] = s;
          }
        }
      });
    });
  });
}

namespace {

void check_segments(const char* op, const Tensor& offsets, const Tensor& t) {
  STRATA_CHECK(offsets.dtype() == DType::i64 && offsets.is_contiguous() && offsets.numel() >= 1, TypeError,
               op, ": offsets must be contiguous i64, got ", offsets.str());
  STRATA_CHECK((t.dtype() == DType::f32 || t.dtype() == DType::f64) && t.is_contiguous() && t.dim() >= 1,
               TypeError, op, ": ", t.str(), " must be a contiguous f32/f64 tensor");
  const int64_t* off = offsets.data<int64_t>();
  STRATA_CHECK(off[0] == 0 && off[offsets.numel() - 1] == t.size(0), ShapeError, op, ": offsets cover [",
               off[0], ", ", off[offsets.numel() - 1], "), the rows [0, ", t.size(0), ")");
}

}  // namespace

void CpuBackend::segment_softmax(const Tensor& out, const Tensor& offsets, const Tensor& scores) {
  check_segments("segment_softmax", offsets, scores);
  check_float("segment_softmax", out, scores, "out");
  const int64_t S = offsets.numel() - 1, H = scores.numel() / std::max<int64_t>(scores.size(0), 1);
  const int64_t* off = offsets.data<int64_t>();
  dispatch_float(scores, [&](auto tf) {
    using T = decltype(tf);
    const T* x = scores.data<T>();
    T* y = out.data<T>();
#pragma omp parallel for schedule(dynamic, 64) if (scores.numel() >= (int64_t(1) << 14))
    for (int64_t s = 0; s < S; ++s) {
      const int64_t b = off[s], e = off[s + 1];
      for (int64_t h = 0; h < H; ++h) {
        T m = -std::numeric_limits<T>::infinity();
        for (int64_t k = b; k < e; ++k) m = std::max(m, x[k * H + h]);
        T sum = T(0);
        for (int64_t k = b; k < e; ++k) sum += (y[k * H + h] = std::exp(x[k * H + h] - m));
        for (int64_t k = b; k < e; ++k) y[k * H + h] /= sum;
      }
    }
  });
}

void CpuBackend::segment_softmax_backward(const Tensor& grad_scores, const Tensor& offsets,
                                          const Tensor& grad_out, const Tensor& out) {
  check_segments("segment_softmax_backward", offsets, out);
  check_float("segment_softmax_backward", grad_out, out, "grad_out");
  check_float("segment_softmax_backward", grad_scores, out, "grad_scores");
  const int64_t S = offsets.numel() - 1, H = out.numel() / std::max<int64_t>(out.size(0), 1);
  const int64_t* off = offsets.data<int64_t>();
  dispatch_float(out, [&](auto tf) {
    using T = decltype(tf);
    const T *y = out.data<T>(), *g = grad_out.data<T>();
    T* gs = grad_scores.data<T>();
#pragma omp parallel for schedule(dynamic, 64) if (out.numel() >= (int64_t(1) << 14))
    for (int64_t s = 0; s < S; ++s) {
      const int64_t b = off[s], e = off[s + 1];
      for (int64_t h = 0; h < H; ++h) {
        T dot = T(0);
        for (int64_t k = b; k < e; ++k) dot += g[k * H + h] * y[k * H + h];
        for (int64_t k = b; k < e; ++k) gs[k * H + h] = y[k * H + h] * (g[k * H + h] - dot);
      }
    }
  });
}

}  // namespace strata::cpu
