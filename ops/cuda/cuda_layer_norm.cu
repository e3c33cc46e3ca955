// CUDA layer norm over contiguous [rows, cols] f32/f64 tensors, forward and backward. Rows of up
// to 1024 columns take a warp each and stay in registers; wider rows take a block each. The
// formulas (and which sums run in double) are those of ops/cpu/cpu_row_kernels.cpp, the
// reductions are fixed trees, and the weight/bias gradients sum fixed row chunks in order, so
// every result is reproducible bit for bit.
#include <algorithm>
#include <type_traits>

#include "ops/cpu/cpu_backend.h"
#include "ops/cuda/cuda_backend.h"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/cuda_device_utils.cuh"
#include "ops/cuda/cuda_rows.cuh"

namespace strata::gpu {

namespace {

using namespace row_util;

template <class T, class O, class Conv>
__global__ void layer_norm_kernel(const T* x, const T* w, const T* b, O* y, T* mean, T* rstd, Rows s,
                                  double eps) {
  __shared__ double acc[32];
  const Conv cv;
  STRATA_FOR_ROWS(r, s.R) {
    const T* xr = x + r * s.C;
    O* yr = y + r * s.C;
    double sum = 0;
    STRATA_FOR_COLS(i, s.C) sum += double(xr[i]);
    const double mu = block_sum(sum, acc) / double(s.C);
    double var = 0;
    STRATA_FOR_COLS(i, s.C) {
      const double d = double(xr[i]) - mu;
      var += d * d;
    }
    const double rs = 1.0 / ::sqrt(block_sum(var, acc) / double(s.C) + eps);
    if (threadIdx.x == 0) {
      mean[r] = T(mu);
      rstd[r] = T(rs);
    }
    const T m = T(mu), sc = T(rs);
    STRATA_FOR_COLS(i, s.C) {
      const T n = (xr[i] - m) * sc;
      yr[i] = cv.store((w ? n * w[i] : n) + (b ? b[i] : T(0)));
    }
  }
}

template <class T, class G, class Conv>
__global__ void layer_norm_backward_x_kernel(T* dx, const G* g, const T* x, const T* mean, const T* rstd,
                                             const T* w, Rows s) {
  __shared__ double acc[32];
  const Conv cv;
  STRATA_FOR_ROWS(r, s.R) {
    const T* xr = x + r * s.C;
    const G* gr = g + r * s.C;
    T* dr = dx + r * s.C;
    const T m = mean[r], rs = rstd[r];
    // dx = rstd * (g*w - mean(g*w) - xhat * mean(g*w*xhat))
    double s1 = 0, s2 = 0;
    STRATA_FOR_COLS(i, s.C) {
      const double gw = double(cv.load(gr[i])) * (w ? double(w[i]) : 1.0);
      const double xh = double((xr[i] - m) * rs);
      s1 += gw;
      s2 += gw * xh;
    }
    const T a = T(block_sum(s1, acc) / double(s.C));
    const T c = T(block_sum(s2, acc) / double(s.C));
    STRATA_FOR_COLS(i, s.C) {
      const T gw = cv.load(gr[i]) * (w ? w[i] : T(1));
      const T xh = (xr[i] - m) * rs;
      dr[i] = rs * (gw - a - xh * c);
    }
  }
}

// Weight/bias gradients, stage 1: column sums over one fixed chunk of rows, in row order; the
// partials are laid out [C, chunks], so stage 2 reads each column's partials contiguously.
template <class T, class G, class Conv>
__global__ void layer_norm_backward_wb_partial(const G* g, const T* x, const T* mean, const T* rstd, Rows s,
                                               int64_t rows_per_chunk, int64_t chunks, double* pw,
                                               double* pb) {
  const int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= s.C) return;
  const int64_t chunk = blockIdx.y;
  const int64_t r0 = chunk * rows_per_chunk;
  const int64_t r1 = r0 + rows_per_chunk < s.R ? r0 + rows_per_chunk : s.R;
  const Conv cv;
  double sw = 0, sb = 0;
#pragma unroll 8
  for (int64_t r = r0; r < r1; ++r) {
    const double gv = double(cv.load(g[r * s.C + c]));
    sw += gv * (double(x[r * s.C + c]) - double(mean[r])) * double(rstd[r]);
    sb += gv;
  }
  if (pw) pw[c * chunks + chunk] = sw;
  if (pb) pb[c * chunks + chunk] = sb;
}

// Stage 2: a warp per column adds its chunk partials, lane k taking chunks k, k + 32, ..., then
// the warp's fixed tree.
template <class T>
__global__ void layer_norm_backward_wb_finish(const double* pw, const double* pb, int64_t chunks, int64_t C,
                                              T* dw, T* db) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = (int64_t(gridDim.x) * blockDim.x) >> 5;
  for (int64_t c = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) >> 5; c < C; c += warps) {
    double sw = 0, sb = 0;
    for (int64_t k = lane; k < chunks; k += 32) {
      if (pw) sw += pw[c * chunks + k];
      if (pb) sb += pb[c * chunks + k];
    }
    sw = warp_sum(sw);
    sb = warp_sum(sb);
    if (lane == 0) {
      if (dw) dw[c] = T(sw);
      if (db) db[c] = T(sb);
    }
  }
}

// Rows of at most 32 * N columns: a warp per row, the row held in registers (N per lane), so
// x is read once. The sums and formulas are layer_norm_kernel's; the warp's fixed shuffle tree
// keeps the bits reproducible.
__device__ __forceinline__ double warp_allsum(double v) { return __shfl_sync(0xffffffffu, warp_sum(v), 0); }

template <class T, int N, class O, class Conv>
__global__ void layer_norm_warp_kernel(const T* x, const T* w, const T* b, O* y, T* mean, T* rstd, Rows s,
                                       double eps) {
  const Conv cv;
  const int lane = threadIdx.x & 31;
  const int64_t warps = (int64_t(gridDim.x) * blockDim.x) >> 5;
  for (int64_t r = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) >> 5; r < s.R; r += warps) {
    const T* xr = x + r * s.C;
    O* yr = y + r * s.C;
    T v[N];
    double sum = 0;
#pragma unroll
    for (int k = 0; k < N; ++k) {
      const int64_t i = lane + 32 * k;
      v[k] = i < s.C ? xr[i] : T(0);
      sum += double(v[k]);
    }
    const double mu = warp_allsum(sum) / double(s.C);
    double var = 0;
#pragma unroll
    for (int k = 0; k < N; ++k)
      if (lane + 32 * k < s.C) {
        const double d = double(v[k]) - mu;
        var += d * d;
      }
    const double rs = 1.0 / ::sqrt(warp_allsum(var) / double(s.C) + eps);
    if (lane == 0) {
      mean[r] = T(mu);
      rstd[r] = T(rs);
    }
    const T m = T(mu), sc = T(rs);
#pragma unroll
    for (int k = 0; k < N; ++k) {
      const int64_t i = lane + 32 * k;
      if (i < s.C) {
        const T n = (v[k] - m) * sc;
        yr[i] = cv.store((w ? n * w[i] : n) + (b ? b[i] : T(0)));
      }
    }
  }
}

template <class T, int N, class G, class Conv>
__global__ void layer_norm_backward_x_warp_kernel(T* dx, const G* g, const T* x, const T* mean, const T* rstd,
                                                  const T* w, Rows s) {
  const Conv cv;
  const int lane = threadIdx.x & 31;
  const int64_t warps = (int64_t(gridDim.x) * blockDim.x) >> 5;
  for (int64_t r = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) >> 5; r < s.R; r += warps) {
    const T* xr = x + r * s.C;
    const G* gr = g + r * s.C;
    T* dr = dx + r * s.C;
    const T m = mean[r], rs = rstd[r];
    T gw[N], xh[N];
    double s1 = 0, s2 = 0;
#pragma unroll
    for (int k = 0; k < N; ++k) {
      const int64_t i = lane + 32 * k;
      gw[k] = xh[k] = T(0);
      if (i < s.C) {
        const T gv = cv.load(gr[i]), xv = xr[i], wv = w ? w[i] : T(1);
        gw[k] = gv * wv;
        xh[k] = (xv - m) * rs;
        const double gwd = double(gv) * (w ? double(wv) : 1.0);
        s1 += gwd;
        s2 += gwd * double(xh[k]);
      }
    }
    const T a = T(warp_allsum(s1) / double(s.C));
    const T c = T(warp_allsum(s2) / double(s.C));
#pragma unroll
    for (int k = 0; k < N; ++k) {
      const int64_t i = lane + 32 * k;
      if (i < s.C) dr[i] = rs * (gw[k] - a - xh[k] * c);
    }
  }
}

// The warp kernels' register tile: the smallest N in {4, 8, 16, 24, 32} with 32 N >= C, or 0
// (C > 1024: a block per row).
int warp_tile(int64_t C) {
  for (int n : {4, 8, 16, 24, 32})
    if (C <= 32 * n) return n;
  return 0;
}

// Runs f(std::integral_constant<int, N>{}) for warp_tile's N.
template <class F>
void with_warp_tile(int n, F f) {
  switch (n) {
    case 4: f(std::integral_constant<int, 4>{}); break;
    case 8: f(std::integral_constant<int, 8>{}); break;
    case 16: f(std::integral_constant<int, 16>{}); break;
    case 24: f(std::integral_constant<int, 24>{}); break;
    default: f(std::integral_constant<int, 32>{}); break;
  }
}

constexpr int kLnWarpBlock = 256;  // 8 rows per block
unsigned warp_row_grid(int64_t R) { return grid_for(R, kLnWarpBlock / 32); }

}  // namespace

void CudaBackend::layer_norm(const Tensor& out, const Tensor& mean, const Tensor& rstd, const Tensor& x,
                             const Tensor& w, const Tensor& b, double eps) {
  const char* op = "layer_norm";
  cpu::check_row_kernel_input(x, op);
  check_rows(op, {&mean, &rstd, &w, &b}, x.dtype());
  if (!narrow_beside(out, x)) check_rows(op, {&out}, x.dtype());
  STRATA_CHECK(out.is_contiguous(), TypeError, op, ": expects a contiguous output, got ", out.str());
  const int dev = check_on_device(op, {&out, &mean, &rstd, &x, &w, &b});
  const Rows s = rows_of(x);
  check_numel(op, {&out}, x.numel());
  check_numel(op, {&mean, &rstd}, s.R);
  check_numel(op, {&w, &b}, s.C);
  if (x.numel() == 0) return;
  context(dev);
  DeviceGuard guard(dev);
  by_row_and_element_dtype(x, out, [&](auto tv, auto ov, auto conv) {
    using T = decltype(tv);
    using O = decltype(ov);
    using Conv = decltype(conv);
    const T* xp = static_cast<const T*>(x.data_ptr());
    O* yp = static_cast<O*>(out.data_ptr());
    T *mp = static_cast<T*>(mean.data_ptr()), *rp = static_cast<T*>(rstd.data_ptr());
    if (const int n = warp_tile(s.C)) {
      with_warp_tile(n, [&](auto tile) {
        layer_norm_warp_kernel<T, decltype(tile)::value, O, Conv>
            <<<warp_row_grid(s.R), kLnWarpBlock, 0, compute_stream()>>>(
                xp, ptr_or_null<T>(w), ptr_or_null<T>(b), yp, mp, rp, s, eps);
      });
    } else {
      layer_norm_kernel<T, O, Conv><<<row_grid(s.R), row_block_threads(s.C), 0, compute_stream()>>>(
          xp, ptr_or_null<T>(w), ptr_or_null<T>(b), yp, mp, rp, s, eps);
    }
  });
  STRATA_CUDA_CHECK_LAUNCH(op, " ", x.str());
}

void CudaBackend::layer_norm_backward(const Tensor& gx, const Tensor& gw, const Tensor& gb, const Tensor& gy,
                                      const Tensor& x, const Tensor& mean, const Tensor& rstd,
                                      const Tensor& w) {
  const char* op = "layer_norm_backward";
  cpu::check_row_kernel_input(x, op);
  check_rows(op, {&gx, &gw, &gb, &mean, &rstd, &w}, x.dtype());
  if (!narrow_beside(gy, x)) {
    cpu::check_row_kernel_input(gy, op);
    check_rows(op, {&gy}, x.dtype());
  }
  STRATA_CHECK(gy.is_contiguous(), TypeError, op, ": expects a contiguous gradient, got ", gy.str());
  const int dev = check_on_device(op, {&gx, &gw, &gb, &gy, &x, &mean, &rstd, &w});
  const Rows s = rows_of(x);
  check_numel(op, {&gx, &gy}, x.numel());
  check_numel(op, {&mean, &rstd}, s.R);
  check_numel(op, {&w, &gw, &gb}, s.C);
  if (x.numel() == 0) return;
  context(dev);
  DeviceGuard guard(dev);
  by_row_and_element_dtype(x, gy, [&](auto tv, auto gv, auto conv) {
    using T = decltype(tv);
    using G = decltype(gv);
    using Conv = decltype(conv);
    const G* g = static_cast<const G*>(gy.data_ptr());
    const T* xp = static_cast<const T*>(x.data_ptr());
    const T* mp = static_cast<const T*>(mean.data_ptr());
    const T* rp = static_cast<const T*>(rstd.data_ptr());
    if (gx.defined()) {
      T* dxp = static_cast<T*>(gx.data_ptr());
      if (const int n = warp_tile(s.C)) {
        with_warp_tile(n, [&](auto tile) {
          layer_norm_backward_x_warp_kernel<T, decltype(tile)::value, G, Conv>
              <<<warp_row_grid(s.R), kLnWarpBlock, 0, compute_stream()>>>(dxp, g, xp, mp, rp,
                                                                          ptr_or_null<T>(w), s);
        });
      } else {
        layer_norm_backward_x_kernel<T, G, Conv>
            <<<row_grid(s.R), row_block_threads(s.C), 0, compute_stream()>>>(dxp, g, xp, mp, rp,
                                                                             ptr_or_null<T>(w), s);
      }
      STRATA_CUDA_CHECK_LAUNCH(op, " ", x.str());
    }
    if (gw.defined() || gb.defined()) {
      // Fixed chunking (a function of R only) keeps the column sums reproducible.
      const int64_t rows_per_chunk = std::max<int64_t>(64, (s.R + 4095) / 4096);
      const int64_t chunks = std::max<int64_t>(1, (s.R + rows_per_chunk - 1) / rows_per_chunk);
      Tensor pw = gw.defined() ? empty({s.C, chunks}, DType::f64, dev) : Tensor();
      Tensor pb = gb.defined() ? empty({s.C, chunks}, DType::f64, dev) : Tensor();
      const dim3 grid(unsigned((s.C + kThreads - 1) / kThreads), unsigned(chunks));
      layer_norm_backward_wb_partial<T, G, Conv><<<grid, kThreads, 0, compute_stream()>>>(
          g, xp, mp, rp, s, rows_per_chunk, chunks, mut_or_null<double>(pw), mut_or_null<double>(pb));
      STRATA_CUDA_CHECK_LAUNCH(op, " weight/bias of ", x.str());
      layer_norm_backward_wb_finish<T><<<grid_for(s.C, kThreads / 32), kThreads, 0, compute_stream()>>>(
          ptr_or_null<double>(pw), ptr_or_null<double>(pb), chunks, s.C, mut_or_null<T>(gw),
          mut_or_null<T>(gb));
      STRATA_CUDA_CHECK_LAUNCH(op, " weight/bias of ", x.str());
    }
  });
}

}  // namespace strata::gpu
