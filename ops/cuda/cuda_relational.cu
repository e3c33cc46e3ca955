// CUDA relational GEMMs (Backend::segment_mm, segment_mm_weight_grad), the CPU's
// (ops/cpu/cpu_relational.cpp) on a GPU: one launch for every segment. The host cuts each segment
// into row tiles and uploads the tile table; a block computes a 64 x 64 output tile of one row
// tile, gathering its x rows and its segment's weight through shared memory, 4 x 4 results per
// thread, scaling and storing (or adding) each row where the scatter index says. Scattered sums and
// the weight gradient's per-tile partial products are added with atomics: a GPU's result is
// exact up to the order of those additions.
#include <algorithm>
#include <vector>

#include "ops/cuda/cuda_backend.h"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/cuda_device_utils.cuh"

namespace strata::gpu {

namespace {

constexpr int kBM = 64, kBN = 64, kBK = 16;  // output tile rows, columns; reduction step
constexpr int kGradRows = 256;               // rows summed per weight-gradient block

// An i32 or i64 index (null: the identity).
template <class I>
__device__ __forceinline__ int64_t row_at(const I* index, int64_t i) {
  return index ? int64_t(index[i]) : i;
}

// tiles [T, 3]: segment, first row, end row.
template <class T, class IG, class IS>
__global__ void segment_mm_kernel(T* out, const T* x, const IG* gather, const T* w, int64_t ws0, int64_t wsk,
                                  int64_t wsn, const int64_t* tiles, const IS* scatter, const T* scale,
                                  int64_t K, int64_t N, bool accumulate) {
  __shared__ T As[kBK][kBM];
  __shared__ T Bs[kBK][kBN];
  const int64_t seg = tiles[int64_t(blockIdx.x) * 3], r0 = tiles[int64_t(blockIdx.x) * 3 + 1],
                r1 = tiles[int64_t(blockIdx.x) * 3 + 2];
  const int64_t n0 = int64_t(blockIdx.y) * kBN;
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  T acc[4][4] = {};
  const T* ws = w + seg * ws0;
  for (int64_t k0 = 0; k0 < K; k0 += kBK) {
    for (int e = threadIdx.x; e < kBK * kBM; e += blockDim.x) {
      const int kk = e % kBK, i = e / kBK;
      const int64_t r = r0 + i, k = k0 + kk;
      As[kk][i] = r < r1 && k < K ? x[row_at(gather, r) * K + k] : T(0);
    }
    for (int e = threadIdx.x; e < kBK * kBN; e += blockDim.x) {
      const int j = e % kBN, kk = e / kBN;
      const int64_t n = n0 + j, k = k0 + kk;
      Bs[kk][j] = n < N && k < K ? ws[k * wsk + n * wsn] : T(0);
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kBK; ++kk) {
      T a[4], b[4];
#pragma unroll
      for (int q = 0; q < 4; ++q) a[q] = As[kk][ty * 4 + q], b[q] = Bs[kk][tx * 4 + q];
#pragma unroll
      for (int p = 0; p < 4; ++p)
#pragma unroll
        for (int q = 0; q < 4; ++q) acc[p][q] += a[p] * b[q];
    }
    __syncthreads();
  }
#pragma unroll
  for (int p = 0; p < 4; ++p) {
    const int64_t r = r0 + ty * 4 + p;
    if (r >= r1) continue;
    const T c = scale ? scale[r] : T(1);
    T* row = out + row_at(scatter, r) * N;
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const int64_t n = n0 + tx * 4 + q;
      if (n >= N) continue;
      const T v = c * acc[p][q];
      if (!accumulate)
        row[n] = v;
      else if (scatter)
        atomicAdd(row + n, v);
      else
        row[n] += v;
    }
  }
}

// grad_w[seg] += sum over the tile's rows r of scale[r] x[gather r]^T gy[scatter r]: a block owns a
// 64 x 64 tile of one segment's K x N gradient.
template <class T, class IG, class IS>
__global__ void segment_mm_weight_grad_kernel(T* gw, const T* x, const IG* gather, const T* gy,
                                              const IS* scatter, const T* scale, const int64_t* tiles,
                                              int64_t K, int64_t N) {
  __shared__ T Xs[kBK][kBM];
  __shared__ T Gs[kBK][kBN];
  const int64_t seg = tiles[int64_t(blockIdx.x) * 3], r0 = tiles[int64_t(blockIdx.x) * 3 + 1],
                r1 = tiles[int64_t(blockIdx.x) * 3 + 2];
  const int64_t k0 = int64_t(blockIdx.y) * kBM, n0 = int64_t(blockIdx.z) * kBN;
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  T acc[4][4] = {};
  for (int64_t rb = r0; rb < r1; rb += kBK) {
    for (int e = threadIdx.x; e < kBK * kBM; e += blockDim.x) {
      const int i = e % kBM, rr = e / kBM;
      const int64_t r = rb + rr, k = k0 + i;
      Xs[rr][i] = r < r1 && k < K ? x[row_at(gather, r) * K + k] * (scale ? scale[r] : T(1)) : T(0);
    }
    for (int e = threadIdx.x; e < kBK * kBN; e += blockDim.x) {
      const int j = e % kBN, rr = e / kBN;
      const int64_t r = rb + rr, n = n0 + j;
      Gs[rr][j] = r < r1 && n < N ? gy[row_at(scatter, r) * N + n] : T(0);
    }
    __syncthreads();
#pragma unroll
    for (int rr = 0; rr < kBK; ++rr) {
      T a[4], b[4];
#pragma unroll
      for (int q = 0; q < 4; ++q) a[q] = Xs[rr][ty * 4 + q], b[q] = Gs[rr][tx * 4 + q];
#pragma unroll
      for (int p = 0; p < 4; ++p)
#pragma unroll
        for (int q = 0; q < 4; ++q) acc[p][q] += a[p] * b[q];
    }
    __syncthreads();
  }
  T* g = gw + seg * K * N;
#pragma unroll
  for (int p = 0; p < 4; ++p) {
    const int64_t k = k0 + ty * 4 + p;
    if (k >= K) continue;
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const int64_t n = n0 + tx * 4 + q;
      if (n < N) atomicAdd(g + k * N + n, acc[p][q]);
    }
  }
}

// The segments' row tiles of `rows` rows on the device, [T, 3] i64; T = 0 when there are no rows.
Tensor tile_table(CudaBackend& be, int dev, const Tensor& offsets, int64_t rows, int64_t* count) {
  STRATA_CHECK(
      offsets.defined() && offsets.dim() == 1 && offsets.dtype() == DType::i64 && offsets.device().is_cpu(),
      TypeError, "segment_mm: offsets must be a CPU i64 [S + 1] tensor, got ",
      offsets.defined() ? offsets.str() : std::string("an undefined tensor"));
  const std::vector<int64_t> off = offsets.contiguous().to_vector<int64_t>();
  std::vector<int64_t> t;
  for (size_t s = 0; s + 1 < off.size(); ++s) {
    STRATA_CHECK(off[s + 1] >= off[s], ValueError, "segment_mm: offsets[", s + 1, "] = ", off[s + 1],
                 " is below offsets[", s, "] = ", off[s]);
    for (int64_t b = off[s]; b < off[s + 1]; b += rows)
      t.insert(t.end(), {int64_t(s), b, std::min(b + rows, off[s + 1])});
  }
  *count = int64_t(t.size() / 3);
  if (*count == 0) return Tensor();
  Tensor host = Tensor::empty({*count, 3}, DType::i64, kCPU);
  std::copy(t.begin(), t.end(), host.data<int64_t>());
  Tensor d = be.empty({*count, 3}, DType::i64, dev);
  be.copy(d, host);
  return d;
}

}  // namespace

void CudaBackend::segment_mm(const Tensor& out, const Tensor& x, const Tensor& gather, const Tensor& weight,
                             const Tensor& offsets, const Tensor& scatter, const Tensor& scale,
                             bool accumulate) {
  const int dev = check_on_device("segment_mm", {&out, &x, &gather, &weight, &scatter, &scale});
  STRATA_CHECK(x.dim() == 2 && out.dim() == 2 && weight.dim() == 3 && weight.size(1) == x.size(1) &&
                   weight.size(2) == out.size(1) && weight.size(0) == offsets.numel() - 1 &&
                   x.is_contiguous() && out.is_contiguous() && (!scale.defined() || scale.is_contiguous()),
               ShapeError, "segment_mm: x ", x.str(), " @ weight ", weight.str(), " -> out ", out.str(),
               " need contiguous x [*, K], out [*, N] and weight [S, K, N] with S + 1 = ", offsets.numel(),
               " offsets");
  context(dev);
  DeviceGuard guard(dev);
  int64_t T = 0;
  const Tensor tiles = tile_table(*this, dev, offsets, kBM, &T);
  const int64_t K = x.size(1), N = out.size(1);
  if (T == 0 || N == 0) return;
  STRATA_CHECK((N + kBN - 1) / kBN < 65536, ShapeError, "segment_mm: ", N,
               " output columns exceed one launch");
  with_float(out, "segment_mm", [&](auto tf) {
    using V = decltype(tf);
    with_index(gather, [&](auto g) {
      with_index(scatter, [&](auto s) {
        const dim3 grid(unsigned(T), unsigned((N + kBN - 1) / kBN));
        segment_mm_kernel<<<grid, 256, 0, compute_stream()>>>(
            static_cast<V*>(out.data_ptr()), static_cast<const V*>(x.data_ptr()), g,
            static_cast<const V*>(weight.data_ptr()), weight.stride(0), weight.stride(1), weight.stride(2),
            tiles.data<int64_t>(), s, scale.defined() ? static_cast<const V*>(scale.data_ptr()) : nullptr, K,
            N, accumulate);
      });
    });
  });
  STRATA_CUDA_CHECK_LAUNCH("segment_mm ", x.str(), " @ ", weight.str());
}

void CudaBackend::segment_mm_weight_grad(const Tensor& grad_weight, const Tensor& x, const Tensor& gather,
                                         const Tensor& grad_y, const Tensor& scatter, const Tensor& scale,
                                         const Tensor& offsets, bool accumulate) {
  const int dev =
      check_on_device("segment_mm_weight_grad", {&grad_weight, &x, &gather, &grad_y, &scatter, &scale});
  STRATA_CHECK(
      x.dim() == 2 && grad_y.dim() == 2 && grad_weight.dim() == 3 && grad_weight.size(1) == x.size(1) &&
          grad_weight.size(2) == grad_y.size(1) && grad_weight.size(0) == offsets.numel() - 1 &&
          x.is_contiguous() && grad_y.is_contiguous() && grad_weight.is_contiguous(),
      ShapeError, "segment_mm_weight_grad: x ", x.str(), ", grad_y ", grad_y.str(), " -> grad_weight ",
      grad_weight.str(), " need contiguous x [*, K], grad_y [*, N], grad_weight [S, K, N]");
  context(dev);
  DeviceGuard guard(dev);
  if (!accumulate) fill(grad_weight, 0.0);
  int64_t T = 0;
  const Tensor tiles = tile_table(*this, dev, offsets, kGradRows, &T);
  const int64_t K = x.size(1), N = grad_y.size(1);
  if (T == 0 || K == 0 || N == 0) return;
  STRATA_CHECK((K + kBM - 1) / kBM < 65536 && (N + kBN - 1) / kBN < 65536, ShapeError,
               "segment_mm_weight_grad: a ", K, " x ", N, " weight exceeds one launch");
  with_float(grad_weight, "segment_mm_weight_grad", [&](auto tf) {
    using V = decltype(tf);
    with_index(gather, [&](auto g) {
      with_index(scatter, [&](auto s) {
        const dim3 grid(unsigned(T), unsigned((K + kBM - 1) / kBM), unsigned((N + kBN - 1) / kBN));
        segment_mm_weight_grad_kernel<<<grid, 256, 0, compute_stream()>>>(
            static_cast<V*>(grad_weight.data_ptr()), static_cast<const V*>(x.data_ptr()), g,
            static_cast<const V*>(grad_y.data_ptr()), s,
            scale.defined() ? static_cast<const V*>(scale.data_ptr()) : nullptr, tiles.data<int64_t>(), K, N);
      });
    });
  });
  STRATA_CUDA_CHECK_LAUNCH("segment_mm_weight_grad ", x.str(), " -> ", grad_weight.str());
}

}  // namespace strata::gpu
