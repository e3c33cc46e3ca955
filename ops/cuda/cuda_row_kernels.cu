// CUDA softmax / log-softmax and softmax cross-entropy over contiguous [rows, cols] f32/f64
// tensors, forward and backward. One block per row; the formulas (and which sums run in double)
// are those of ops/cpu/cpu_row_kernels.cpp, and the reductions are fixed block trees, so every
// result is reproducible bit for bit.
#include <algorithm>
#include <limits>

#include "ops/common/elementwise_math.h"
#include "ops/cpu/cpu_backend.h"
#include "ops/cuda/cuda_backend.h"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/cuda_device_utils.cuh"
#include "ops/cuda/cuda_rows.cuh"

namespace strata::gpu {

namespace {

using common::m_exp;
using namespace row_util;

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

// Row r's lse and loss (lse - x[target]; 0 for an ignored target), by one thread. A target
// outside [0, C) is flagged in bad = {1, target} for the host to raise.
template <class T>
__device__ __forceinline__ void write_row_loss(T* loss, T* lse, const T* xr, int64_t r, int64_t tr, double l,
                                               int64_t C, int64_t ignore, int64_t* bad) {
  lse[r] = T(l);
  if (tr == ignore) {
    loss[r] = T(0);
  } else if (tr < 0 || tr >= C) {
    bad[0] = 1;
    bad[1] = tr;
    loss[r] = T(0);
  } else {
    loss[r] = T(l - double(xr[tr]));
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
    if (threadIdx.x == 0) write_row_loss(loss, lse, xr, r, t[r], l, s.C, ignore, bad);
  }
}

template <class T, class D, class Conv>
__global__ void cross_entropy_backward_kernel(D* d, const T* gloss, const T* x, const T* lse,
                                              const int64_t* t, Rows s, int64_t ignore) {
  const Conv cv;
  STRATA_FOR_ROWS(r, s.R) {
    const T* xr = x + r * s.C;
    D* dr = d + r * s.C;
    const int64_t tr = t[r];
    if (tr == ignore) {
      STRATA_FOR_COLS(i, s.C) dr[i] = cv.store(T(0));
      continue;
    }
    const T g = gloss[r], l = lse[r];
    STRATA_FOR_COLS(i, s.C) {
      T v = g * T(m_exp(xr[i] - l));
      if (i == tr) v -= g;
      dr[i] = cv.store(v);
    }
  }
}

// Loss, lse and gradient in one kernel (cross_entropy_with_grad). A block of kCeThreads per row
// and about one block per SM, so the rows in flight (132 x 201 KB for GPT-2's vocabulary on an
// H100) stay in L2 between the two passes and each row comes from memory once. Pass 1 keeps each
// thread's running max and its double sum of exp(x - max), rescaled when the max grows, over
// tiles of kCeTile loads in flight; pass 2 writes cross_entropy_backward_kernel's formula with
// the same lse, so the gradient has that kernel's bits for a given lse.
constexpr int kCeThreads = 1024, kCeTile = 8;

template <class T, class D, class Conv>
__global__ void __launch_bounds__(kCeThreads)
    cross_entropy_with_grad_kernel(T* loss, T* lse, D* d, const T* gloss, const T* x, const int64_t* t,
                                   Rows s, int64_t ignore, int64_t* bad) {
  __shared__ double acc[32];
  __shared__ T red[32];
  const Conv cv;
  const T ninf = -std::numeric_limits<T>::infinity();
  STRATA_FOR_ROWS(r, s.R) {
    const T* xr = x + r * s.C;
    D* dr = d + r * s.C;
    T m = ninf;
    double sum = 0;
    for (int64_t base = threadIdx.x; base < s.C; base += int64_t(blockDim.x) * kCeTile) {
      T v[kCeTile];
#pragma unroll
      for (int k = 0; k < kCeTile; ++k) {
        const int64_t i = base + int64_t(k) * blockDim.x;
        v[k] = i < s.C ? xr[i] : ninf;
      }
      T mt = m;
#pragma unroll
      for (int k = 0; k < kCeTile; ++k) mt = v[k] > mt ? v[k] : mt;  // NaN ignored, as row_max
      if (mt > m) {
        if (m != ninf) sum *= ::exp(double(m) - double(mt));
        m = mt;
      }
      if (m != ninf)
#pragma unroll
        for (int k = 0; k < kCeTile; ++k) sum += double(m_exp(v[k] - m));
    }
    const T mx = block_max(m, red);
    double l = double(mx);
    if (!isinf(l)) {  // uniform across the block
      const double part = m == ninf ? 0.0 : sum * ::exp(double(m) - l);
      l += ::log(block_sum(part, acc));
    }
    const int64_t tr = t[r];
    if (threadIdx.x == 0) write_row_loss(loss, lse, xr, r, tr, l, s.C, ignore, bad);
    __syncthreads();  // xr[tr] is read before d (which may be x) is written
    if (tr == ignore) {
      STRATA_FOR_COLS(i, s.C) dr[i] = cv.store(T(0));
      continue;
    }
    const T g = gloss[r], lt = T(l);
    STRATA_FOR_COLS(i, s.C) {
      T v = g * T(m_exp(xr[i] - lt));
      if (i == tr) v -= g;
      dr[i] = cv.store(v);
    }
  }
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

namespace {

// cross_entropy's checks; the rows of the logits.
Rows check_cross_entropy(const char* op, const Tensor& loss, const Tensor& lse, const Tensor& logits,
                         const Tensor& target) {
  cpu::check_row_kernel_input(logits, op);
  check_rows(op, {&loss, &lse}, logits.dtype());
  check_rows(op, {&target}, DType::i64);
  const Rows s = rows_of(logits);
  check_numel(op, {&loss, &lse, &target}, s.R);
  return s;
}

// cross_entropy_backward's checks (the gradient f32/f64 as the logits, or bf16/f16 for f32 logits).
Rows check_cross_entropy_grad(const char* op, const Tensor& gl, const Tensor& gloss, const Tensor& logits,
                              const Tensor& lse, const Tensor& target) {
  cpu::check_row_kernel_input(logits, op);
  check_rows(op, {&gloss, &lse}, logits.dtype());
  if (!narrow_beside(gl, logits)) check_rows(op, {&gl}, logits.dtype());
  STRATA_CHECK(gl.is_contiguous(), TypeError, op, ": expects a contiguous gradient, got ", gl.str());
  check_rows(op, {&target}, DType::i64);
  const Rows s = rows_of(logits);
  check_numel(op, {&gl}, logits.numel());
  check_numel(op, {&gloss, &lse, &target}, s.R);
  return s;
}

void throw_if_target_out_of_range(DeviceErrorSlot& bad, const char* op, const Tensor& logits, int64_t V) {
  int64_t value = 0;
  STRATA_CHECK(!bad.read(&value), IndexError, op, ": a target is outside [0, ", V, ") for logits ",
               logits.str(), " (target ", value, ")");
}

}  // namespace

void CudaBackend::cross_entropy(const Tensor& loss, const Tensor& lse, const Tensor& logits, const Tensor& target,
                                int64_t ignore_index) {
  const Rows s = check_cross_entropy("cross_entropy", loss, lse, logits, target);
  const int dev = check_on_device("cross_entropy", {&loss, &lse, &logits, &target});
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
  throw_if_target_out_of_range(bad, "cross_entropy", logits, s.C);
}

void CudaBackend::cross_entropy_backward(const Tensor& gl, const Tensor& gloss, const Tensor& logits,
                                         const Tensor& lse, const Tensor& target, int64_t ignore_index) {
  const Rows s = check_cross_entropy_grad("cross_entropy_backward", gl, gloss, logits, lse, target);
  const int dev = check_on_device("cross_entropy_backward", {&gl, &gloss, &logits, &lse, &target});
  if (logits.numel() == 0) return;
  context(dev);
  DeviceGuard guard(dev);
  by_row_and_element_dtype(logits, gl, [&](auto tv, auto dv, auto conv) {
    using T = decltype(tv);
    using D = decltype(dv);
    cross_entropy_backward_kernel<T, D, decltype(conv)>
        <<<row_grid(s.R), row_block_threads(s.C), 0, compute_stream()>>>(
            static_cast<D*>(gl.data_ptr()), static_cast<const T*>(gloss.data_ptr()),
            static_cast<const T*>(logits.data_ptr()), static_cast<const T*>(lse.data_ptr()),
            static_cast<const int64_t*>(target.data_ptr()), s, ignore_index);
  });
  STRATA_CUDA_CHECK_LAUNCH("cross_entropy_backward ", logits.str());
}

void CudaBackend::cross_entropy_with_grad(const Tensor& loss, const Tensor& lse, const Tensor& gl,
                                          const Tensor& gloss, const Tensor& logits, const Tensor& target,
                                          int64_t ignore_index) {
  const char* op = "cross_entropy_with_grad";
  const Rows s = check_cross_entropy(op, loss, lse, logits, target);
  check_cross_entropy_grad(op, gl, gloss, logits, lse, target);
  const int dev = check_on_device(op, {&loss, &lse, &gl, &gloss, &logits, &target});
  if (s.R == 0) return;
  context(dev);
  DeviceGuard guard(dev);
  int sms = 0;
  STRATA_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), op, ": SM count");
  const unsigned grid = unsigned(std::min<int64_t>(s.R, std::max(sms, 1)));
  DeviceErrorSlot bad(*this, dev);
  by_row_and_element_dtype(logits, gl, [&](auto tv, auto dv, auto conv) {
    using T = decltype(tv);
    using D = decltype(dv);
    cross_entropy_with_grad_kernel<T, D, decltype(conv)><<<grid, kCeThreads, 0, compute_stream()>>>(
        static_cast<T*>(loss.data_ptr()), static_cast<T*>(lse.data_ptr()), static_cast<D*>(gl.data_ptr()),
        static_cast<const T*>(gloss.data_ptr()), static_cast<const T*>(logits.data_ptr()),
        static_cast<const int64_t*>(target.data_ptr()), s, ignore_index, bad.ptr());
  });
  STRATA_CUDA_CHECK_LAUNCH(op, " ", logits.str());
  throw_if_target_out_of_range(bad, op, logits, s.C);
}

}  // namespace strata::gpu
