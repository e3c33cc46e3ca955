// CPU row kernels: softmax / log-softmax, layer norm and fused softmax-cross-entropy, each
// forward and backward, over contiguous [rows, cols] f32/f64 tensors.
#include <atomic>
#include <cmath>
#include <limits>

#include "ops/cpu/cpu_backend.h"
#include "ops/cpu/strided_loop.h"
#include "ops/cpu/cpu_vec_math.h"

namespace strata::cpu {

namespace {

// log(sum(exp(x))) with the max subtracted, accumulated in double for f32 rows (row_max and
// exp_shifted_total: cpu_vec_math.h, AVX-512 where compiled for it).
template <class T>
double row_logsumexp(const T* x, int64_t n) {
  const T m = row_max(x, n);
  if (std::isinf(m)) return double(m);
  return double(m) + std::log(exp_shifted_total(x, n, m));
}

template <class F>
void for_rows(int64_t rows, int64_t cols, F f) {
#pragma omp parallel for schedule(static) if (rows * cols > kParallelGrain)
  for (int64_t r = 0; r < rows; ++r) f(r);
}

template <class T>
void softmax_typed(const Tensor& out, const Tensor& in, bool log) {
  const int64_t C = in.size(-1), R = in.numel() / std::max<int64_t>(C, 1);
  const T* x = in.data<T>();
  T* y = out.data<T>();
  for_rows(R, C, [&](int64_t r) {
    const T* xr = x + r * C;
    T* yr = y + r * C;
    T m = row_max(xr, C);
    double s = 0;
    for (int64_t i = 0; i < C; ++i) s += std::exp(double(xr[i] - m));
    if (log) {
      T lse = T(double(m) + std::log(s));
      for (int64_t i = 0; i < C; ++i) yr[i] = xr[i] - lse;
    } else {
      T inv = T(1.0 / s);
      for (int64_t i = 0; i < C; ++i) yr[i] = T(std::exp(xr[i] - m)) * inv;
    }
  });
}

template <class T>
void softmax_backward_typed(const Tensor& gin, const Tensor& gout, const Tensor& out, bool log) {
  const int64_t C = out.size(-1), R = out.numel() / std::max<int64_t>(C, 1);
  const T* g = gout.data<T>();
  const T* y = out.data<T>();
  T* dx = gin.data<T>();
  for_rows(R, C, [&](int64_t r) {
    const T* gr = g + r * C;
    const T* yr = y + r * C;
    T* dr = dx + r * C;
    double s = 0;
    if (log) {  // dx = g - exp(y) * sum(g)
      for (int64_t i = 0; i < C; ++i) s += double(gr[i]);
      for (int64_t i = 0; i < C; ++i) dr[i] = gr[i] - std::exp(yr[i]) * T(s);
    } else {  // dx = y * (g - sum(g * y))
      for (int64_t i = 0; i < C; ++i) s += double(gr[i]) * double(yr[i]);
      for (int64_t i = 0; i < C; ++i) dr[i] = yr[i] * (gr[i] - T(s));
    }
  });
}

template <class T>
void layer_norm_typed(const Tensor& out, const Tensor& mean, const Tensor& rstd, const Tensor& x,
                      const Tensor& w, const Tensor& b, double eps) {
  const int64_t C = x.size(-1), R = x.numel() / std::max<int64_t>(C, 1);
  const T* xp = x.data<T>();
  T* yp = out.data<T>();
  T* mp = mean.data<T>();
  T* rp = rstd.data<T>();
  const T* wp = w.defined() ? w.data<T>() : nullptr;
  const T* bp = b.defined() ? b.data<T>() : nullptr;
  for_rows(R, C, [&](int64_t r) {
    const T* xr = xp + r * C;
    T* yr = yp + r * C;
    double s = 0;
    for (int64_t i = 0; i < C; ++i) s += double(xr[i]);
    double mu = s / double(C);
    double v = 0;
    for (int64_t i = 0; i < C; ++i) {
      double d = double(xr[i]) - mu;
      v += d * d;
    }
    double rs = 1.0 / std::sqrt(v / double(C) + eps);
    mp[r] = T(mu);
    rp[r] = T(rs);
    const T m = T(mu), s_ = T(rs);
    for (int64_t i = 0; i < C; ++i) {
      T n = (xr[i] - m) * s_;
      yr[i] = (wp ? n * wp[i] : n) + (bp ? bp[i] : T(0));
    }
  });
}

template <class T>
void layer_norm_backward_typed(const Tensor& gx, const Tensor& gw, const Tensor& gb,
                               const Tensor& gy, const Tensor& x, const Tensor& mean,
                               const Tensor& rstd, const Tensor& w) {
  const int64_t C = x.size(-1), R = x.numel() / std::max<int64_t>(C, 1);
  const T* xp = x.data<T>();
  const T* gp = gy.data<T>();
  const T* mp = mean.data<T>();
  const T* rp = rstd.data<T>();
  const T* wp = w.defined() ? w.data<T>() : nullptr;
  if (gx.defined()) {
    T* dx = gx.data<T>();
    for_rows(R, C, [&](int64_t r) {
      const T* xr = xp + r * C;
      const T* gr = gp + r * C;
      T* dr = dx + r * C;
      const T m = mp[r], rs = rp[r];
      // dx = rstd * (g*w - mean(g*w) - xhat * mean(g*w*xhat))
      double s1 = 0, s2 = 0;
      for (int64_t i = 0; i < C; ++i) {
        double gw_ = double(gr[i]) * (wp ? double(wp[i]) : 1.0);
        double xh = double((xr[i] - m) * rs);
        s1 += gw_;
        s2 += gw_ * xh;
      }
      const T a = T(s1 / double(C)), c = T(s2 / double(C));
      for (int64_t i = 0; i < C; ++i) {
        T gw_ = gr[i] * (wp ? wp[i] : T(1));
        T xh = (xr[i] - m) * rs;
        dr[i] = rs * (gw_ - a - xh * c);
      }
    });
  }
  if (gw.defined() || gb.defined()) {
    // Column sums over rows, in row order per column: parallel over columns.
    T* dw = gw.defined() ? gw.data<T>() : nullptr;
    T* db = gb.defined() ? gb.data<T>() : nullptr;
#pragma omp parallel for schedule(static) if (R * C > kParallelGrain)
    for (int64_t c0 = 0; c0 < C; c0 += 64) {
      const int64_t c1 = std::min(C, c0 + 64);
      double sw[64] = {}, sb[64] = {};
      for (int64_t r = 0; r < R; ++r) {
        const T* xr = xp + r * C;
        const T* gr = gp + r * C;
        const double m = double(mp[r]), rs = double(rp[r]);
        for (int64_t c = c0; c < c1; ++c) {
          sw[c - c0] += double(gr[c]) * (double(xr[c]) - m) * rs;
          sb[c - c0] += double(gr[c]);
        }
      }
      for (int64_t c = c0; c < c1; ++c) {
        if (dw) dw[c] = T(sw[c - c0]);
        if (db) db[c] = T(sb[c - c0]);
      }
    }
  }
}

template <class T>
void cross_entropy_typed(const Tensor& loss, const Tensor& lse, const Tensor& logits,
                         const Tensor& target, int64_t ignore) {
  const int64_t V = logits.size(-1), R = logits.numel() / std::max<int64_t>(V, 1);
  const T* x = logits.data<T>();
  const int64_t* t = target.data<int64_t>();
  T* lp = loss.data<T>();
  T* sp = lse.data<T>();
  std::atomic<bool> bad{false};
  for_rows(R, V, [&](int64_t r) {
    const T* xr = x + r * V;
    double l = row_logsumexp(xr, V);
    sp[r] = T(l);
    if (t[r] == ignore) {
      lp[r] = T(0);
    } else if (t[r] < 0 || t[r] >= V) {
      bad.store(true, std::memory_order_relaxed);
      lp[r] = T(0);
    } else {
      lp[r] = T(l - double(xr[t[r]]));
    }
  });
  STRATA_CHECK(!bad.load(), IndexError, "cross_entropy: a target is outside [0, ", V, ") for logits ",
               logits.str());
}

template <class T>
void cross_entropy_backward_typed(const Tensor& gl, const Tensor& gloss, const Tensor& logits,
                                  const Tensor& lse, const Tensor& target, int64_t ignore) {
  const int64_t V = logits.size(-1), R = logits.numel() / std::max<int64_t>(V, 1);
  const T* x = logits.data<T>();
  const int64_t* t = target.data<int64_t>();
  const T* sp = lse.data<T>();
  const T* gp = gloss.data<T>();
  T* d = gl.data<T>();
  for_rows(R, V, [&](int64_t r) {
    const T* xr = x + r * V;
    T* dr = d + r * V;
    if (t[r] == ignore || t[r] < 0 || t[r] >= V) {  // out-of-range targets were rejected in forward
      for (int64_t i = 0; i < V; ++i) dr[i] = T(0);
      return;
    }
    const T g = gp[r], l = sp[r];
    scaled_exp_shifted(dr, xr, V, l, g);
    dr[t[r]] -= g;
  });
}

template <class F>
void by_dtype(const Tensor& t, F f) {
  if (t.dtype() == DType::f32) f(float{});
  else f(double{});
}

}  // namespace

void CpuBackend::softmax(const Tensor& out, const Tensor& in, bool log) {
  check_row_kernel_input(in, "softmax");
  by_dtype(in, [&](auto v) { softmax_typed<decltype(v)>(out, in, log); });
}

void CpuBackend::softmax_backward(const Tensor& gin, const Tensor& gout, const Tensor& out, bool log) {
  check_row_kernel_input(gout, "softmax_backward");
  check_row_kernel_input(out, "softmax_backward");
  by_dtype(out, [&](auto v) { softmax_backward_typed<decltype(v)>(gin, gout, out, log); });
}

void CpuBackend::layer_norm(const Tensor& out, const Tensor& mean, const Tensor& rstd, const Tensor& x,
                            const Tensor& w, const Tensor& b, double eps) {
  check_row_kernel_input(x, "layer_norm");
  by_dtype(x, [&](auto v) { layer_norm_typed<decltype(v)>(out, mean, rstd, x, w, b, eps); });
}

void CpuBackend::layer_norm_backward(const Tensor& gx, const Tensor& gw, const Tensor& gb,
                                     const Tensor& gy, const Tensor& x, const Tensor& mean,
                                     const Tensor& rstd, const Tensor& w) {
  check_row_kernel_input(x, "layer_norm_backward");
  check_row_kernel_input(gy, "layer_norm_backward");
  by_dtype(x, [&](auto v) { layer_norm_backward_typed<decltype(v)>(gx, gw, gb, gy, x, mean, rstd, w); });
}

void CpuBackend::cross_entropy(const Tensor& loss, const Tensor& lse, const Tensor& logits,
                               const Tensor& target, int64_t ignore_index) {
  check_row_kernel_input(logits, "cross_entropy");
  by_dtype(logits, [&](auto v) { cross_entropy_typed<decltype(v)>(loss, lse, logits, target, ignore_index); });
}

void CpuBackend::cross_entropy_backward(const Tensor& gl, const Tensor& gloss, const Tensor& logits,
                                        const Tensor& lse, const Tensor& target, int64_t ignore_index) {
  check_row_kernel_input(logits, "cross_entropy_backward");
  by_dtype(logits, [&](auto v) {
    cross_entropy_backward_typed<decltype(v)>(gl, gloss, logits, lse, target, ignore_index);
  });
}

}  // namespace strata::cpu
