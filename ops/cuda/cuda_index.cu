// CUDA indexing kernels: index_select, index_add, gather, scatter_add on contiguous tensors
// viewed as [outer, dim, inner]; bf16/f16 go through f32 like the CPU's. The accumulating
// kernels sum every output element's contributions in the CPU's order (the index's), without
// atomics: scatter_add and short index_adds give each thread one output column walking the whole
// index; a long index_add (an embedding's backward) sorts the index stably first and gives each
// run of equal entries a warp, so the work spreads over the rows it touches. A run longer than
// kLongRun entries (a hub row of a graph's scatter) is summed instead in kPiece-entry pieces, a
// warp each, and the pieces' sums added to the row in order: the same bits every run, no longer
// the sequential sum's. Indices are validated
// on the device first (IndexError naming the op, like the CPU), at the cost of one
// device-to-host sync per call.
#include <cub/device/device_radix_sort.cuh>

#include "ops/common/dims3.h"
#include "ops/common/dtype_dispatch.h"
#include "ops/cuda/cuda_backend.h"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/cuda_device_utils.cuh"

namespace strata::gpu {

namespace {

using common::Dims3;
using common::dims3;

__global__ void check_index_kernel(const int64_t* idx, int64_t n, int64_t bound, int64_t* bad) {
  STRATA_GRID_STRIDE(i, n) {
    const int64_t v = idx[i];
    if (v < 0 || v >= bound) {
      bad[0] = 1;
      bad[1] = v;
    }
  }
}

void validate_index(CudaBackend& be, int dev, const Tensor& index, int64_t bound, const char* op, const Tensor& t) {
  const int64_t n = index.numel();
  if (n == 0) return;
  DeviceErrorSlot slot(be, dev);
  check_index_kernel<<<grid_for(n), kThreads, 0, compute_stream()>>>(static_cast<const int64_t*>(index.data_ptr()),
                                                                      n, bound, slot.ptr());
  STRATA_CUDA_CHECK_LAUNCH(op, ": checking the index of ", t.str());
  int64_t v = 0;
  STRATA_CHECK(!slot.read(&v), IndexError, op, ": index ", v, " out of range [0, ", bound, ") for ", t.str());
}

template <int Bytes>
__global__ void index_select_kernel(char* y, const char* x, const int64_t* idx, int64_t n, Dims3 in3, int64_t total) {
  STRATA_GRID_STRIDE(w, total) {
    const int64_t c = w % in3.inner, q = w / in3.inner;
    const int64_t j = q % n, o = q / n;
    reinterpret_cast<RawElement<Bytes>*>(y)[w] =
        reinterpret_cast<const RawElement<Bytes>*>(x)[(o * in3.d + idx[j]) * in3.inner + c];
  }
}

template <class T>
__global__ void index_add_kernel(T* y, const T* x, const int64_t* idx, int64_t n, Dims3 out3) {
  STRATA_GRID_STRIDE(w, out3.outer * out3.inner) {
    const int64_t o = w / out3.inner, c = w % out3.inner;
    for (int64_t j = 0; j < n; ++j) y[(o * out3.d + idx[j]) * out3.inner + c] += x[(o * n + j) * out3.inner + c];
  }
}

constexpr int64_t kLongRun = 4096;  // longer runs of one index entry are summed in pieces,
constexpr int64_t kPiece = 256;     // this long (at most kLongRun: a long run always crosses a chunk end)

// The first position in [lo, hi) of the sorted keys whose key is >= v (after_v: > v).
__device__ int64_t sorted_bound(const int64_t* key, int64_t lo, int64_t hi, int64_t v, bool after_v) {
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (key[mid] < v || (after_v && key[mid] == v))
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

// After a stable sort of the index (keys) carrying the positions (perm): the warp of sorted
// position p, when p starts a run of equal entries of at most kLongRun, adds the run's source
// rows to out row key[p] in position order, starting from the row's value: the sequential sum's
// order, so its bits. Longer runs are left to the piece kernels below.
template <class T>
__global__ void index_add_sorted_kernel(T* y, const T* x, const int64_t* key, const int64_t* perm, int64_t n,
                                        Dims3 out3) {
  const int64_t p = int64_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (p >= n || (p > 0 && key[p] == key[p - 1])) return;
  const int64_t row = key[p], end = sorted_bound(key, p, n, row, /*after_v=*/true);
  if (end - p > kLongRun) return;
  for (int64_t o = 0; o < out3.outer; ++o)
    for (int64_t c = lane; c < out3.inner; c += 32) {
      T* dst = y + (o * out3.d + row) * out3.inner + c;
      T acc = *dst;
#pragma unroll 4
      for (int64_t q = p; q < end; ++q) acc += x[(o * n + perm[q]) * out3.inner + c];
      *dst = acc;
    }
}

// The sorted positions in chunks of kPiece, a warp each: every long run's piece in the chunk is
// summed from zero into partial[chunk][slot][outer][inner], slot 1 for the piece where the run
// starts, 0 for the others (a chunk holds at most one of each: a long run cannot start and end in it).
template <class T>
__global__ void index_add_piece_kernel(T* partial, const T* x, const int64_t* key, const int64_t* perm,
                                       int64_t n, Dims3 out3) {
  const int64_t ch = int64_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int64_t s = ch * kPiece, e = s + kPiece < n ? s + kPiece : n;
  if (s >= n) return;
  for (int64_t q = s; q < e;) {
    const int64_t row = key[q];
    const int64_t a = q > s ? q : sorted_bound(key, 0, q, row, /*after_v=*/false);
    const int64_t b = sorted_bound(key, q, n, row, /*after_v=*/true), piece_end = b < e ? b : e;
    if (b - a > kLongRun) {
      const int64_t slot = a >= s ? 1 : 0;
      for (int64_t o = 0; o < out3.outer; ++o)
        for (int64_t c = lane; c < out3.inner; c += 32) {
          T acc = T(0);
#pragma unroll 4
          for (int64_t k = q; k < piece_end; ++k) acc += x[(o * n + perm[k]) * out3.inner + c];
          partial[((ch * 2 + slot) * out3.outer + o) * out3.inner + c] = acc;
        }
    }
    q = piece_end;
  }
}

// A warp per chunk where a long run starts: the row's value plus its pieces' sums in chunk order.
template <class T>
__global__ void index_add_finish_kernel(T* y, const T* partial, const int64_t* key, int64_t n, Dims3 out3) {
  const int64_t ch = int64_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int64_t s = ch * kPiece, e = s + kPiece;
  if (e >= n) return;  // no run crosses the last chunk's end
  const int64_t row = key[e - 1];
  if (key[e] != row) return;
  const int64_t a = sorted_bound(key, 0, e, row, /*after_v=*/false);
  const int64_t b = sorted_bound(key, e, n, row, /*after_v=*/true);
  if (a < s || b - a <= kLongRun) return;  // started in an earlier chunk, or short
  const int64_t last = (b - 1) / kPiece;
  for (int64_t o = 0; o < out3.outer; ++o)
    for (int64_t c = lane; c < out3.inner; c += 32) {
      T* dst = y + (o * out3.d + row) * out3.inner + c;
      T acc = *dst + partial[((ch * 2 + 1) * out3.outer + o) * out3.inner + c];
#pragma unroll 4
      for (int64_t k = ch + 1; k <= last; ++k) acc += partial[((k * 2) * out3.outer + o) * out3.inner + c];
      *dst = acc;
    }
}

__global__ void iota_kernel(int64_t* v, int64_t n) { STRATA_GRID_STRIDE(i, n) v[i] = i; }

template <class T>
__global__ void gather_kernel(T* y, const T* x, const int64_t* idx, Dims3 idx3, int64_t in_d) {
  STRATA_GRID_STRIDE(pos, idx3.outer * idx3.d * idx3.inner) {
    const int64_t c = pos % idx3.inner, o = pos / idx3.inner / idx3.d;
    y[pos] = x[(o * in_d + idx[pos]) * idx3.inner + c];
  }
}

template <class T>
__global__ void scatter_add_kernel(T* y, const T* x, const int64_t* idx, Dims3 idx3, int64_t out_d) {
  STRATA_GRID_STRIDE(w, idx3.outer * idx3.inner) {
    const int64_t o = w / idx3.inner, c = w % idx3.inner;
    for (int64_t j = 0; j < idx3.d; ++j) {
      const int64_t pos = (o * idx3.d + j) * idx3.inner + c;
      y[(o * out_d + idx[pos]) * idx3.inner + c] += x[pos];
    }
  }
}

void check_contig(std::initializer_list<const Tensor*> ts, const char* op) {
  for (const Tensor* t : ts)
    STRATA_CHECK(t->is_contiguous(), ValueError, op, ": expects contiguous tensors, got ", t->str());
}

void check_index_dtype(const Tensor& index, const char* op) {
  STRATA_CHECK(index.dtype() == DType::i64, TypeError, op, ": index must be i64, got ", index.str());
}

// A bad shape would make a kernel read out of bounds, and a GPU fault ends the process's CUDA
// context, so the shapes the ops layer guarantees are checked again here.
void check_same_except(const char* op, const Tensor& a, const Tensor& b, int64_t dim) {
  bool ok = a.dim() == b.dim() && dim >= 0 && dim < std::max<int64_t>(a.dim(), 1);
  for (int64_t d = 0; ok && d < a.dim(); ++d) ok = d == dim || a.size(d) == b.size(d);
  STRATA_CHECK(ok, ShapeError, op, ": ", a.str(), " and ", b.str(), " must match outside dim ", dim);
}

void check_size(const char* op, bool ok, const Tensor& a, const Tensor& b) {
  STRATA_CHECK(ok, ShapeError, op, ": shapes ", shape_str(a.shape()), " and ", shape_str(b.shape()), " do not fit");
}

// A contiguous f32 copy of `t` on its device.
Tensor f32_copy(CudaBackend& be, const Tensor& t) {
  Tensor c = be.empty(t.shape(), DType::f32, t.device().index);
  launch_convert(c, t);
  return c;
}

// 16-bit floats accumulate in f32 and round once at the end, as on the CPU: runs f on an f32
// copy of `out` and converts the result back.
template <class F>
void through_f32(CudaBackend& be, const Tensor& out, F f) {
  Tensor o32 = f32_copy(be, out);
  f(o32);
  launch_convert(out, o32);
}

}  // namespace

void CudaBackend::index_select(const Tensor& out, const Tensor& in, int64_t dim, const Tensor& index) {
  check_contig({&out, &in, &index}, "index_select");
  check_index_dtype(index, "index_select");
  check_same_except("index_select", out, in, dim);
  check_size("index_select", in.dim() > 0 && out.size(dim) == index.numel(), out, index);
  const int dev = check_on_device("index_select", {&out, &in, &index});
  STRATA_CHECK(out.dtype() == in.dtype(), TypeError, "index_select: ", in.str(), " -> ", out.str());
  context(dev);
  DeviceGuard guard(dev);
  const Dims3 in3 = dims3(in, dim);
  validate_index(*this, dev, index, in3.d, "index_select", in);
  const int64_t total = out.numel();
  if (total == 0) return;
  char* y = static_cast<char*>(out.data_ptr());
  const char* x = static_cast<const char*>(in.data_ptr());
  const int64_t* idx = static_cast<const int64_t*>(index.data_ptr());
  const int64_t n = index.numel();
  const unsigned grid = grid_for(total);
  switch (in.element_size()) {
    case 1: index_select_kernel<1><<<grid, kThreads, 0, compute_stream()>>>(y, x, idx, n, in3, total); break;
    case 2: index_select_kernel<2><<<grid, kThreads, 0, compute_stream()>>>(y, x, idx, n, in3, total); break;
    case 4: index_select_kernel<4><<<grid, kThreads, 0, compute_stream()>>>(y, x, idx, n, in3, total); break;
    default: index_select_kernel<8><<<grid, kThreads, 0, compute_stream()>>>(y, x, idx, n, in3, total); break;
  }
  STRATA_CUDA_CHECK_LAUNCH("index_select ", in.str(), " -> ", out.str());
}

void CudaBackend::index_add(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src) {
  check_contig({&out, &src, &index}, "index_add");
  check_index_dtype(index, "index_add");
  check_same_except("index_add", out, src, dim);
  check_size("index_add", out.dim() > 0 && src.size(dim) == index.numel(), src, index);
  const int dev = check_on_device("index_add", {&out, &index, &src});
  STRATA_CHECK(out.dtype() == src.dtype(), TypeError, "index_add: source ", src.str(), " into ", out.str());
  context(dev);
  DeviceGuard guard(dev);
  if (common::is_half(out.dtype()))
    return through_f32(*this, out,
                       [&](const Tensor& o32) { index_add(o32, dim, index, f32_copy(*this, src)); });
  const Dims3 out3 = dims3(out, dim);
  common::dispatch_float_or_int(out.dtype(), "index_add", [&](auto v) {
    using T = decltype(v);
    validate_index(*this, dev, index, out3.d, "index_add", out);
    if (src.numel() == 0) return;
    const int64_t n = index.numel();
    const int64_t* idx = static_cast<const int64_t*>(index.data_ptr());
    // A long index on few columns would leave most of the device idle walking it column by column.
    if (n < 4096 || n < 32 * out3.outer * out3.inner) {
      index_add_kernel<T><<<grid_for(out3.outer * out3.inner), kThreads, 0, compute_stream()>>>(
          static_cast<T*>(out.data_ptr()), static_cast<const T*>(src.data_ptr()), idx, n, out3);
      STRATA_CUDA_CHECK_LAUNCH("index_add ", src.str(), " into ", out.str());
      return;
    }
    // Stable radix sort of (entry, position) over the bits the entries use (they are in [0, d)).
    int bits = 1;
    while (bits < 63 && (int64_t(1) << bits) < out3.d) ++bits;
    Tensor perm_in = empty({n}, DType::i64, dev), keys = empty({n}, DType::i64, dev),
           perm = empty({n}, DType::i64, dev);
    iota_kernel<<<grid_for(n), kThreads, 0, compute_stream()>>>(static_cast<int64_t*>(perm_in.data_ptr()), n);
    size_t temp_bytes = 0;
    STRATA_CUDA_CHECK(
        cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, idx, static_cast<int64_t*>(keys.data_ptr()),
                                        static_cast<const int64_t*>(perm_in.data_ptr()),
                                        static_cast<int64_t*>(perm.data_ptr()), n, 0, bits, compute_stream()),
        "index_add ", src.str(), ": sizing the index sort");
    Tensor temp = empty({int64_t(std::max<size_t>(temp_bytes, 1))}, DType::u8, dev);
    STRATA_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
                          temp.data_ptr(), temp_bytes, idx, static_cast<int64_t*>(keys.data_ptr()),
                          static_cast<const int64_t*>(perm_in.data_ptr()),
                          static_cast<int64_t*>(perm.data_ptr()), n, 0, bits, compute_stream()),
                      "index_add ", src.str(), ": sorting the index");
    constexpr int kWarpsPerBlock = 8;
    const auto* sorted_keys = static_cast<const int64_t*>(keys.data_ptr());
    const auto* positions = static_cast<const int64_t*>(perm.data_ptr());
    index_add_sorted_kernel<T>
        <<<unsigned((n + kWarpsPerBlock - 1) / kWarpsPerBlock), 32 * kWarpsPerBlock, 0, compute_stream()>>>(
            static_cast<T*>(out.data_ptr()), static_cast<const T*>(src.data_ptr()), sorted_keys, positions, n,
            out3);
    STRATA_CUDA_CHECK_LAUNCH("index_add ", src.str(), " into ", out.str());
    const int64_t chunks = (n + kPiece - 1) / kPiece;
    const unsigned chunk_blocks = unsigned((chunks + kWarpsPerBlock - 1) / kWarpsPerBlock);
    Tensor partial = empty({chunks * 2 * out3.outer * out3.inner}, out.dtype(), dev);
    index_add_piece_kernel<T><<<chunk_blocks, 32 * kWarpsPerBlock, 0, compute_stream()>>>(
        static_cast<T*>(partial.data_ptr()), static_cast<const T*>(src.data_ptr()), sorted_keys, positions, n,
        out3);
    STRATA_CUDA_CHECK_LAUNCH("index_add ", src.str(), " into ", out.str(), ": long runs' pieces");
    index_add_finish_kernel<T><<<chunk_blocks, 32 * kWarpsPerBlock, 0, compute_stream()>>>(
        static_cast<T*>(out.data_ptr()), static_cast<const T*>(partial.data_ptr()), sorted_keys, n, out3);
    STRATA_CUDA_CHECK_LAUNCH("index_add ", src.str(), " into ", out.str(), ": long runs");
  });
}

void CudaBackend::gather(const Tensor& out, const Tensor& in, int64_t dim, const Tensor& index) {
  check_contig({&out, &in, &index}, "gather");
  check_index_dtype(index, "gather");
  check_same_except("gather", in, index, dim);
  check_size("gather", out.shape() == index.shape(), out, index);
  const int dev = check_on_device("gather", {&out, &in, &index});
  STRATA_CHECK(out.dtype() == in.dtype(), TypeError, "gather: ", in.str(), " -> ", out.str());
  context(dev);
  DeviceGuard guard(dev);
  if (common::is_half(in.dtype())) {
    Tensor o32 = empty(out.shape(), DType::f32, dev);
    gather(o32, f32_copy(*this, in), dim, index);
    return launch_convert(out, o32);
  }
  common::dispatch_float_or_int(in.dtype(), "gather", [&](auto v) {
    using T = decltype(v);
    const Dims3 idx3 = dims3(index, dim);
    const int64_t in_d = in.size(dim);
    validate_index(*this, dev, index, in_d, "gather", in);
    if (index.numel() == 0) return;
    gather_kernel<T><<<grid_for(index.numel()), kThreads, 0, compute_stream()>>>(
        static_cast<T*>(out.data_ptr()), static_cast<const T*>(in.data_ptr()),
        static_cast<const int64_t*>(index.data_ptr()), idx3, in_d);
    STRATA_CUDA_CHECK_LAUNCH("gather ", in.str(), " -> ", out.str());
  });
}

void CudaBackend::scatter_add(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src) {
  check_contig({&out, &src, &index}, "scatter_add");
  check_index_dtype(index, "scatter_add");
  check_same_except("scatter_add", out, index, dim);
  check_size("scatter_add", src.shape() == index.shape(), src, index);
  const int dev = check_on_device("scatter_add", {&out, &index, &src});
  STRATA_CHECK(out.dtype() == src.dtype(), TypeError, "scatter_add: source ", src.str(), " into ", out.str());
  context(dev);
  DeviceGuard guard(dev);
  if (common::is_half(out.dtype()))
    return through_f32(*this, out,
                       [&](const Tensor& o32) { scatter_add(o32, dim, index, f32_copy(*this, src)); });
  common::dispatch_float_or_int(out.dtype(), "scatter_add", [&](auto v) {
    using T = decltype(v);
    const Dims3 idx3 = dims3(index, dim);
    const int64_t out_d = out.size(dim);
    validate_index(*this, dev, index, out_d, "scatter_add", out);
    if (index.numel() == 0) return;
    scatter_add_kernel<T><<<grid_for(idx3.outer * idx3.inner), kThreads, 0, compute_stream()>>>(
        static_cast<T*>(out.data_ptr()), static_cast<const T*>(src.data_ptr()),
        static_cast<const int64_t*>(index.data_ptr()), idx3, out_d);
    STRATA_CUDA_CHECK_LAUNCH("scatter_add ", src.str(), " into ", out.str());
  });
}

}  // namespace strata::gpu
