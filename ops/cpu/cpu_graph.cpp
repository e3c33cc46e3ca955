// The CPU's message-passing kernels: SpMM over compressed rows and the edge-wise dot (SDDMM).
// One thread per block of rows or edges, each summed in its stored order: the same bits for any
// thread count.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "ops/cpu/cpu_backend.h"
#include "strata/core/error.h"

namespace strata::cpu {

namespace {

// Calls fn(I{}) with I = int32_t or int64_t for an index tensor's dtype.
template <class Fn>
void dispatch_index(const Tensor& t, Fn&& fn) {
  if (t.dtype() == DType::i32)
    fn(int32_t{});
  else
    fn(int64_t{});
}

template <class Fn>
void dispatch_float(const Tensor& t, Fn&& fn) {
  if (t.dtype() == DType::f64)
    fn(double{});
  else
    fn(float{});
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
  const int64_t R = out.size(0), F = x.size(1);
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
              const T w = wp[widx ? int64_t(widx[k]) : k];
#pragma omp simd
              for (int64_t f = 0; f < F; ++f) o[f] += w * xr[f];
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
  const int64_t E = out.numel(), F = a.size(1);
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
          T s = T(0);
          for (int64_t f = 0; f < F; ++f) s += x[f] * y[f];
          op[k] = s;
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
