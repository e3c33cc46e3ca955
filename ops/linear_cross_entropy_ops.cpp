// linear_cross_entropy: the fused, chunked LM head + softmax cross-entropy.
#include <algorithm>
#include <limits>

#include "ops/dispatch.h"
#include "ops/op_node.h"
#include "strata/autograd/grad_mode.h"
#include "strata/ops/elementwise.h"
#include "strata/ops/factory.h"
#include "strata/ops/nn.h"
#include "strata/ops/reduction.h"

namespace strata::ops {

using detail::make_node;
using detail::OpNode;
using detail::set_outputs;

namespace {

// A [rows, cols] matrix as the 3-D [1, rows, cols] view bmm takes.
Tensor as_batch1(const Tensor& m) {
  return detail::raw_view(m, {1, m.size(0), m.size(1)}, {0, m.stride(0), m.stride(1)}, m.storage_offset());
}

Tensor transposed(const Tensor& m) {
  return detail::raw_view(m, {m.size(1), m.size(0)}, {m.stride(1), m.stride(0)}, m.storage_offset());
}

int64_t rows_per_chunk(int64_t V, int64_t chunk_bytes, size_t esize) {
  return std::max<int64_t>(1, chunk_bytes / std::max<int64_t>(1, V * int64_t(esize)));
}

}  // namespace

Tensor linear_cross_entropy(const Tensor& x, const Tensor& weight, const Tensor& target, int64_t ignore_index,
                            Reduction reduction, int64_t chunk_bytes) {
  const char* op = "linear_cross_entropy";
  Device dev = detail::common_device(op, {&x, &weight, &target});
  STRATA_CHECK(reduction != Reduction::None, ValueError, op, ": reduction must be Mean or Sum");
  STRATA_CHECK(weight.dim() == 2 && x.dim() >= 1 && x.size(-1) == weight.size(1), ShapeError, op, ": x ",
               shape_str(x.shape()), " and weight ", shape_str(weight.shape()), " (weight is [V, C])");
  STRATA_CHECK(target.dtype() == DType::i64, TypeError, op, ": target must be i64, got ", target.str());
  Shape tshape(x.shape().begin(), x.shape().end() - 1);
  STRATA_CHECK(target.shape() == tshape, ShapeError, op, ": x ", shape_str(x.shape()), " needs targets of shape ",
               shape_str(tshape), ", got ", shape_str(target.shape()));
  const int64_t C = weight.size(1), V = weight.size(0), N = target.numel();
  const DType dt = promote_types(x.dtype(), weight.dtype()) == DType::f64 ? DType::f64 : DType::f32;
  Tensor x2 = detail::raw_contiguous(detail::raw_cast(detail::raw_reshape(x, {N, C}), dt));
  Tensor w = detail::raw_contiguous(detail::raw_cast(weight, dt));
  Tensor t = detail::raw_contiguous(detail::raw_reshape(target, {N}));
  Backend& be = detail::kernels(dev);
  const int64_t R = rows_per_chunk(V, chunk_bytes, element_size(dt));

  Tensor loss_rows = detail::alloc({N}, dt, dev), lse = detail::alloc({N}, dt, dev);
  for (int64_t r0 = 0; r0 < N; r0 += R) {
    const int64_t rows = std::min(R, N - r0);
    Tensor xc = detail::raw_view(x2, {rows, C}, {C, 1}, r0 * C);
    Tensor logits = detail::alloc({rows, V}, dt, dev);
    be.bmm(as_batch1(logits), as_batch1(xc), as_batch1(transposed(w)), 1.0, 0.0);
    be.cross_entropy(detail::raw_view(loss_rows, {rows}, {1}, r0), detail::raw_view(lse, {rows}, {1}, r0), logits,
                     detail::raw_view(t, {rows}, {1}, r0), ignore_index);
  }
  detail::record(op, dev, 2.0 * double(N) * double(C) * double(V) + 4.0 * double(N) * double(V),
                 double(x.nbytes() + weight.nbytes()), double(N) * double(element_size(dt)));

  double scale = 1.0;
  Tensor out;
  {
    autograd::NoGradGuard ng;
    Tensor total = sum(loss_rows);
    if (reduction == Reduction::Mean) {
      int64_t count = N;
      if (!dev.is_meta())
        count = int64_t(sum(ne(t, scalar_tensor(double(ignore_index), TensorOptions(DType::i64).device(dev)))).item());
      scale = count > 0 ? 1.0 / double(count) : std::numeric_limits<double>::quiet_NaN();
      total = mul(total, scale);
    }
    out = detail::raw_cast(total, promote_types(x.dtype(), weight.dtype()));
  }
  if (auto node = make_node("LinearCrossEntropyBackward", {x, weight})) {
    node->save(x);
    node->save(weight);
    node->save(t);
    node->save(lse);
    node->backward = [=, xs = x.shape()](OpNode& n, std::vector<Tensor>& g) -> std::vector<Tensor> {
      Tensor xv = n.saved(0), wv = n.saved(1), tv = n.saved(2), lv = n.saved(3);
      Tensor x2 = detail::raw_contiguous(detail::raw_cast(detail::raw_reshape(xv, {N, C}), dt));
      Tensor w = detail::raw_contiguous(detail::raw_cast(wv, dt));
      Backend& be = detail::kernels(dev);
      const double gs = g[0].item() * scale;
      Tensor dx = n.needs_grad(0) ? detail::alloc({N, C}, dt, dev) : Tensor();
      Tensor dw = n.needs_grad(1) ? zeros({V, C}, TensorOptions(dt).device(dev)) : Tensor();
      for (int64_t r0 = 0; r0 < N; r0 += R) {
        const int64_t rows = std::min(R, N - r0);
        Tensor xc = detail::raw_view(x2, {rows, C}, {C, 1}, r0 * C);
        Tensor logits = detail::alloc({rows, V}, dt, dev);
        be.bmm(as_batch1(logits), as_batch1(xc), as_batch1(transposed(w)), 1.0, 0.0);
        Tensor gl = full({rows}, gs, TensorOptions(dt).device(dev));
        Tensor dlogits = detail::alloc({rows, V}, dt, dev);
        be.cross_entropy_backward(dlogits, gl, logits, detail::raw_view(lv, {rows}, {1}, r0),
                                  detail::raw_view(tv, {rows}, {1}, r0), ignore_index);
        if (dx.defined())
          be.bmm(as_batch1(detail::raw_view(dx, {rows, C}, {C, 1}, r0 * C)), as_batch1(dlogits), as_batch1(w), 1.0, 0.0);
        if (dw.defined()) be.bmm(as_batch1(dw), as_batch1(transposed(dlogits)), as_batch1(xc), 1.0, 1.0);
      }
      detail::record("linear_cross_entropy_backward", dev, 6.0 * double(N) * double(C) * double(V),
                     double(xv.nbytes() + wv.nbytes()), double(xv.nbytes() + wv.nbytes()));
      return {dx.defined() ? detail::raw_cast(detail::raw_reshape(dx, xs), xv.dtype()) : Tensor(),
              dw.defined() ? detail::raw_cast(dw, wv.dtype()) : Tensor()};
    };
    set_outputs(node, {&out});
  }
  return out;
}

}  // namespace strata::ops
