// CUDA row reductions (sum, mean, max, min, argmax, argmin). Deterministic: the split of a
// row into threads and chunks depends only on the row length and row count, partial results
// combine in fixed shuffle trees, and nothing uses atomics. Dtype rules mirror
// CpuBackend::reduce_rows: floats reduce in f32/f64 (sums accumulate in double), integers and
// bool in i64; max/min/arg* pick the first NaN if there is one, else the first extremum.
#include "ops/cuda/cuda_backend.h"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/cuda_device_utils.cuh"

namespace strata::gpu {

namespace {

// Sums accumulate in double (as on the CPU) except for integers, which stay exact in i64.
template <class T> struct SumAcc { using type = double; };
template <> struct SumAcc<int64_t> { using type = int64_t; };

// Work layout of one reduce_rows call; a pure function of (rows, n).
struct ReduceLayout {
  int group;       // threads per work item: one warp, or the whole block
  int64_t chunk;   // elements per work item
  int64_t chunks;  // work items per row
};

constexpr int64_t kSplitMinLength = 65536;  // rows this long split into chunks when few
constexpr int64_t kSplitMaxRows = 256;
constexpr int64_t kChunk = 16384;

ReduceLayout reduce_layout(int64_t rows, int64_t n) {
  ReduceLayout L{n <= 1024 ? 32 : kThreads, n, 1};
  if (rows < kSplitMaxRows && n >= kSplitMinLength) {
    L.chunk = kChunk;
    L.chunks = (n + kChunk - 1) / kChunk;
  }
  return L;
}

template <class A>
__device__ __forceinline__ A group_sum(A v, int group, A* smem) {
  if (group == 32) return __shfl_sync(0xffffffffu, warp_sum(v), 0);
  return block_sum(v, smem);
}

template <class T, class A>
__device__ __forceinline__ void store_sum(char* out, DType out_dt, int64_t r, A total, double scale) {
  T v;
  if constexpr (std::is_integral_v<A>)
    v = scale == 1.0 ? T(total) : T(double(total) * scale);
  else
    v = T(total * scale);
  store_as<T>(out + r * int64_t(element_size(out_dt)), out_dt, v);
}

// One group of threads per (row, chunk) work item; writes the row's result when the row is
// one chunk, else the chunk's partial sum.
template <class T>
__global__ void sum_kernel(const char* in, DType in_dt, int64_t n, int64_t items, ReduceLayout L,
                           typename SumAcc<T>::type* partial, char* out, DType out_dt, double scale) {
  using A = typename SumAcc<T>::type;
  __shared__ A smem[32];
  const int64_t es = int64_t(element_size(in_dt));
  const int lane = int(threadIdx.x) % L.group, groups = int(blockDim.x) / L.group;
  for (int64_t w = int64_t(blockIdx.x) * groups + threadIdx.x / L.group; w < items;
       w += int64_t(gridDim.x) * groups) {
    const int64_t r = w / L.chunks, begin = (w % L.chunks) * L.chunk;
    const int64_t end = begin + L.chunk < n ? begin + L.chunk : n;
    const char* row = in + r * n * es;
    A acc = A(0);
    for (int64_t i = begin + lane; i < end; i += L.group) acc += A(load_as<T>(row + i * es, in_dt));
    acc = group_sum(acc, L.group, smem);
    if (lane == 0) {
      if (partial) partial[w] = acc;
      else store_sum<T>(out, out_dt, r, acc, scale);
    }
  }
}

// Adds each row's chunk partials in order (one warp per row).
template <class T>
__global__ void sum_finish_kernel(const typename SumAcc<T>::type* partial, int64_t rows, int64_t chunks,
                                  char* out, DType out_dt, double scale) {
  using A = typename SumAcc<T>::type;
  const int lane = int(threadIdx.x) % 32, groups = int(blockDim.x) / 32;
  for (int64_t r = int64_t(blockIdx.x) * groups + threadIdx.x / 32; r < rows; r += int64_t(gridDim.x) * groups) {
    A acc = A(0);
    for (int64_t c = lane; c < chunks; c += 32) acc += partial[r * chunks + c];
    acc = __shfl_sync(0xffffffffu, warp_sum(acc), 0);
    if (lane == 0) store_sum<T>(out, out_dt, r, acc, scale);
  }
}

// A candidate extremum; index -1 means none yet.
template <class T>
struct Best {
  T v;
  int64_t i;
};

template <class T>
__device__ __forceinline__ Best<T> better(Best<T> a, Best<T> b, bool want_max) {
  if (a.i < 0) return b;
  if (b.i < 0) return a;
  const bool an = a.v != a.v, bn = b.v != b.v;
  if (an || bn) {
    if (an && bn) return a.i < b.i ? a : b;
    return an ? a : b;
  }
  if (want_max ? a.v > b.v : a.v < b.v) return a;
  if (want_max ? b.v > a.v : b.v < a.v) return b;
  return a.i < b.i ? a : b;
}

template <class T>
__device__ __forceinline__ Best<T> warp_best(Best<T> b, bool want_max) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    Best<T> other{__shfl_down_sync(0xffffffffu, b.v, o), __shfl_down_sync(0xffffffffu, b.i, o)};
    b = better(b, other, want_max);
  }
  return b;  // valid in lane 0
}

// One group of threads per (row, chunk) work item, as for sums: writes the row's result when the
// row is one chunk, else the chunk's candidate to pv/pi (better() does not depend on the order
// candidates meet in, so the chunks' results combine to the unsplit row's).
template <class T>
__global__ void extremum_kernel(const char* in, DType in_dt, int64_t n, int64_t items, ReduceLayout L,
                                bool want_max, bool want_index, T* pv, int64_t* pi, char* out, DType out_dt) {
  __shared__ T sv[32];
  __shared__ int64_t si[32];
  const int64_t es = int64_t(element_size(in_dt));
  const int group = L.group;
  const int lane = int(threadIdx.x) % group, groups = int(blockDim.x) / group;
  for (int64_t w = int64_t(blockIdx.x) * groups + threadIdx.x / group; w < items;
       w += int64_t(gridDim.x) * groups) {
    const int64_t r = w / L.chunks, begin = (w % L.chunks) * L.chunk;
    const int64_t end = begin + L.chunk < n ? begin + L.chunk : n;
    const char* row = in + r * n * es;
    Best<T> b{T(0), -1};
    // Each thread scans its elements in index order, keeping the first NaN once it sees one.
    for (int64_t i = begin + lane; i < end; i += group) {
      const T v = load_as<T>(row + i * es, in_dt);
      if (b.i < 0 || (b.v == b.v && (v != v || (want_max ? v > b.v : v < b.v)))) b = Best<T>{v, i};
    }
    b = warp_best(b, want_max);
    if (group > 32) {
      const int warp = int(threadIdx.x) >> 5;
      __syncthreads();
      if ((threadIdx.x & 31) == 0) {
        sv[warp] = b.v;
        si[warp] = b.i;
      }
      __syncthreads();
      if (threadIdx.x == 0)
        for (int k = 1; k < group / 32; ++k) b = better(b, Best<T>{sv[k], si[k]}, want_max);
    }
    if (lane == 0) {
      if (pv) {
        pv[w] = b.v;
        pi[w] = b.i;
      } else if (want_index) {
        reinterpret_cast<int64_t*>(out)[r] = b.i;
      } else {
        store_as<T>(out + r * int64_t(element_size(out_dt)), out_dt, b.v);
      }
    }
  }
}

// The best of each row's chunk candidates (one warp per row).
template <class T>
__global__ void extremum_finish_kernel(const T* pv, const int64_t* pi, int64_t rows, int64_t chunks,
                                       bool want_max, bool want_index, char* out, DType out_dt) {
  const int lane = int(threadIdx.x) % 32, groups = int(blockDim.x) / 32;
  for (int64_t r = int64_t(blockIdx.x) * groups + threadIdx.x / 32; r < rows;
       r += int64_t(gridDim.x) * groups) {
    Best<T> b{T(0), -1};
    for (int64_t c = lane; c < chunks; c += 32)
      b = better(b, Best<T>{pv[r * chunks + c], pi[r * chunks + c]}, want_max);
    b = warp_best(b, want_max);
    if (lane == 0) {
      if (want_index)
        reinterpret_cast<int64_t*>(out)[r] = b.i;
      else
        store_as<T>(out + r * int64_t(element_size(out_dt)), out_dt, b.v);
    }
  }
}

template <class T>
void reduce_typed(ReduceOp op, const Tensor& out, const Tensor& in, int64_t rows, int64_t n, CudaBackend& be) {
  const char* x = static_cast<const char*>(in.data_ptr());
  char* y = static_cast<char*>(out.data_ptr());
  if (op == ReduceOp::Sum || op == ReduceOp::Mean) {
    using A = typename SumAcc<T>::type;
    const double scale = op == ReduceOp::Mean ? 1.0 / double(n) : 1.0;
    const ReduceLayout L = reduce_layout(rows, n);
    const int64_t items = rows * L.chunks;
    const int groups = kThreads / L.group;
    const unsigned grid = grid_for(items, groups);
    if (L.chunks == 1) {
      sum_kernel<T><<<grid, kThreads, 0, compute_stream()>>>(x, in.dtype(), n, items, L, nullptr, y, out.dtype(),
                                                             scale);
    } else {
      Tensor partial = be.empty({items}, std::is_integral_v<A> ? DType::i64 : DType::f64, in.device().index);
      A* p = static_cast<A*>(partial.data_ptr());
      sum_kernel<T><<<grid, kThreads, 0, compute_stream()>>>(x, in.dtype(), n, items, L, p, y, out.dtype(), scale);
      STRATA_CUDA_CHECK_LAUNCH("reduce_rows sum of ", in.str());
      sum_finish_kernel<T><<<grid_for(rows, kThreads / 32), kThreads, 0, compute_stream()>>>(p, rows, L.chunks, y,
                                                                                           out.dtype(), scale);
    }
    STRATA_CUDA_CHECK_LAUNCH("reduce_rows sum of ", in.str());
    return;
  }
  const bool want_max = op == ReduceOp::Max || op == ReduceOp::ArgMax;
  const bool want_index = op == ReduceOp::ArgMax || op == ReduceOp::ArgMin;
  // Few long rows split into chunks as sums do: a whole 16M-entry index's min is not one block's.
  const ReduceLayout L = reduce_layout(rows, n);
  const int64_t items = rows * L.chunks;
  const unsigned grid = grid_for(items, kThreads / L.group);
  if (L.chunks == 1) {
    extremum_kernel<T><<<grid, kThreads, 0, compute_stream()>>>(x, in.dtype(), n, items, L, want_max,
                                                                want_index, nullptr, nullptr, y, out.dtype());
  } else {
    Tensor values = be.empty({items * int64_t(sizeof(T))}, DType::u8, in.device().index);
    Tensor positions = be.empty({items}, DType::i64, in.device().index);
    T* pv = static_cast<T*>(values.data_ptr());
    int64_t* pi = static_cast<int64_t*>(positions.data_ptr());
    extremum_kernel<T><<<grid, kThreads, 0, compute_stream()>>>(x, in.dtype(), n, items, L, want_max,
                                                                want_index, pv, pi, y, out.dtype());
    STRATA_CUDA_CHECK_LAUNCH("reduce_rows max/min of ", in.str());
    extremum_finish_kernel<T><<<grid_for(rows, kThreads / 32), kThreads, 0, compute_stream()>>>(
        pv, pi, rows, L.chunks, want_max, want_index, y, out.dtype());
  }
  STRATA_CUDA_CHECK_LAUNCH("reduce_rows max/min of ", in.str());
}

}  // namespace

void CudaBackend::reduce_rows(ReduceOp op, const Tensor& out, const Tensor& in, int64_t n) {
  const int dev = check_on_device("reduce_rows", {&out, &in});
  STRATA_CHECK(in.is_contiguous() && out.is_contiguous(), ValueError,
               "reduce_rows: expects contiguous tensors, got ", in.str(), " -> ", out.str());
  const int64_t rows = out.numel();
  STRATA_CHECK(rows * n == in.numel(), ShapeError, "reduce_rows: ", in.str(), " is not ", rows, " rows of ", n);
  if (rows == 0) return;
  STRATA_CHECK(n > 0 || op == ReduceOp::Sum || op == ReduceOp::Mean, ValueError,
               "reduce: cannot take max/min/argmax of an empty dimension of ", in.str());
  const bool index_out = op == ReduceOp::ArgMax || op == ReduceOp::ArgMin;
  STRATA_CHECK(!index_out || out.dtype() == DType::i64, TypeError, "reduce_rows: argmax/argmin write i64, got ",
               out.str());
  context(dev);
  DeviceGuard guard(dev);
  if (in.dtype() == DType::f64) return reduce_typed<double>(op, out, in, rows, n, *this);
  if (is_floating(in.dtype())) return reduce_typed<float>(op, out, in, rows, n, *this);
  reduce_typed<int64_t>(op, out, in, rows, n, *this);
}

}  // namespace strata::gpu
