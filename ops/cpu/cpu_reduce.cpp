// CPU row reductions: fixed blocking and summation order, so the bits do not depend on the
// thread count or on pointer alignment (docs/design.md, "Invariants").
#include <limits>
#include <vector>

#include "ops/cpu/cpu_backend.h"
#include "ops/cpu/strided_loop.h"

namespace strata::cpu {

namespace {

constexpr int64_t kSumBlock = 4096;  // a long row is summed in blocks of this many elements

// Sum of n elements in a fixed order: 8 interleaved double accumulators, combined pairwise.
template <class T>
double sum_block(const T* x, int64_t n) {
  double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) acc[k] += double(x[i + k]);
  for (int k = 0; i < n; ++i, ++k) acc[k] += double(x[i]);
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

template <class T>
double sum_row(const T* x, int64_t n) {
  if (n <= kSumBlock) return sum_block(x, n);
  double total = 0;
  for (int64_t b = 0; b < n; b += kSumBlock) total += sum_block(x + b, std::min(kSumBlock, n - b));
  return total;
}

template <class T>
void reduce_typed(ReduceOp op, const Tensor& out, const Tensor& in, int64_t rows, int64_t n) {
  const T* x = in.data<T>();
  if (op == ReduceOp::Sum || op == ReduceOp::Mean) {
    T* y = out.data<T>();
    const double scale = op == ReduceOp::Mean ? 1.0 / double(n) : 1.0;
    if (rows == 1 && n > 4 * kSumBlock) {
      // One long row: sum fixed blocks in parallel, then combine them in order.
      int64_t nb = (n + kSumBlock - 1) / kSumBlock;
      std::vector<double> part(static_cast<size_t>(nb));
#pragma omp parallel for schedule(static)
      for (int64_t b = 0; b < nb; ++b)
        part[size_t(b)] = sum_block(x + b * kSumBlock, std::min(kSumBlock, n - b * kSumBlock));
      double total = 0;
      for (double v : part) total += v;
      y[0] = T(total * scale);
      return;
    }
#pragma omp parallel for schedule(static) if (rows * n > kParallelGrain)
    for (int64_t r = 0; r < rows; ++r) y[r] = T(sum_row(x + r * n, n) * scale);
    return;
  }
  const bool want_max = op == ReduceOp::Max || op == ReduceOp::ArgMax;
  const bool want_index = op == ReduceOp::ArgMax || op == ReduceOp::ArgMin;
#pragma omp parallel for schedule(static) if (rows * n > kParallelGrain)
  for (int64_t r = 0; r < rows; ++r) {
    const T* row = x + r * n;
    int64_t best = 0;
    for (int64_t i = 1; i < n; ++i) {
      T v = row[i], b = row[best];
      if (b != b) break;  // NaN wins, first one
      if (v != v || (want_max ? v > b : v < b)) best = i;
    }
    if (want_index) {
      out.data<int64_t>()[r] = best;
    } else {
      out.data<T>()[r] = row[best];
    }
  }
}

}  // namespace

void CpuBackend::reduce_rows(ReduceOp op, const Tensor& out, const Tensor& in, int64_t n) {
  STRATA_CHECK(in.is_contiguous() && out.is_contiguous(), ValueError,
               "reduce_rows: expects contiguous tensors, got ", in.str(), " -> ", out.str());
  int64_t rows = out.numel();
  STRATA_CHECK(rows * n == in.numel(), ShapeError, "reduce_rows: ", in.str(), " is not ", rows,
               " rows of ", n);
  if (rows == 0) return;
  STRATA_CHECK(n > 0 || op == ReduceOp::Sum || op == ReduceOp::Mean, ValueError,
               "reduce: cannot take max/min/argmax of an empty dimension of ", in.str());
  switch (in.dtype()) {
    case DType::f32: return reduce_typed<float>(op, out, in, rows, n);
    case DType::f64: return reduce_typed<double>(op, out, in, rows, n);
    case DType::i64: return reduce_typed<int64_t>(op, out, in, rows, n);
    default: break;
  }
  // Other dtypes reduce in f32 (floats) or i64 (integers).
  DType wide = is_floating(in.dtype()) ? DType::f32 : DType::i64;
  Tensor win = contiguous_as(in, wide);
  bool index_out = op == ReduceOp::ArgMax || op == ReduceOp::ArgMin;
  Tensor wout = index_out ? out : Tensor::empty(out.shape(), wide, kCPU);
  reduce_rows(op, wout, win, n);
  if (!index_out) copy(out, wout);
}

}  // namespace strata::cpu
