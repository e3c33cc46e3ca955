#include "strata/ops/relational_ops.h"

#include <string>

#include "ops/dispatch.h"
#include "ops/graph/row_kernels.h"
#include "ops/op_node.h"
#include "strata/ops/elementwise.h"
#include "strata/ops/factory.h"
#include "strata/ops/reduction.h"
#include "strata/ops/segment_ops.h"

namespace strata::ops {

using detail::make_node;
using detail::OpNode;
using detail::set_outputs;

namespace {

constexpr const char* kOp = "segment_matmul";

// An index [M] of i32/i64 with values in [0, limit): the CPU kernels check every value; on other
// devices the extremes are read back (two small reductions).
void check_index(const char* what, const Tensor& index, int64_t m, int64_t limit, Device dev) {
  if (!index.defined()) return;
  STRATA_CHECK(
      index.dim() == 1 && index.numel() == m && (index.dtype() == DType::i32 || index.dtype() == DType::i64),
      TypeError, kOp, ": ", what, " must be an i32 or i64 [", m, "], got ", index.str());
  STRATA_CHECK(index.device() == dev, DeviceError, kOp, ": ", what, " on ", index.device().str(), ", x on ",
               dev.str());
  if (dev.is_cpu() || dev.is_meta() || m == 0) return;
  const int64_t lo = min(index).item<int64_t>(), hi = max(index).item<int64_t>();
  STRATA_CHECK(lo >= 0 && hi < limit, IndexError, kOp, ": ", what, " holds values in [", lo, ", ", hi,
               "], outside [0, ", limit, ")");
}

Tensor host_offsets(const std::vector<int64_t>& offsets) {
  return from_vector(offsets, {int64_t(offsets.size())});
}

// The raw product (no autograd node): y_i = scale[i] x[gather[i]] @ w[s], stored or scattered.
Tensor product(const Tensor& x, const Tensor& offs, int64_t M, const Tensor& w, const Tensor& gather,
               const Tensor& scatter, const Tensor& scale, int64_t rows) {
  const Device dev = x.device();
  Tensor out = detail::alloc({scatter.defined() ? rows : M, w.size(2)}, x.dtype(), dev);
  if (scatter.defined()) detail::kernels(dev).fill(out, 0.0);
  detail::kernels(dev).segment_mm(out, x, gather, w, offs, scatter, scale, scatter.defined());
  return out;
}

}  // namespace

Tensor segment_matmul(const Tensor& x, const std::vector<int64_t>& offsets, const Tensor& weight,
                      const SegmentMatmulOptions& o) {
  detail::check_defined(kOp, x, "x");
  detail::check_defined(kOp, weight, "weight");
  const Device dev = detail::common_device(kOp, {&x, &weight, &o.scale});
  STRATA_CHECK(!offsets.empty() && offsets.front() == 0, ValueError, kOp, ": offsets must start at 0 (",
               offsets.empty() ? std::string("none given") : std::to_string(offsets.front()), ")");
  for (size_t s = 1; s < offsets.size(); ++s)
    STRATA_CHECK(offsets[s] >= offsets[s - 1], ValueError, kOp, ": offsets[", s, "] = ", offsets[s],
                 " is below offsets[", s - 1, "] = ", offsets[s - 1]);
  const int64_t S = int64_t(offsets.size()) - 1, M = offsets.back();
  STRATA_CHECK(x.dim() == 2 && weight.dim() == 3 && weight.size(0) == S && weight.size(1) == x.size(1),
               ShapeError, kOp, ": x ", shape_str(x.shape()), " and weight ", shape_str(weight.shape()),
               " must be [*, K] and [S, K, N] with S = ", S, " segments");
  STRATA_CHECK(is_floating(x.dtype()) && weight.dtype() == x.dtype() &&
                   (!o.scale.defined() || o.scale.dtype() == x.dtype()),
               TypeError, kOp, ": x ", x.str(), ", weight ", weight.str(),
               o.scale.defined() ? " and scale " + o.scale.str() : std::string(),
               " must share one floating dtype");
  STRATA_CHECK(o.gather.defined() || x.size(0) == M, ShapeError, kOp, ": x ", shape_str(x.shape()), " needs ",
               M, " rows (the offsets' last value) without a gather index");
  STRATA_CHECK(!o.scatter.defined() || o.num_rows >= 0, ValueError, kOp,
               ": num_rows must be given with a scatter index");
  STRATA_CHECK(!o.scale.defined() || (o.scale.dim() == 1 && o.scale.numel() == M), ShapeError, kOp,
               ": scale ", shape_str(o.scale.shape()), " must be [", M, "]");
  check_index("gather", o.gather, M, x.size(0), dev);
  check_index("scatter", o.scatter, M, o.num_rows, dev);

  const Tensor xc = detail::raw_contiguous(x),
               sc = o.scale.defined() ? detail::raw_contiguous(o.scale) : Tensor();
  const Tensor gather = o.gather.defined() ? detail::raw_contiguous(o.gather) : Tensor();
  const Tensor scatter = o.scatter.defined() ? detail::raw_contiguous(o.scatter) : Tensor();
  const Tensor offs = host_offsets(offsets);
  const int64_t K = x.size(1), N = weight.size(2), rows = o.scatter.defined() ? o.num_rows : M;
  Tensor out = product(xc, offs, M, weight, gather, scatter, sc, rows);
  detail::record(kOp, dev, 2.0 * double(M) * double(K) * double(N),
                 double(M * K + weight.numel()) * double(x.element_size()), double(out.nbytes()));

  if (auto node = make_node("SegmentMatmulBackward", {x, weight, o.scale})) {
    const bool gx = node->needs_grad(0), gw = node->needs_grad(1), gs = node->needs_grad(2);
    node->save(gw || gs ? xc : Tensor());
    node->save(gx || gs ? weight : Tensor());
    node->save(sc);
    // The indices are graph structure, held as the graph ops hold their Graph, not activations.
    const int64_t xrows = x.size(0);
    node->backward = [offsets, M, K, N, gather, scatter, xrows](
                         OpNode& n, std::vector<Tensor>& grad) -> std::vector<Tensor> {
      const Tensor xs = n.saved(0), w = n.saved(1), s = n.saved(2), offs = host_offsets(offsets);
      const Tensor gy = detail::raw_contiguous(grad[0]);
      const Device d = gy.device();
      Tensor dx, dw, ds;
      if (n.needs_grad(0)) {  // dx[gather i] += scale[i] gy[scatter i] @ w[s]^T
        dx = detail::alloc({xrows, K}, gy.dtype(), d);
        if (gather.defined()) detail::kernels(d).fill(dx, 0.0);
        detail::kernels(d).segment_mm(dx, gy, scatter, w.transpose(1, 2), offs, gather, s, gather.defined());
      }
      if (n.needs_grad(1)) {
        dw = detail::alloc({int64_t(offs.numel()) - 1, K, N}, gy.dtype(), d);
        detail::kernels(d).segment_mm_weight_grad(dw, xs, gather, gy, scatter, s, offs, false);
      }
      if (n.needs_grad(2)) {  // <x[gather i] @ w[s], gy[scatter i]>
        Tensor z = product(xs, offs, M, w, gather, Tensor(), Tensor(), M);
        Tensor g = scatter.defined() ? gather_rows(gy, scatter) : gy;
        ds = sum(mul(z, g), {1});
      }
      return {dx, dw, ds};
    };
    set_outputs(node, {&out});
  }
  return out;
}

}  // namespace strata::ops
