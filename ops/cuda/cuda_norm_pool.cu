// CUDA pooling (max with indices, average, adaptive average; forward and backward) and the
// batch-norm helpers cuDNN does not cover, over contiguous NCHW f32/f64 tensors. Windows follow
// ops/cpu/cpu_pool.cpp exactly. Backward gathers: one thread per input element sums the outputs
// whose window covers it in a fixed order (no atomics, reproducible bits); the per-channel
// sums are fixed block trees.
#include <limits>

#include "ops/cuda/cuda_backend.h"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/cuda_device_utils.cuh"
#include "ops/cuda/cuda_norm_pool.h"
#include "ops/cuda/cuda_strided.h"

namespace strata::gpu {

namespace {

struct PoolShape {
  int64_t NC, H, W, P, Q;
};

struct Win {
  int64_t h0, h1, w0, w1, divisor;
};

// The window of output (i, j), as cpu_pool.cpp's window(): Max keeps the raw (unclipped) start
// and the dilated end; Avg / AdaptiveAvg are clipped, with their divisor.
__host__ __device__ inline Win window(const Pool2dParams& p, int64_t i, int64_t j, const PoolShape& s) {
  Win w{};
  if (p.kind == PoolKind::AdaptiveAvg) {
    w.h0 = i * s.H / s.P, w.h1 = ((i + 1) * s.H + s.P - 1) / s.P;
    w.w0 = j * s.W / s.Q, w.w1 = ((j + 1) * s.W + s.Q - 1) / s.Q;
    w.divisor = (w.h1 - w.h0) * (w.w1 - w.w0);
    return w;
  }
  const int64_t h0 = i * p.stride[0] - p.padding[0], w0 = j * p.stride[1] - p.padding[1];
  if (p.kind == PoolKind::Max) {
    w.h0 = h0, w.w0 = w0;
    w.h1 = h0 + (p.kernel[0] - 1) * p.dilation[0] + 1, w.w1 = w0 + (p.kernel[1] - 1) * p.dilation[1] + 1;
    return w;
  }
  const int64_t h1 = min(h0 + p.kernel[0], s.H + p.padding[0]), w1 = min(w0 + p.kernel[1], s.W + p.padding[1]);
  const int64_t padded = (h1 - h0) * (w1 - w0);
  w.h0 = max(h0, int64_t(0)), w.w0 = max(w0, int64_t(0)), w.h1 = min(h1, s.H), w.w1 = min(w1, s.W);
  w.divisor = p.count_include_pad ? padded : (w.h1 - w.h0) * (w.w1 - w.w0);
  return w;
}

__device__ inline int64_t first_tap(int64_t start, int64_t dil) {
  return start >= 0 ? start : start + ((-start + dil - 1) / dil) * dil;
}

template <class T>
__global__ void pool_forward_kernel(const T* x, T* y, int64_t* idx, PoolShape s, Pool2dParams p) {
  const int64_t n = s.NC * s.P * s.Q;
  for (int64_t o = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; o < n; o += int64_t(gridDim.x) * blockDim.x) {
    const int64_t j = o % s.Q, i = o / s.Q % s.P, nc = o / (s.P * s.Q);
    const T* xc = x + nc * s.H * s.W;
    const Win w = window(p, i, j, s);
    if (p.kind == PoolKind::Max) {
      T best = -std::numeric_limits<T>::infinity();
      int64_t at = max(w.h0, int64_t(0)) * s.W + max(w.w0, int64_t(0));
      for (int64_t h = first_tap(w.h0, p.dilation[0]); h < min(w.h1, s.H); h += p.dilation[0])
        for (int64_t v = first_tap(w.w0, p.dilation[1]); v < min(w.w1, s.W); v += p.dilation[1]) {
          const T val = xc[h * s.W + v];
          if (val > best || isnan(val)) best = val, at = h * s.W + v;
        }
      y[o] = best;
      idx[o] = at;
    } else {
      double sum = 0;
      for (int64_t h = w.h0; h < w.h1; ++h)
        for (int64_t v = w.w0; v < w.w1; ++v) sum += double(xc[h * s.W + v]);
      y[o] = T(sum / double(w.divisor));
    }
  }
}

// Output rows whose (undilated-span) window may cover input row h: a superset, checked exactly.
__device__ inline void covering(int64_t h, int64_t k, int64_t st, int64_t pad, int64_t dil, int64_t P, int64_t* lo,
                                int64_t* hi) {
  const int64_t extent = (k - 1) * dil + 1;
  const int64_t a = h + pad - extent + 1;
  *lo = a <= 0 ? 0 : (a + st - 1) / st;
  *hi = min((h + pad) / st, P - 1);
}

template <class T>
__global__ void pool_backward_kernel(T* gx, const T* gy, const int64_t* idx, PoolShape s, Pool2dParams p) {
  const int64_t n = s.NC * s.H * s.W;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < n; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t v = e % s.W, h = e / s.W % s.H, nc = e / (s.H * s.W);
    const T* gc = gy + nc * s.P * s.Q;
    int64_t i0 = 0, i1 = s.P - 1, j0 = 0, j1 = s.Q - 1;
    if (p.kind != PoolKind::AdaptiveAvg) {
      covering(h, p.kernel[0], p.stride[0], p.padding[0], p.kind == PoolKind::Max ? p.dilation[0] : 1, s.P, &i0, &i1);
      covering(v, p.kernel[1], p.stride[1], p.padding[1], p.kind == PoolKind::Max ? p.dilation[1] : 1, s.Q, &j0, &j1);
    }
    double acc = 0;
    for (int64_t i = i0; i <= i1; ++i)
      for (int64_t j = j0; j <= j1; ++j) {
        if (p.kind == PoolKind::Max) {
          if (idx[nc * s.P * s.Q + i * s.Q + j] == h * s.W + v) acc += double(gc[i * s.Q + j]);
          continue;
        }
        const Win w = window(p, i, j, s);
        if (h >= w.h0 && h < w.h1 && v >= w.w0 && v < w.w1) acc += double(T(double(gc[i * s.Q + j]) / double(w.divisor)));
      }
    gx[e] = T(acc);
  }
}

template <class T>
__global__ void bn_eval_stats_kernel(T* mean, T* invstd, const T* rm, const T* rv, int64_t C, double eps) {
  for (int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; c < C; c += int64_t(gridDim.x) * blockDim.x) {
    mean[c] = rm[c];
    invstd[c] = T(1.0 / sqrt(double(rv[c]) + eps));
  }
}

// One block per channel: sum(gy) and sum(gy * xhat) by a fixed tree, then grad_x.
template <class T>
__global__ void bn_eval_backward_kernel(T* gx, T* gw, T* gb, const T* gy, const T* x, const T* w, const T* mean,
                                        const T* invstd, int64_t N, int64_t C, int64_t HW) {
  __shared__ double smem[32];
  const int64_t c = blockIdx.x;
  const double mu = double(mean[c]), is = double(invstd[c]);
  double sg = 0, sgx = 0;
  for (int64_t k = threadIdx.x; k < N * HW; k += blockDim.x) {
    const int64_t at = (k / HW * C + c) * HW + k % HW;
    sg += double(gy[at]);
    sgx += double(gy[at]) * (double(x[at]) - mu) * is;
  }
  sg = block_sum(sg, smem);
  sgx = block_sum(sgx, smem);
  if (threadIdx.x == 0) {
    if (gw) gw[c] = T(sgx);
    if (gb) gb[c] = T(sg);
  }
  if (!gx) return;
  const T scale = T((w ? double(w[c]) : 1.0) * is);
  for (int64_t k = threadIdx.x; k < N * HW; k += blockDim.x) {
    const int64_t at = (k / HW * C + c) * HW + k % HW;
    gx[at] = gy[at] * scale;
  }
}

template <class F>
void by_dtype(DType dt, F f) {
  if (dt == DType::f32)
    f(float{});
  else
    f(double{});
}

template <class T>
T* ptr(const Tensor& t) {
  return t.defined() ? static_cast<T*>(t.data_ptr()) : nullptr;
}

}  // namespace

void check_nchw_kernel_inputs(const char* op, std::initializer_list<const Tensor*> ts, DType dt) {
  STRATA_CHECK(dt == DType::f32 || dt == DType::f64, TypeError, op, ": computes in f32 or f64, got ", dtype_name(dt));
  for (const Tensor* t : ts)
    STRATA_CHECK(!t->defined() || (t->is_contiguous() && t->dtype() == dt), TypeError, op,
                 ": expects contiguous tensors of one dtype, got ", t->str());
}

void CudaBackend::pool2d(const Tensor& out, const Tensor& indices, const Tensor& x, const Pool2dParams& p) {
  check_nchw_kernel_inputs("pool2d", {&out, &x}, x.dtype());
  const int dev = check_on_device("pool2d", {&out, &indices, &x});
  STRATA_CHECK(p.kind != PoolKind::Max || (indices.defined() && indices.is_contiguous()), ValueError,
               "pool2d: max pooling needs a contiguous i64 indices tensor");
  if (out.numel() == 0) return;
  context(dev);
  DeviceGuard guard(dev);
  const PoolShape s{x.size(0) * x.size(1), x.size(2), x.size(3), out.size(2), out.size(3)};
  by_dtype(x.dtype(), [&](auto v) {
    using T = decltype(v);
    pool_forward_kernel<T><<<grid_for(out.numel()), kThreads, 0, compute_stream()>>>(
        ptr<T>(x), ptr<T>(out), ptr<int64_t>(indices), s, p);
  });
  STRATA_CUDA_CHECK_LAUNCH("pool2d ", x.str());
}

void CudaBackend::pool2d_backward(const Tensor& grad_x, const Tensor& grad_out, const Tensor& indices,
                                  const Pool2dParams& p) {
  check_nchw_kernel_inputs("pool2d_backward", {&grad_x, &grad_out}, grad_x.dtype());
  const int dev = check_on_device("pool2d_backward", {&grad_x, &grad_out, &indices});
  if (grad_x.numel() == 0) return;
  context(dev);
  DeviceGuard guard(dev);
  const PoolShape s{grad_x.size(0) * grad_x.size(1), grad_x.size(2), grad_x.size(3), grad_out.size(2),
                    grad_out.size(3)};
  by_dtype(grad_x.dtype(), [&](auto v) {
    using T = decltype(v);
    pool_backward_kernel<T><<<grid_for(grad_x.numel()), kThreads, 0, compute_stream()>>>(
        ptr<T>(grad_x), ptr<T>(grad_out), ptr<int64_t>(indices), s, p);
  });
  STRATA_CUDA_CHECK_LAUNCH("pool2d_backward ", grad_x.str());
}

void launch_bn_eval_stats(const Tensor& mean, const Tensor& invstd, const Tensor& running_mean,
                          const Tensor& running_var, double eps) {
  const int64_t C = mean.numel();
  by_dtype(mean.dtype(), [&](auto v) {
    using T = decltype(v);
    bn_eval_stats_kernel<T><<<grid_for(C), kThreads, 0, compute_stream()>>>(
        ptr<T>(mean), ptr<T>(invstd), ptr<T>(running_mean), ptr<T>(running_var), C, eps);
  });
  STRATA_CUDA_CHECK_LAUNCH("batch_norm (inference statistics)");
}

void launch_bn_eval_backward(const Tensor& gx, const Tensor& gw, const Tensor& gb, const Tensor& gy, const Tensor& x,
                             const Tensor& weight, const Tensor& mean, const Tensor& invstd) {
  const int64_t N = x.size(0), C = x.size(1), HW = x.numel() / std::max<int64_t>(N * C, 1);
  by_dtype(x.dtype(), [&](auto v) {
    using T = decltype(v);
    bn_eval_backward_kernel<T><<<unsigned(C), 256, 0, compute_stream()>>>(
        ptr<T>(gx), ptr<T>(gw), ptr<T>(gb), ptr<T>(gy), ptr<T>(x), ptr<T>(weight), ptr<T>(mean), ptr<T>(invstd), N, C,
        HW);
  });
  STRATA_CUDA_CHECK_LAUNCH("batch_norm_backward (eval) ", x.str());
}

}  // namespace strata::gpu
