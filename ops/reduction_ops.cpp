// Reductions: dims are permuted to the back so each output is one row of a row reduction.
#include <algorithm>

#include "ops/dispatch.h"
#include "ops/op_node.h"
#include "strata/ops/elementwise.h"
#include "strata/ops/factory.h"
#include "strata/ops/indexing.h"
#include "strata/ops/reduction.h"
#include "strata/ops/shape_ops.h"

namespace strata::ops {

using detail::make_node;
using detail::OpNode;
using detail::set_outputs;

namespace {

struct ReducePlan {
  std::vector<bool> reduced;
  Shape keep_shape;  // output shape with keepdim
  Shape out_shape;   // output shape as requested
  int64_t reduce_numel = 1;
};

ReducePlan plan_reduce(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim, const char* op) {
  ReducePlan p;
  p.reduced.assign(size_t(x.dim()), dims.empty());
  for (int64_t d : dims) {
    int64_t w = wrap_dim(d, x.dim(), op);
    STRATA_CHECK(!p.reduced[size_t(w)] || dims.empty(), ValueError, op, ": dim ", d, " repeated");
    p.reduced[size_t(w)] = true;
  }
  for (int64_t i = 0; i < x.dim(); ++i) {
    if (p.reduced[size_t(i)]) {
      p.reduce_numel *= x.size(i);
      p.keep_shape.push_back(1);
      if (keepdim) p.out_shape.push_back(1);
    } else {
      p.keep_shape.push_back(x.size(i));
      p.out_shape.push_back(x.size(i));
    }
  }
  return p;
}

// Runs a row reduction of `x` over the dims marked in `p`; result has p.out_shape.
Tensor reduce_raw(ReduceOp op, const Tensor& x, const ReducePlan& p, DType out_dtype, const char* name) {
  Shape order;
  for (int64_t i = 0; i < x.dim(); ++i)
    if (!p.reduced[size_t(i)]) order.push_back(i);
  for (int64_t i = 0; i < x.dim(); ++i)
    if (p.reduced[size_t(i)]) order.push_back(i);
  Shape pshape, pstrides;
  for (int64_t d : order) {
    pshape.push_back(x.size(d));
    pstrides.push_back(x.stride(d));
  }
  Tensor in = detail::raw_contiguous(detail::raw_view(x, pshape, pstrides, x.storage_offset()));
  Tensor out = detail::alloc(p.out_shape, out_dtype, x.device());
  detail::kernels(x.device()).reduce_rows(op, out, in, p.reduce_numel);
  detail::record(name, x.device(), double(x.numel()), double(x.nbytes()), double(out.nbytes()));
  return out;
}

Tensor sum_impl(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim, bool mean) {
  const char* name = mean ? "mean" : "sum";
  STRATA_CHECK(!mean || is_floating(x.dtype()), TypeError, "mean: needs a floating tensor, got ", x.str());
  ReducePlan p = plan_reduce(x, dims, keepdim, name);
  DType dt = is_floating(x.dtype()) ? x.dtype() : DType::i64;
  Tensor out = reduce_raw(mean ? ReduceOp::Mean : ReduceOp::Sum, x, p, dt, name);
  if (auto node = make_node(mean ? "MeanBackward" : "SumBackward", {x})) {
    node->backward = [in = x.shape(), keep = p.keep_shape, n = p.reduce_numel, mean](
                         OpNode&, std::vector<Tensor>& g) -> std::vector<Tensor> {
      Tensor gk = reshape(g[0], keep);
      if (mean) gk = mul(gk, 1.0 / double(std::max<int64_t>(n, 1)));
      return {expand(gk, in)};
    };
    set_outputs(node, {&out});
  }
  return out;
}

// max/min/argmax/argmin over one dim (or all, when dim is absent).
ValuesIndices extremum(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim, bool is_max) {
  const char* name = is_max ? "max" : "min";
  ReducePlan p = plan_reduce(x, dims, keepdim, name);
  STRATA_CHECK(x.numel() > 0, ValueError, name, ": empty tensor ", x.str());
  Tensor idx = reduce_raw(is_max ? ReduceOp::ArgMax : ReduceOp::ArgMin, x, p, DType::i64, name);
  Tensor val = reduce_raw(is_max ? ReduceOp::Max : ReduceOp::Min, x, p, x.dtype(), name);
  if (auto node = make_node(is_max ? "MaxBackward" : "MinBackward", {x})) {
    node->save(idx);
    const bool all = dims.empty();
    const int64_t dim = all ? 0 : wrap_dim(dims[0], x.dim(), name);
    node->backward = [in = x.shape(), keep = p.keep_shape, all, dim](OpNode& n,
                                                                   std::vector<Tensor>& g) -> std::vector<Tensor> {
      Tensor i = n.saved(0);
      if (all) {  // flat index into the flattened input
        Tensor z = zeros({shape_numel(in)}, TensorOptions(g[0].dtype()).device(g[0].device()));
        return {reshape(scatter_add(z, 0, reshape(i, {1}), reshape(g[0], {1})), in)};
      }
      Tensor z = zeros(in, TensorOptions(g[0].dtype()).device(g[0].device()));
      // scatter_add wants index/src of the input's shape except at dim.
      Shape ks = keep;
      return {scatter_add(z, dim, reshape(i, ks), reshape(g[0], ks))};
    };
    set_outputs(node, {&val});
  }
  return {val, idx};
}

}  // namespace

Tensor sum(const Tensor& x) { return sum_impl(x, {}, false, false); }
Tensor sum(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  STRATA_CHECK(!dims.empty(), ValueError, "sum: empty dim list (use sum(x) for all dims)");
  return sum_impl(x, dims, keepdim, false);
}
Tensor mean(const Tensor& x) { return sum_impl(x, {}, false, true); }
Tensor mean(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  STRATA_CHECK(!dims.empty(), ValueError, "mean: empty dim list (use mean(x) for all dims)");
  return sum_impl(x, dims, keepdim, true);
}

Tensor var(const Tensor& x, const std::vector<int64_t>& dims, int64_t correction, bool keepdim) {
  ReducePlan p = plan_reduce(x, dims, keepdim, "var");
  Tensor mu = dims.empty() ? mean(x) : mean(x, dims, /*keepdim=*/true);
  Tensor d = sub(x, mu);
  Tensor ss = dims.empty() ? reshape(sum(square(d)), p.out_shape) : sum(square(d), dims, keepdim);
  double denom = double(p.reduce_numel - correction);
  STRATA_CHECK(denom > 0, ValueError, "var: ", p.reduce_numel, " elements with correction ", correction);
  return mul(ss, 1.0 / denom);
}

Tensor max(const Tensor& x) {
  ValuesIndices r = extremum(x, {}, false, true);
  return r.values;
}
Tensor min(const Tensor& x) {
  ValuesIndices r = extremum(x, {}, false, false);
  return r.values;
}
ValuesIndices max(const Tensor& x, int64_t dim, bool keepdim) { return extremum(x, {dim}, keepdim, true); }
ValuesIndices min(const Tensor& x, int64_t dim, bool keepdim) { return extremum(x, {dim}, keepdim, false); }

Tensor argmax(const Tensor& x, int64_t dim, bool keepdim) {
  ReducePlan p = plan_reduce(x, {dim}, keepdim, "argmax");
  return reduce_raw(ReduceOp::ArgMax, x, p, DType::i64, "argmax");
}
Tensor argmin(const Tensor& x, int64_t dim, bool keepdim) {
  ReducePlan p = plan_reduce(x, {dim}, keepdim, "argmin");
  return reduce_raw(ReduceOp::ArgMin, x, p, DType::i64, "argmin");
}

}  // namespace strata::ops
