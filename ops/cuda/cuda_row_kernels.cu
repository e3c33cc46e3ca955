// CUDA row kernels over contiguous [rows, cols] f32/f64 tensors: softmax / log-softmax, layer
// norm and fused softmax-cross-entropy, forward and backward. One block per row; the
// formulas (and which sums run in double) are those of ops/cpu/cpu_row_kernels.cpp, the
// reductions are fixed block trees, and layer norm's weight/bias gradients sum fixed row
// chunks in order, so every result is reproducible bit for bit.
#include <limits>

#include "ops/common/elementwise_math.h"
#include "ops/cpu/cpu_backend.h"
#include "ops/cuda/cuda_backend.h"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/cuda_device_utils.cuh"

namespace strata::gpu {

namespace {

using common::m_exp;

struct Rows {
  int64_t R, C;
};

Rows rows_of(const Tensor& t) {
  const int64_t C = t.dim() == 0 ? 1 : t.size(-1);
  return {t.numel() / std::max<int64_t>(C, 1), C};
}

unsigned row_grid(int64_t R) { return grid_for(R, 1); }

#define STRATA_FOR_ROWS(r, R) for (int64_t r = blockIdx.x; r < (R); r += gridDim.x)
#define STRATA_FOR_COLS(i, C) for (int64_t i = threadIdx.x; i < (C); i += blockDim.x)

template <class T>
__device__ __forceinline__ T row_max(const T* x, int64_t C, T* smem) {
  T m = -std::numeric_limits<T>::infinity();
  STRATA_FOR_COLS(i, C) m = x[i] > m ? x[i] : m;
  return block_max(m, smem);
}

template <class T>
__global__ void softmax_kernel(const T* x, T* y, Rows s, bool log) {
  __shared__ double acc[32];
  __shared__ T red[32];
  STRATA_FOR_ROWS(r, s.R) {
    const T* xr = x + r * s.C;
    T* yr = y + r * s.C;
    const T m = row_max(xr, s.C, red);
    double sum = 0;
    STRATA_FOR_COLS(i, s.C) sum += ::exp(double(xr[i] - m));
    sum = block_sum(sum, acc);
    if (log) {
      const T lse = T(double(m) + ::log(sum));
      STRATA_FOR_COLS(i, s.C) yr[i] = xr[i] - lse;
    } else {
      const T inv = T(1.0 / sum);
      STRATA_FOR_COLS(i, s.C) yr[i] = T(m_exp(xr[i] - m)) * inv;
    }
  }
}

template <class T>
__global__ void softmax_backward_kernel(T* dx, const T* g, const T* y, Rows s, bool log) {
  __shared__ double acc[32];
  STRATA_FOR_ROWS(r, s.R) {
    const T* gr = g + r * s.C;
    const T* yr = y + r * s.C;
    T* dr = dx + r * s.C;
    double sum = 0;
    if (log) {  // dx = g - exp(y) * sum(g)
      STRATA_FOR_COLS(i, s.C) sum += double(gr[i]);
      const T t = T(block_sum(sum, acc));
      STRATA_FOR_COLS(i, s.C) dr[i] = gr[i] - m_exp(yr[i]) * t;
    } else {  // dx = y * (g - sum(g * y))
      STRATA_FOR_COLS(i, s.C) sum += double(gr[i]) * double(yr[i]);
      const T t = T(block_sum(sum, acc));
      STRATA_FOR_COLS(i, s.C) dr[i] = yr[i] * (gr[i] - t);
    }
  }
}

template <class T>
__global__ void layer_norm_kernel(const T* x, const T* w, const T* b, T* y, T* mean, T* rstd, Rows s, double eps) {
  __shared__ double acc[32];
  STRATA_FOR_ROWS(r, s.R) {
    const T* xr = x + r * s.C;
    T* yr = y + r * s.C;
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
      yr[i] = (w ? n * w[i] : n) + (b ? b[i] : T(0));
    }
  }
}

template <class T>
__global__ void layer_norm_backward_x_kernel(T* dx, const T* g, const T* x, const T* mean, const T* rstd, const T* w,
                                             Rows s) {
  __shared__ double acc[32];
  STRATA_FOR_ROWS(r, s.R) {
    const T* xr = x + r * s.C;
    const T* gr = g + r * s.C;
    T* dr = dx + r * s.C;
    const T m = mean[r], rs = rstd[r];
    // dx = rstd * (g*w - mean(g*w) - xhat * mean(g*w*xhat))
    double s1 = 0, s2 = 0;
    STRATA_FOR_COLS(i, s.C) {
      const double gw = double(gr[i]) * (w ? double(w[i]) : 1.0);
      const double xh = double((xr[i] - m) * rs);
      s1 += gw;
      s2 += gw * xh;
    }
    const T a = T(block_sum(s1, acc) / double(s.C));
    const T c = T(block_sum(s2, acc) / double(s.C));
    STRATA_FOR_COLS(i, s.C) {
      const T gw = gr[i] * (w ? w[i] : T(1));
      const T xh = (xr[i] - m) * rs;
      dr[i] = rs * (gw - a - xh * c);
    }
  }
}

// Weight/bias gradients, stage 1: column sums over one fixed chunk of rows, in row order.
template <class T>
__global__ void layer_norm_backward_wb_partial(const T* g, const T* x, const T* mean, const T* rstd, Rows s,
                                               int64_t rows_per_chunk, double* pw, double* pb) {
  const int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= s.C) return;
  const int64_t chunk = blockIdx.y;
  const int64_t r0 = chunk * rows_per_chunk;
  const int64_t r1 = r0 + rows_per_chunk < s.R ? r0 + rows_per_chunk : s.R;
  double sw = 0, sb = 0;
  for (int64_t r = r0; r < r1; ++r) {
    const double gv = double(g[r * s.C + c]);
    sw += gv * (double(x[r * s.C + c]) - double(mean[r])) * double(rstd[r]);
    sb += gv;
  }
  if (pw) pw[chunk * s.C + c] = sw;
  if (pb) pb[chunk * s.C + c] = sb;
}

// Stage 2: adds the chunk partials of each column in chunk order.
template <class T>
__global__ void layer_norm_backward_wb_finish(const double* pw, const double* pb, int64_t chunks, int64_t C, T* dw,
                                              T* db) {
  STRATA_GRID_STRIDE(c, C) {
    double sw = 0, sb = 0;
    for (int64_t k = 0; k < chunks; ++k) {
      if (pw) sw += pw[k * C + c];
      if (pb) sb += pb[k * C + c];
    }
    if (dw) dw[c] = T(sw);
    if (db) db[c] = T(sb);
  }
}

template <class T>
__global__ void cross_entropy_kernel(const T* x, const int64_t* t, T* loss, T* lse, Rows s, int64_t ignore,
                                     int64_t* bad) {
  __shared__ double acc[32];
  __shared__ T red[32];
  STRATA_FOR_ROWS(r, s.R) {
    const T* xr = x + r * s.C;
    const T m = row_max(xr, s.C, red);
    double l;
    if (isinf(double(m))) {  // uniform across the block
      l = double(m);
    } else {
      double sum = 0;
      STRATA_FOR_COLS(i, s.C) sum += ::exp(double(xr[i] - m));
      l = double(m) + ::log(block_sum(sum, acc));
    }
    if (threadIdx.x == 0) {
      lse[r] = T(l);
      const int64_t tr = t[r];
      if (tr == ignore) {
        loss[r] = T(0);
      } else if (tr < 0 || tr >= s.C) {
        bad[0] = 1;
        bad[1] = tr;
        loss[r] = T(0);
      } else {
        loss[r] = T(l - double(xr[tr]));
      }
    }
  }
}

// The gradient's store: as T, or rounded to bf16/f16 bits for f32 logits (the host's rounding,
// as a cast of the f32 result would round it).
struct StoreSame {
  template <class T>
  __device__ T operator()(T v) const {
    return v;
  }
};
struct StoreBf16 {
  __device__ uint16_t operator()(float v) const { return float_to_bf16(v); }
};
struct StoreF16 {
  __device__ uint16_t operator()(float v) const { return float_to_f16(v); }
};

template <class T, class D, class Store>
__global__ void cross_entropy_backward_kernel(D* d, const T* gloss, const T* x, const T* lse,
                                              const int64_t* t, Rows s, int64_t ignore) {
  const Store store;
  STRATA_FOR_ROWS(r, s.R) {
    const T* xr = x + r * s.C;
    D* dr = d + r * s.C;
    const int64_t tr = t[r];
    if (tr == ignore) {
      STRATA_FOR_COLS(i, s.C) dr[i] = store(T(0));
      continue;
    }
    const T g = gloss[r], l = lse[r];
    STRATA_FOR_COLS(i, s.C) {
      T v = g * T(m_exp(xr[i] - l));
      if (i == tr) v -= g;
      dr[i] = store(v);
    }
  }
}

template <class T>
const T* ptr_or_null(const Tensor& t) {
  return t.defined() ? static_cast<const T*>(t.data_ptr()) : nullptr;
}
template <class T>
T* mut_or_null(const Tensor& t) {
  return t.defined() ? static_cast<T*>(t.data_ptr()) : nullptr;
}

// Runs f(T{}) for the row kernels' dtypes (contiguous f32/f64, as on the CPU).
template <class F>
void by_dtype(const Tensor& t, F f) {
  if (t.dtype() == DType::f32) f(float{});
  else f(double{});
}

void check_rows(const char* op, std::initializer_list<const Tensor*> ts, DType dt) {
  for (const Tensor* t : ts)
    if (t->defined())
      STRATA_CHECK(t->is_contiguous() && t->dtype() == dt, TypeError, op, ": expects contiguous ", dtype_name(dt),
                   " tensors, got ", t->str());
}

// Kernels index these tensors by row and column, so their sizes are checked (a GPU fault
// would end the CUDA context): each defined tensor must hold `n` elements.
void check_numel(const char* op, std::initializer_list<const Tensor*> ts, int64_t n) {
  for (const Tensor* t : ts)
    if (t->defined())
      STRATA_CHECK(t->numel() == n, ShapeError, op, ": ", t->str(), " should hold ", n, " elements");
}

}  // namespace

void CudaBackend::softmax(const Tensor& out, const Tensor& in, bool log) {
  cpu::check_row_kernel_input(in, "softmax");
  check_rows("softmax", {&out}, in.dtype());
  const int dev = check_on_device("softmax", {&out, &in});
  const Rows s = rows_of(in);
  check_numel("softmax", {&out}, in.numel());
  if (in.numel() == 0) return;
  context(dev);
  DeviceGuard guard(dev);
  by_dtype(in, [&](auto v) {
    using T = decltype(v);
    softmax_kernel<T><<<row_grid(s.R), row_block_threads(s.C), 0, compute_stream()>>>(
        static_cast<const T*>(in.data_ptr()), static_cast<T*>(out.data_ptr()), s, log);
  });
  STRATA_CUDA_CHECK_LAUNCH(log ? "log_softmax " : "softmax ", in.str());
}

void CudaBackend::softmax_backward(const Tensor& gin, const Tensor& gout, const Tensor& out, bool log) {
  cpu::check_row_kernel_input(gout, "softmax_backward");
  cpu::check_row_kernel_input(out, "softmax_backward");
  check_rows("softmax_backward", {&gin, &gout}, out.dtype());
  const int dev = check_on_device("softmax_backward", {&gin, &gout, &out});
  const Rows s = rows_of(out);
  check_numel("softmax_backward", {&gin, &gout}, out.numel());
  if (out.numel() == 0) return;
  context(dev);
  DeviceGuard guard(dev);
  by_dtype(out, [&](auto v) {
    using T = decltype(v);
    softmax_backward_kernel<T><<<row_grid(s.R), row_block_threads(s.C), 0, compute_stream()>>>(
        static_cast<T*>(gin.data_ptr()), static_cast<const T*>(gout.data_ptr()), static_cast<const T*>(out.data_ptr()),
        s, log);
  });
  STRATA_CUDA_CHECK_LAUNCH("softmax_backward ", out.str());
}

void CudaBackend::layer_norm(const Tensor& out, const Tensor& mean, const Tensor& rstd, const Tensor& x,
                             const Tensor& w, const Tensor& b, double eps) {
  cpu::check_row_kernel_input(x, "layer_norm");
  check_rows("layer_norm", {&out, &mean, &rstd, &w, &b}, x.dtype());
  const int dev = check_on_device("layer_norm", {&out, &mean, &rstd, &x, &w, &b});
  const Rows s = rows_of(x);
  check_numel("layer_norm", {&out}, x.numel());
  check_numel("layer_norm", {&mean, &rstd}, s.R);
  check_numel("layer_norm", {&w, &b}, s.C);
  if (x.numel() == 0) return;
  context(dev);
  DeviceGuard guard(dev);
  by_dtype(x, [&](auto v) {
    using T = decltype(v);
    layer_norm_kernel<T><<<row_grid(s.R), row_block_threads(s.C), 0, compute_stream()>>>(
        static_cast<const T*>(x.data_ptr()), ptr_or_null<T>(w), ptr_or_null<T>(b), static_cast<T*>(out.data_ptr()),
        static_cast<T*>(mean.data_ptr()), static_cast<T*>(rstd.data_ptr()), s, eps);
  });
  STRATA_CUDA_CHECK_LAUNCH("layer_norm ", x.str());
}

void CudaBackend::layer_norm_backward(const Tensor& gx, const Tensor& gw, const Tensor& gb, const Tensor& gy,
                                      const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor& w) {
  cpu::check_row_kernel_input(x, "layer_norm_backward");
  cpu::check_row_kernel_input(gy, "layer_norm_backward");
  check_rows("layer_norm_backward", {&gx, &gw, &gb, &mean, &rstd, &w}, x.dtype());
  const int dev = check_on_device("layer_norm_backward", {&gx, &gw, &gb, &gy, &x, &mean, &rstd, &w});
  const Rows s = rows_of(x);
  check_numel("layer_norm_backward", {&gx, &gy}, x.numel());
  check_numel("layer_norm_backward", {&mean, &rstd}, s.R);
  check_numel("layer_norm_backward", {&w, &gw, &gb}, s.C);
  if (x.numel() == 0) return;
  context(dev);
  DeviceGuard guard(dev);
  by_dtype(x, [&](auto v) {
    using T = decltype(v);
    const T* g = static_cast<const T*>(gy.data_ptr());
    const T* xp = static_cast<const T*>(x.data_ptr());
    const T* mp = static_cast<const T*>(mean.data_ptr());
    const T* rp = static_cast<const T*>(rstd.data_ptr());
    if (gx.defined()) {
      layer_norm_backward_x_kernel<T><<<row_grid(s.R), row_block_threads(s.C), 0, compute_stream()>>>(
          static_cast<T*>(gx.data_ptr()), g, xp, mp, rp, ptr_or_null<T>(w), s);
      STRATA_CUDA_CHECK_LAUNCH("layer_norm_backward ", x.str());
    }
    if (gw.defined() || gb.defined()) {
      // Fixed chunking (a function of R only) keeps the column sums reproducible.
      const int64_t rows_per_chunk = std::max<int64_t>(256, (s.R + 1023) / 1024);
      const int64_t chunks = std::max<int64_t>(1, (s.R + rows_per_chunk - 1) / rows_per_chunk);
      Tensor pw = gw.defined() ? empty({chunks, s.C}, DType::f64, dev) : Tensor();
      Tensor pb = gb.defined() ? empty({chunks, s.C}, DType::f64, dev) : Tensor();
      const dim3 grid(unsigned((s.C + kThreads - 1) / kThreads), unsigned(chunks));
      layer_norm_backward_wb_partial<T><<<grid, kThreads, 0, compute_stream()>>>(
          g, xp, mp, rp, s, rows_per_chunk, mut_or_null<double>(pw), mut_or_null<double>(pb));
      STRATA_CUDA_CHECK_LAUNCH("layer_norm_backward weight/bias of ", x.str());
      layer_norm_backward_wb_finish<T><<<grid_for(s.C), kThreads, 0, compute_stream()>>>(
          ptr_or_null<double>(pw), ptr_or_null<double>(pb), chunks, s.C, mut_or_null<T>(gw), mut_or_null<T>(gb));
      STRATA_CUDA_CHECK_LAUNCH("layer_norm_backward weight/bias of ", x.str());
    }
  });
}

void CudaBackend::cross_entropy(const Tensor& loss, const Tensor& lse, const Tensor& logits, const Tensor& target,
                                int64_t ignore_index) {
  cpu::check_row_kernel_input(logits, "cross_entropy");
  check_rows("cross_entropy", {&loss, &lse}, logits.dtype());
  check_rows("cross_entropy", {&target}, DType::i64);
  const int dev = check_on_device("cross_entropy", {&loss, &lse, &logits, &target});
  const Rows s = rows_of(logits);
  check_numel("cross_entropy", {&loss, &lse, &target}, s.R);
  if (s.R == 0) return;
  context(dev);
  DeviceGuard guard(dev);
  DeviceErrorSlot bad(*this, dev);
  by_dtype(logits, [&](auto v) {
    using T = decltype(v);
    cross_entropy_kernel<T><<<row_grid(s.R), row_block_threads(s.C), 0, compute_stream()>>>(
        static_cast<const T*>(logits.data_ptr()), static_cast<const int64_t*>(target.data_ptr()),
        static_cast<T*>(loss.data_ptr()), static_cast<T*>(lse.data_ptr()), s, ignore_index, bad.ptr());
  });
  STRATA_CUDA_CHECK_LAUNCH("cross_entropy ", logits.str());
  int64_t value = 0;
  STRATA_CHECK(!bad.read(&value), IndexError, "cross_entropy: a target is outside [0, ", s.C, ") for logits ",
               logits.str(), " (target ", value, ")");
}

void CudaBackend::cross_entropy_backward(const Tensor& gl, const Tensor& gloss, const Tensor& logits,
                                         const Tensor& lse, const Tensor& target, int64_t ignore_index) {
  cpu::check_row_kernel_input(logits, "cross_entropy_backward");
  check_rows("cross_entropy_backward", {&gloss, &lse}, logits.dtype());
  const bool narrow = logits.dtype() == DType::f32 && (gl.dtype() == DType::bf16 || gl.dtype() == DType::f16);
  if (!narrow) check_rows("cross_entropy_backward", {&gl}, logits.dtype());
  STRATA_CHECK(gl.is_contiguous(), TypeError, "cross_entropy_backward: expects a contiguous gradient, got ",
               gl.str());
  check_rows("cross_entropy_backward", {&target}, DType::i64);
  const int dev = check_on_device("cross_entropy_backward", {&gl, &gloss, &logits, &lse, &target});
  const Rows s = rows_of(logits);
  check_numel("cross_entropy_backward", {&gl}, logits.numel());
  check_numel("cross_entropy_backward", {&gloss, &lse, &target}, s.R);
  if (logits.numel() == 0) return;
  context(dev);
  DeviceGuard guard(dev);
  auto launch = [&](auto tv, auto dv, auto store) {
    using T = decltype(tv);
    using D = decltype(dv);
    cross_entropy_backward_kernel<T, D, decltype(store)>
        <<<row_grid(s.R), row_block_threads(s.C), 0, compute_stream()>>>(
            static_cast<D*>(gl.data_ptr()), static_cast<const T*>(gloss.data_ptr()),
            static_cast<const T*>(logits.data_ptr()), static_cast<const T*>(lse.data_ptr()),
            static_cast<const int64_t*>(target.data_ptr()), s, ignore_index);
  };
  if (gl.dtype() == DType::bf16)
    launch(float{}, uint16_t{}, StoreBf16{});
  else if (gl.dtype() == DType::f16)
    launch(float{}, uint16_t{}, StoreF16{});
  else
    by_dtype(logits, [&](auto v) { launch(v, v, StoreSame{}); });
  STRATA_CUDA_CHECK_LAUNCH("cross_entropy_backward ", logits.str());
}

}  // namespace strata::gpu
