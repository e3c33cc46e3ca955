// CPU 2-D pooling (max, average, adaptive average) over contiguous NCHW tensors, forward and
// backward, OpenMP over the N x C planes (each plane's backward adds in a fixed order).
#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/cpu/cpu_backend.h"

namespace strata::cpu {

namespace {

struct Window {
  int64_t h0, h1, w0, w1;  // clipped to the plane
  int64_t divisor;         // Avg / AdaptiveAvg
};

// The input window of output (i, j) of an average pool, as torch's kernels compute it.
Window window(const Pool2dParams& p, int64_t i, int64_t j, int64_t H, int64_t W, int64_t P, int64_t Q) {
  Window w{};
  if (p.kind == PoolKind::AdaptiveAvg) {
    w.h0 = i * H / P, w.h1 = ((i + 1) * H + P - 1) / P;
    w.w0 = j * W / Q, w.w1 = ((j + 1) * W + Q - 1) / Q;
    w.divisor = (w.h1 - w.h0) * (w.w1 - w.w0);
    return w;
  }
  int64_t h0 = i * p.stride[0] - p.padding[0], w0 = j * p.stride[1] - p.padding[1];
  int64_t h1 = std::min(h0 + p.kernel[0], H + p.padding[0]), w1 = std::min(w0 + p.kernel[1], W + p.padding[1]);
  const int64_t padded = (h1 - h0) * (w1 - w0);
  w.h0 = std::max<int64_t>(h0, 0), w.w0 = std::max<int64_t>(w0, 0);
  w.h1 = std::min(h1, H), w.w1 = std::min(w1, W);
  w.divisor = p.count_include_pad ? padded : (w.h1 - w.h0) * (w.w1 - w.w0);
  return w;
}

// Max pooling of one plane, a row of outputs at a time: for each tap (in the window's row-major
// order, so ties keep the first maximum as torch does) a branch-free update across the row.
template <class T>
void max_pool_plane(const T* xc, T* yc, int64_t* ic, int64_t H, int64_t W, int64_t P, int64_t Q,
                    const Pool2dParams& p) {
  const int64_t sh = p.stride[0], sw = p.stride[1], ph = p.padding[0], pw = p.padding[1];
  const int64_t dh = p.dilation[0], dw = p.dilation[1];
  for (int64_t i = 0; i < P; ++i) {
    T* best = yc + i * Q;
    int64_t* at = ic + i * Q;
    const int64_t h0 = i * sh - ph;
    for (int64_t j = 0; j < Q; ++j) {
      best[j] = -std::numeric_limits<T>::infinity();
      at[j] = std::max<int64_t>(h0, 0) * W + std::max<int64_t>(j * sw - pw, 0);
    }
    for (int64_t r = 0; r < p.kernel[0]; ++r) {
      const int64_t h = h0 + r * dh;
      if (h < 0 || h >= H) continue;
      const T* xr = xc + h * W;
      for (int64_t s = 0; s < p.kernel[1]; ++s) {
        const int64_t off = s * dw - pw;  // column of output j: j * sw + off
        // outputs whose column lies inside the plane: 0 <= j sw + off < W
        const int64_t j0 = off >= 0 ? 0 : (-off + sw - 1) / sw;
        const int64_t j1 = std::min<int64_t>(Q, W - off <= 0 ? 0 : (W - off + sw - 1) / sw);
#pragma omp simd
        for (int64_t j = j0; j < j1; ++j) {
          const int64_t v = j * sw + off;
          const T val = xr[v];
          const bool take = val > best[j] || val != val;
          best[j] = take ? val : best[j];
          at[j] = take ? h * W + v : at[j];
        }
      }
    }
  }
}

template <class T>
void pool_forward(const Tensor& out, const Tensor& indices, const Tensor& x, const Pool2dParams& p) {
  const int64_t NC = x.size(0) * x.size(1), H = x.size(2), W = x.size(3), P = out.size(2), Q = out.size(3);
  const T* xp = x.data<T>();
  T* yp = out.data<T>();
  int64_t* ip = indices.defined() ? indices.data<int64_t>() : nullptr;
#pragma omp parallel for schedule(static) if (x.numel() + out.numel() > 32768)
  for (int64_t nc = 0; nc < NC; ++nc) {
    const T* xc = xp + nc * H * W;
    T* yc = yp + nc * P * Q;
    if (p.kind == PoolKind::Max) {
      max_pool_plane(xc, yc, ip + nc * P * Q, H, W, P, Q, p);
      continue;
    }
    for (int64_t i = 0; i < P; ++i)
      for (int64_t j = 0; j < Q; ++j) {
        const Window w = window(p, i, j, H, W, P, Q);
        double s = 0;
        for (int64_t h = w.h0; h < w.h1; ++h)
          for (int64_t v = w.w0; v < w.w1; ++v) s += double(xc[h * W + v]);
        yc[i * Q + j] = T(s / double(w.divisor));
      }
  }
}

template <class T>
void pool_backward(const Tensor& gx, const Tensor& gy, const Tensor& indices, const Pool2dParams& p) {
  const int64_t NC = gx.size(0) * gx.size(1), H = gx.size(2), W = gx.size(3), P = gy.size(2), Q = gy.size(3);
  T* dx = gx.data<T>();
  const T* gp = gy.data<T>();
  const int64_t* ip = indices.defined() ? indices.data<int64_t>() : nullptr;
#pragma omp parallel for schedule(static) if (gx.numel() + gy.numel() > 32768)
  for (int64_t nc = 0; nc < NC; ++nc) {
    T* dc = dx + nc * H * W;
    const T* gc = gp + nc * P * Q;
    std::fill(dc, dc + H * W, T(0));
    for (int64_t i = 0; i < P; ++i)
      for (int64_t j = 0; j < Q; ++j) {
        const T g = gc[i * Q + j];
        if (p.kind == PoolKind::Max) {
          dc[ip[nc * P * Q + i * Q + j]] += g;
          continue;
        }
        const Window w = window(p, i, j, H, W, P, Q);
        const T share = T(double(g) / double(w.divisor));
        for (int64_t h = w.h0; h < w.h1; ++h)
          for (int64_t v = w.w0; v < w.w1; ++v) dc[h * W + v] += share;
      }
  }
}

}  // namespace

void CpuBackend::pool2d(const Tensor& out, const Tensor& indices, const Tensor& x, const Pool2dParams& p) {
  check_nchw_kernel_inputs("pool2d", {&out, &x}, x.dtype());
  STRATA_CHECK(p.kind != PoolKind::Max || (indices.defined() && indices.is_contiguous()), ValueError,
               "pool2d: max pooling needs a contiguous i64 indices tensor");
  if (x.dtype() == DType::f32)
    pool_forward<float>(out, indices, x, p);
  else
    pool_forward<double>(out, indices, x, p);
}

void CpuBackend::pool2d_backward(const Tensor& grad_x, const Tensor& grad_out, const Tensor& indices,
                                 const Pool2dParams& p) {
  check_nchw_kernel_inputs("pool2d_backward", {&grad_x, &grad_out}, grad_x.dtype());
  if (grad_x.dtype() == DType::f32)
    pool_backward<float>(grad_x, grad_out, indices, p);
  else
    pool_backward<double>(grad_x, grad_out, indices, p);
}

}  // namespace strata::cpu
