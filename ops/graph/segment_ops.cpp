#include "strata/ops/segment_ops.h"

#include <algorithm>
#include <string>
#include <vector>

#include "ops/dispatch.h"
#include "ops/graph/row_kernels.h"
#include "ops/op_node.h"
#include "strata/ops/elementwise.h"
#include "strata/ops/factory.h"

namespace strata::ops {

using detail::as_rows;
using detail::iota;
using detail::make_node;
using detail::OpNode;
using detail::set_outputs;

namespace {

void check_reduce(const char* op, const std::string& reduce) {
  STRATA_CHECK(reduce == "sum" || reduce == "mean" || reduce == "max" || reduce == "min", ValueError, op,
               ": reduce '", reduce, "' is not one of sum, mean, max, min");
}

void check_values(const char* op, const Tensor& x) {
  STRATA_CHECK(x.defined() && x.dim() >= 1, ShapeError, op, ": the values must have a row dimension, got ",
               x.defined() ? x.str() : std::string("an undefined tensor"));
  STRATA_CHECK(is_floating(x.dtype()), TypeError, op, ": the values must be floating, got ", x.str());
}

void check_index_tensor(const char* op, const Tensor& index) {
  STRATA_CHECK(
      index.defined() && index.dim() == 1 && (index.dtype() == DType::i32 || index.dtype() == DType::i64),
      TypeError, op, ": index must be a 1-D i32 or i64 tensor, got ",
      index.defined() ? index.str() : std::string("an undefined tensor"));
}

// Off the CPU a gather or a summing scatter keeps its index on the device: the backend's
// index_select and index_add check it there (one small read-back instead of copying the index
// to the host) and sum a row's duplicates in index order, as the CPU's counting sort does.
bool index_stays_on_device(const Device& dev) { return !dev.is_cpu() && !dev.is_meta(); }

// The index as a contiguous i64 tensor where it lies (what the backend's index kernels take).
Tensor i64_index(const Tensor& index) { return detail::raw_cast(detail::raw_contiguous(index), DType::i64); }

// Runs a backend index kernel for `op`, its IndexError renamed to the op the caller called.
template <class F>
void index_kernel_for(const char* op, F&& run) {
  try {
    run();
  } catch (const IndexError& e) {
    throw IndexError(std::string(op) + ": " + e.what());
  }
}

// The index as host i64, each value checked against [0, limit).
std::vector<int64_t> host_index(const char* op, const Tensor& index, int64_t limit) {
  check_index_tensor(op, index);
  if (index.device().is_meta()) return {};  // shapes only: nothing to read
  std::vector<int64_t> v = index.to_vector<int64_t>();
  for (size_t i = 0; i < v.size(); ++i)
    STRATA_CHECK(v[i] >= 0 && v[i] < limit, IndexError, op, ": index[", i, "] = ", v[i], " is outside [0, ",
                 limit, ")");
  return v;
}

// [rows, trailing dims of like].
Shape rows_like(int64_t rows, const Tensor& like) {
  Shape s = like.shape();
  s[0] = rows;
  return s;
}

Tensor i64_tensor(const std::vector<int64_t>& v, Device d) {
  return from_vector(v, {int64_t(v.size())}).to(d);
}

// The autograd node of a row sum whose x row i went to out row row_of[i]: grad_x[i] = grad[row_of[i]].
void attach_row_sum_backward(const char* name, const Tensor& x, Tensor* out, const Tensor& row_of) {
  if (auto node = make_node(name, {x})) {
    node->save(row_of);
    node->backward = [](OpNode& n, std::vector<Tensor>& grad) -> std::vector<Tensor> {
      return {gather_rows(grad[0], n.saved(0))};
    };
    set_outputs(node, {out});
  }
}

// out[r] = sum of x's rows k in [offsets[r], offsets[r + 1]) taken as x[indices[k]]; gradient:
// grad_x[i] = grad[row_of[i]] for the x row i that indices names once (a permutation or the identity).
Tensor permuted_row_sum(const char* name, const Tensor& x, const Tensor& offsets, const Tensor& indices,
                        const Tensor& row_of, int64_t rows) {
  Tensor xr = as_rows(x);
  Tensor out = detail::raw_reshape(detail::row_sum(offsets, indices, Tensor(), Tensor(), xr, rows),
                                   rows_like(rows, x));
  detail::record(name, x.device(), double(x.numel()), double(x.nbytes()), double(out.nbytes()));
  attach_row_sum_backward(name, x, &out, row_of);
  return out;
}

// Rows of `sum` [R, ...] divided by max(count, 1).
Tensor divide_by_counts(const Tensor& sum, const std::vector<int64_t>& counts) {
  std::vector<double> c(counts.size());
  for (size_t i = 0; i < counts.size(); ++i) c[i] = counts[i] > 0 ? double(counts[i]) : 1.0;
  Shape s(size_t(sum.dim()), 1);
  s[0] = int64_t(c.size());
  return div(sum, from_vector(c, s, TensorOptions(sum.dtype())).to(sum.device()));
}

// The extreme over rows [offsets[r], offsets[r + 1]) taken as x[indices[k]]; arg records
// positions[k] (= the x row), and the gradient goes back to grad_x[i] = grad[row_of[i]] where
// arg names i.
Tensor extreme_rows(const char* name, const Tensor& x, const Tensor& offsets, const Tensor& indices,
                    const Tensor& positions, const Tensor& row_of, int64_t rows, bool minimum) {
  Tensor xr = as_rows(x), arg;
  Tensor out = detail::raw_reshape(detail::row_extreme(offsets, indices, positions, xr, rows, minimum, &arg),
                                   rows_like(rows, x));
  detail::record(name, x.device(), double(x.numel()), double(x.nbytes()),
                 double(out.nbytes() + arg.nbytes()));
  if (auto node = make_node(name, {x})) {
    node->save(arg);
    node->save(row_of);
    const Shape xshape = x.shape();
    node->backward = [xshape](OpNode& n, std::vector<Tensor>& grad) -> std::vector<Tensor> {
      Tensor a = n.saved(0), r = n.saved(1);
      Tensor g = as_rows(grad[0]);
      const int64_t M = r.size(0);
      Tensor gx = detail::row_extreme_backward(iota(M + 1, g.device()), iota(M, g.device()), r, a, g, M);
      return {detail::raw_reshape(gx, xshape)};
    };
    set_outputs(node, {&out});
  }
  return out;
}

// scatter_reduce_rows(src, index, num_rows, "sum") off the CPU: zeros, then the backend's
// index_add; its gradient gathers the incoming gradient's rows by the index.
Tensor scatter_sum_rows_on_device(const Tensor& src, const Tensor& index, int64_t num_rows) {
  check_index_tensor("scatter_reduce_rows", index);
  STRATA_CHECK(index.numel() == src.size(0), ShapeError, "scatter_reduce_rows: index ", index.str(),
               " needs one entry per row of ", src.str());
  const Device dev = src.device();
  Tensor sr = as_rows(src), idx = detail::raw_contiguous(index);
  Tensor rows = detail::alloc({num_rows, sr.size(1)}, src.dtype(), dev);
  detail::kernels(dev).fill(rows, 0.0);
  index_kernel_for("scatter_reduce_rows",
                   [&] { detail::kernels(dev).index_add(rows, 0, i64_index(idx), sr); });
  Tensor out = detail::raw_reshape(rows, rows_like(num_rows, src));
  detail::record("scatter_reduce_rows", dev, double(src.numel()), double(src.nbytes()), double(out.nbytes()));
  attach_row_sum_backward("scatter_reduce_rows", src, &out, idx);
  return out;
}

}  // namespace

Tensor segment_reduce(const Tensor& x, const Tensor& offsets, const std::string& reduce) {
  check_reduce("segment_reduce", reduce);
  check_values("segment_reduce", x);
  STRATA_CHECK(
      offsets.defined() && offsets.dim() == 1 && offsets.dtype() == DType::i64 && offsets.numel() >= 1,
      TypeError, "segment_reduce: offsets must be a 1-D i64 tensor [S + 1], got ",
      offsets.defined() ? offsets.str() : std::string("an undefined tensor"));
  const Device dev = detail::common_device("segment_reduce", {&x, &offsets});
  const int64_t M = x.size(0), S = offsets.numel() - 1;
  Tensor offs = detail::raw_contiguous(offsets), ident = iota(M, dev);
  if (dev.is_meta()) {  // shapes only
    Tensor rows = detail::alloc({M}, DType::i64, dev);
    if (reduce == "max" || reduce == "min")
      return extreme_rows("segment_reduce", x, offs, ident, Tensor(), rows, S, reduce == "min");
    Tensor sum = permuted_row_sum("segment_reduce", x, offs, ident, rows, S);
    return reduce == "mean" ? divide_by_counts(sum, std::vector<int64_t>(size_t(S), 1)) : sum;
  }
  const std::vector<int64_t> off = offsets.to(kCPU).to_vector<int64_t>();
  STRATA_CHECK(off[0] == 0 && off.back() == M, ValueError, "segment_reduce: offsets run from ", off[0],
               " to ", off.back(), ", the rows of ", x.str(), " from 0 to ", M);
  std::vector<int64_t> row_of(static_cast<size_t>(M)), counts(static_cast<size_t>(S));
  for (int64_t s = 0; s < S; ++s) {
    STRATA_CHECK(off[size_t(s + 1)] >= off[size_t(s)], ValueError, "segment_reduce: offsets[", s + 1,
                 "] = ", off[size_t(s + 1)], " is below offsets[", s, "] = ", off[size_t(s)]);
    counts[size_t(s)] = off[size_t(s + 1)] - off[size_t(s)];
    for (int64_t k = off[size_t(s)]; k < off[size_t(s + 1)]; ++k) row_of[size_t(k)] = s;
  }
  Tensor rows = i64_tensor(row_of, dev);
  if (reduce == "max" || reduce == "min")
    return extreme_rows("segment_reduce", x, offs, ident, Tensor(), rows, S, reduce == "min");
  Tensor sum = permuted_row_sum("segment_reduce", x, offs, ident, rows, S);
  return reduce == "mean" ? divide_by_counts(sum, counts) : sum;
}

Tensor gather_rows(const Tensor& x, const Tensor& index) {
  check_values("gather_rows", x);
  const Device dev = detail::common_device("gather_rows", {&x, &index});
  const int64_t N = x.size(0), M = index.defined() ? index.numel() : 0;
  Tensor idx, xr = as_rows(x), rows;
  if (index_stays_on_device(dev)) {
    check_index_tensor("gather_rows", index);
    idx = detail::raw_contiguous(index);
    rows = detail::alloc({M, xr.size(1)}, x.dtype(), dev);
    index_kernel_for("gather_rows", [&] { detail::kernels(dev).index_select(rows, xr, 0, i64_index(idx)); });
  } else {
    host_index("gather_rows", index, N);
    idx = detail::raw_contiguous(index);
    rows = detail::row_sum(iota(M + 1, dev), idx, Tensor(), Tensor(), xr, M);
  }
  Tensor out = detail::raw_reshape(rows, rows_like(M, x));
  detail::record("gather_rows", dev, 0.0, double(out.nbytes()), double(out.nbytes()));
  if (auto node = make_node("GatherRowsBackward", {x})) {
    node->save(idx);
    const Shape xshape = x.shape();
    node->backward = [xshape](OpNode& n, std::vector<Tensor>& grad) -> std::vector<Tensor> {
      return {scatter_reduce_rows(grad[0], n.saved(0), xshape[0], "sum")};
    };
    set_outputs(node, {&out});
  }
  return out;
}

Tensor scatter_reduce_rows(const Tensor& src, const Tensor& index, int64_t num_rows,
                           const std::string& reduce) {
  check_reduce("scatter_reduce_rows", reduce);
  check_values("scatter_reduce_rows", src);
  STRATA_CHECK(num_rows >= 0, ValueError, "scatter_reduce_rows: num_rows ", num_rows, " is negative");
  const Device dev = detail::common_device("scatter_reduce_rows", {&src, &index});
  if (reduce == "sum" && index_stays_on_device(dev)) return scatter_sum_rows_on_device(src, index, num_rows);
  const std::vector<int64_t> idx = host_index("scatter_reduce_rows", index, num_rows);
  const int64_t M = src.size(0);
  STRATA_CHECK(index.numel() == M, ShapeError, "scatter_reduce_rows: index ", index.str(),
               " needs one entry per row of ", src.str());
  Tensor offs, order, rows = detail::raw_contiguous(index);
  std::vector<int64_t> counts(size_t(num_rows), 1);
  if (dev.is_meta()) {  // shapes only
    offs = detail::alloc({num_rows + 1}, DType::i64, dev), order = detail::alloc({M}, DType::i64, dev);
  } else {
    // A stable counting sort of the rows by destination: offsets [R + 1] and the rows in order.
    std::vector<int64_t> off(size_t(num_rows) + 1, 0), perm(static_cast<size_t>(M));
    std::fill(counts.begin(), counts.end(), 0);
    for (int64_t r : idx) ++counts[size_t(r)];
    for (int64_t r = 0; r < num_rows; ++r) off[size_t(r + 1)] = off[size_t(r)] + counts[size_t(r)];
    std::vector<int64_t> fill(off.begin(), off.end() - 1);
    for (int64_t i = 0; i < M; ++i) perm[size_t(fill[size_t(idx[size_t(i)])]++)] = i;
    offs = i64_tensor(off, dev), order = i64_tensor(perm, dev);
  }
  if (reduce == "max" || reduce == "min")
    return extreme_rows("scatter_reduce_rows", src, offs, order, order, rows, num_rows, reduce == "min");
  Tensor sum = permuted_row_sum("scatter_reduce_rows", src, offs, order, rows, num_rows);
  return reduce == "mean" ? divide_by_counts(sum, counts) : sum;
}

}  // namespace strata::ops
