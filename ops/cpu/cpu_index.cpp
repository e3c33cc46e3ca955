// CPU indexing kernels: index_select, index_add, gather, scatter_add. Accumulating kernels
// are parallel only over positions that never collide, so results are deterministic.
#include <cstring>

#include "ops/cpu/cpu_backend.h"
#include "ops/common/dims3.h"
#include "ops/common/dtype_dispatch.h"
#include "ops/cpu/strided_loop.h"

namespace strata::cpu {

namespace {

using common::Dims3;
using common::dims3;

void check_index(int64_t v, int64_t n, const char* op, const Tensor& t) {
  STRATA_CHECK(v >= 0 && v < n, IndexError, op, ": index ", v, " out of range [0, ", n, ") for ", t.str());
}

template <class T>
void index_add_typed(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src) {
  Dims3 o = dims3(out, dim), s = dims3(src, dim);
  const int64_t* idx = index.data<int64_t>();
  T* y = out.data<T>();
  const T* x = src.data<T>();
  for (int64_t j = 0; j < s.d; ++j) check_index(idx[j], o.d, "index_add", out);
  constexpr int64_t kCols = 256;
  const int64_t col_chunks = (o.inner + kCols - 1) / kCols;
#pragma omp parallel for schedule(static) if (src.numel() > kParallelGrain)
  for (int64_t w = 0; w < o.outer * col_chunks; ++w) {
    const int64_t oi = w / col_chunks, c0 = (w % col_chunks) * kCols, c1 = std::min(o.inner, c0 + kCols);
    for (int64_t j = 0; j < s.d; ++j) {
      T* yr = y + (oi * o.d + idx[j]) * o.inner;
      const T* xr = x + (oi * s.d + j) * s.inner;
      for (int64_t c = c0; c < c1; ++c) yr[c] += xr[c];
    }
  }
}

template <class T>
void gather_typed(const Tensor& out, const Tensor& in, int64_t dim, const Tensor& index) {
  Dims3 i3 = dims3(in, dim), x3 = dims3(index, dim);
  const int64_t* idx = index.data<int64_t>();
  const T* x = in.data<T>();
  T* y = out.data<T>();
  // Checked up front: an exception must not escape the OpenMP region below.
  for (int64_t p = 0; p < index.numel(); ++p) check_index(idx[p], i3.d, "gather", in);
#pragma omp parallel for schedule(static) if (index.numel() > kParallelGrain)
  for (int64_t o = 0; o < x3.outer; ++o)
    for (int64_t j = 0; j < x3.d; ++j)
      for (int64_t c = 0; c < x3.inner; ++c) {
        int64_t pos = (o * x3.d + j) * x3.inner + c;
        y[pos] = x[(o * i3.d + idx[pos]) * i3.inner + c];
      }
}

template <class T>
void scatter_add_typed(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src) {
  Dims3 o3 = dims3(out, dim), x3 = dims3(index, dim);
  const int64_t* idx = index.data<int64_t>();
  const T* x = src.data<T>();
  T* y = out.data<T>();
  for (int64_t p = 0; p < index.numel(); ++p) check_index(idx[p], o3.d, "scatter_add", out);
#pragma omp parallel for schedule(static) if (index.numel() > kParallelGrain)
  for (int64_t w = 0; w < x3.outer * x3.inner; ++w) {
    const int64_t o = w / x3.inner, c = w % x3.inner;
    for (int64_t j = 0; j < x3.d; ++j) {
      int64_t pos = (o * x3.d + j) * x3.inner + c;
      y[(o * o3.d + idx[pos]) * o3.inner + c] += x[pos];
    }
  }
}

void check_contig(std::initializer_list<const Tensor*> ts, const char* op) {
  for (const Tensor* t : ts)
    STRATA_CHECK(t->is_contiguous(), ValueError, op, ": expects contiguous tensors, got ", t->str());
}

}  // namespace

void CpuBackend::index_select(const Tensor& out, const Tensor& in, int64_t dim, const Tensor& index) {
  check_contig({&out, &in, &index}, "index_select");
  Dims3 i3 = dims3(in, dim);
  const int64_t n = index.numel();
  const int64_t* idx = index.data<int64_t>();
  for (int64_t j = 0; j < n; ++j) check_index(idx[j], i3.d, "index_select", in);
  const size_t row = size_t(i3.inner) * in.element_size();
  const char* x = static_cast<const char*>(in.data_ptr());
  char* y = static_cast<char*>(out.data_ptr());
#pragma omp parallel for schedule(static) if (out.numel() > kParallelGrain)
  for (int64_t w = 0; w < i3.outer * n; ++w) {
    const int64_t o = w / n, j = w % n;
    std::memcpy(y + size_t(w) * row, x + size_t(o * i3.d + idx[j]) * row, row);
  }
}

// 16-bit floats gather exactly through f32 and accumulate in f32, rounded once at the end.
void CpuBackend::index_add(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src) {
  check_contig({&out, &src, &index}, "index_add");
  if (common::is_half(out.dtype())) {
    Tensor o32 = contiguous_as(out, DType::f32);
    index_add(o32, dim, index, contiguous_as(src, DType::f32));
    return copy(out, o32);
  }
  common::dispatch_float_or_int(out.dtype(), "index_add", [&](auto v) { index_add_typed<decltype(v)>(out, dim, index, src); });
}

void CpuBackend::gather(const Tensor& out, const Tensor& in, int64_t dim, const Tensor& index) {
  check_contig({&out, &in, &index}, "gather");
  if (common::is_half(in.dtype())) {
    Tensor o32 = Tensor::empty(out.shape(), DType::f32, kCPU);
    gather(o32, contiguous_as(in, DType::f32), dim, index);
    return copy(out, o32);
  }
  common::dispatch_float_or_int(in.dtype(), "gather", [&](auto v) { gather_typed<decltype(v)>(out, in, dim, index); });
}

void CpuBackend::scatter_add(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src) {
  check_contig({&out, &src, &index}, "scatter_add");
  if (common::is_half(out.dtype())) {
    Tensor o32 = contiguous_as(out, DType::f32);
    scatter_add(o32, dim, index, contiguous_as(src, DType::f32));
    return copy(out, o32);
  }
  common::dispatch_float_or_int(out.dtype(), "scatter_add", [&](auto v) { scatter_add_typed<decltype(v)>(out, dim, index, src); });
}

}  // namespace strata::cpu
