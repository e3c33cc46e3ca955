// index_select, gather, scatter_add, index_add with their backward formulas.
#include "ops/dispatch.h"
#include "ops/op_node.h"
#include "strata/ops/factory.h"
#include "strata/ops/indexing.h"
#include "strata/ops/shape_ops.h"

namespace strata::ops {

using detail::make_node;
using detail::OpNode;
using detail::set_outputs;

namespace {
void check_index_tensor(const char* op, const Tensor& index) {
  STRATA_CHECK(index.dtype() == DType::i64, TypeError, op, ": index must be i64, got ", index.str());
}
// gather/scatter: index has the data's rank, and its sizes match outside `dim`.
void check_same_rank(const char* op, const Tensor& x, const Tensor& index, int64_t dim) {
  STRATA_CHECK(index.dim() == x.dim(), ShapeError, op, ": index ", shape_str(index.shape()), " and input ",
               shape_str(x.shape()), " differ in rank");
  for (int64_t d = 0; d < x.dim(); ++d)
    STRATA_CHECK(d == dim || index.size(d) == x.size(d), ShapeError, op, ": index ", shape_str(index.shape()),
                 " and input ", shape_str(x.shape()), " differ at dim ", d);
}
}  // namespace

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) {
  detail::common_device("index_select", {&x, &index});
  check_index_tensor("index_select", index);
  STRATA_CHECK(index.dim() <= 1, ShapeError, "index_select: index must be 1-D, got ", shape_str(index.shape()));
  dim = wrap_dim(dim, x.dim(), "index_select");
  Tensor xc = detail::raw_contiguous(x), ic = detail::raw_contiguous(detail::raw_reshape(index, {-1}));
  Shape s = x.shape();
  s[size_t(dim)] = ic.numel();
  Tensor out = detail::alloc(s, x.dtype(), x.device());
  detail::kernels(x.device()).index_select(out, xc, dim, ic);
  detail::record("index_select", x.device(), 0, double(out.nbytes() + ic.nbytes()), double(out.nbytes()));
  if (auto node = make_node("IndexSelectBackward", {x})) {
    node->save(ic);
    node->backward = [dim, in = x.shape()](OpNode& n, std::vector<Tensor>& g) -> std::vector<Tensor> {
      Tensor z = zeros(in, TensorOptions(g[0].dtype()).device(g[0].device()));
      return {index_add(z, dim, n.saved(0), g[0])};
    };
    set_outputs(node, {&out});
  }
  return out;
}

Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  detail::common_device("index_add", {&x, &index, &src});
  check_index_tensor("index_add", index);
  dim = wrap_dim(dim, x.dim(), "index_add");
  Tensor ic = detail::raw_contiguous(detail::raw_reshape(index, {-1}));
  Shape want = x.shape();
  want[size_t(dim)] = ic.numel();
  STRATA_CHECK(src.shape() == want, ShapeError, "index_add: source ", shape_str(src.shape()), " must be ",
               shape_str(want));
  Tensor out = detail::alloc(x.shape(), x.dtype(), x.device());
  detail::kernels(x.device()).copy(out, x);
  detail::kernels(x.device()).index_add(out, dim, ic, detail::raw_contiguous(detail::raw_cast(src, x.dtype())));
  detail::record("index_add", x.device(), double(src.numel()), double(x.nbytes() + src.nbytes()), double(out.nbytes()));
  if (auto node = make_node("IndexAddBackward", {x, src})) {
    node->save(ic);
    node->backward = [dim](OpNode& n, std::vector<Tensor>& g) -> std::vector<Tensor> {
      return {n.needs_grad(0) ? g[0] : Tensor(), n.needs_grad(1) ? index_select(g[0], dim, n.saved(0)) : Tensor()};
    };
    set_outputs(node, {&out});
  }
  return out;
}

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) {
  detail::common_device("gather", {&x, &index});
  check_index_tensor("gather", index);
  dim = wrap_dim(dim, x.dim(), "gather");
  check_same_rank("gather", x, index, dim);
  Tensor ic = detail::raw_contiguous(index);
  Tensor out = detail::alloc(index.shape(), x.dtype(), x.device());
  detail::kernels(x.device()).gather(out, detail::raw_contiguous(x), dim, ic);
  detail::record("gather", x.device(), 0, double(out.nbytes() + ic.nbytes()), double(out.nbytes()));
  if (auto node = make_node("GatherBackward", {x})) {
    node->save(ic);
    node->backward = [dim, in = x.shape()](OpNode& n, std::vector<Tensor>& g) -> std::vector<Tensor> {
      Tensor z = zeros(in, TensorOptions(g[0].dtype()).device(g[0].device()));
      return {scatter_add(z, dim, n.saved(0), g[0])};
    };
    set_outputs(node, {&out});
  }
  return out;
}

Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  detail::common_device("scatter_add", {&x, &index, &src});
  check_index_tensor("scatter_add", index);
  dim = wrap_dim(dim, x.dim(), "scatter_add");
  check_same_rank("scatter_add", x, index, dim);
  STRATA_CHECK(src.shape() == index.shape(), ShapeError, "scatter_add: source ", shape_str(src.shape()),
               " must match index ", shape_str(index.shape()));
  Tensor ic = detail::raw_contiguous(index);
  Tensor out = detail::alloc(x.shape(), x.dtype(), x.device());
  detail::kernels(x.device()).copy(out, x);
  detail::kernels(x.device()).scatter_add(out, dim, ic, detail::raw_contiguous(detail::raw_cast(src, x.dtype())));
  detail::record("scatter_add", x.device(), double(src.numel()), double(x.nbytes() + src.nbytes()), double(out.nbytes()));
  if (auto node = make_node("ScatterAddBackward", {x, src})) {
    node->save(ic);
    node->backward = [dim](OpNode& n, std::vector<Tensor>& g) -> std::vector<Tensor> {
      return {n.needs_grad(0) ? g[0] : Tensor(), n.needs_grad(1) ? gather(g[0], dim, n.saved(0)) : Tensor()};
    };
    set_outputs(node, {&out});
  }
  return out;
}

}  // namespace strata::ops
