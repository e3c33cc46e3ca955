// scaled_dot_product_attention: shape rules, mask conversion, cost, dispatch, backward.
#include <cmath>

#include "ops/dispatch.h"
#include "ops/op_node.h"
#include "strata/autograd/grad_mode.h"
#include "strata/ops/attention.h"
#include "strata/ops/elementwise.h"
#include "strata/ops/factory.h"
#include "strata/ops/shape_ops.h"

namespace strata::ops {

using detail::make_node;
using detail::OpNode;
using detail::set_outputs;

namespace {

// [..., T, D] with 1 or 2 batch dims as a contiguous 4-D [B, H, T, D] tensor of dtype dt.
Tensor as_bhtd(const Tensor& t, DType dt) {
  Tensor c = detail::raw_contiguous(detail::raw_cast(t, dt));
  if (t.dim() == 4) return c;
  return detail::raw_reshape(c, {1, t.size(0), t.size(1), t.size(2)});
}

// bool (true = attend) or additive mask -> additive mask of dtype dt viewed as [B, H, T, S].
Tensor additive_mask(const Tensor& mask, const Shape& bhts, DType dt) {
  if (!mask.defined()) return Tensor();
  Tensor add = mask;
  if (mask.dtype() == DType::boolean) {
    Tensor zero = zeros({}, TensorOptions(dt).device(mask.device()));
    Tensor ninf = full({}, -std::numeric_limits<double>::infinity(), TensorOptions(dt).device(mask.device()));
    NoGradGuard ng;
    add = where(mask, zero, ninf);
  } else {
    add = detail::raw_cast(mask, dt);
  }
  return detail::raw_expand(add, bhts);
}

}  // namespace

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& attn_mask,
                                    double dropout_p, bool is_causal, double scale) {
  const char* op = "scaled_dot_product_attention";
  Device dev = detail::common_device(op, {&q, &k, &v, &attn_mask});
  STRATA_CHECK(dropout_p == 0.0, NotImplementedError, op, ": dropout inside attention is not supported (got p=",
               dropout_p, ")");
  STRATA_CHECK((q.dim() == 3 || q.dim() == 4) && k.dim() == q.dim() && v.dim() == q.dim(), ShapeError, op,
               ": q, k, v must be 3-D or 4-D, got ", shape_str(q.shape()), ", ", shape_str(k.shape()), ", ",
               shape_str(v.shape()));
  const int64_t n = q.dim();
  for (int64_t d = 0; d < n - 2; ++d)
    STRATA_CHECK(k.size(d) == q.size(d) && v.size(d) == q.size(d), ShapeError, op, ": batch dims differ: q ",
                 shape_str(q.shape()), ", k ", shape_str(k.shape()), ", v ", shape_str(v.shape()));
  STRATA_CHECK(k.size(-1) == q.size(-1) && v.size(-2) == k.size(-2), ShapeError, op, ": q ", shape_str(q.shape()),
               ", k ", shape_str(k.shape()), ", v ", shape_str(v.shape()), " do not fit (q.D == k.D, k.S == v.S)");
  STRATA_CHECK(!(is_causal && attn_mask.defined()), ValueError, op, ": pass either attn_mask or is_causal, not both");
  STRATA_CHECK(is_floating(q.dtype()), TypeError, op, ": needs floating inputs, got ", q.str());
  const double sc = std::isnan(scale) ? 1.0 / std::sqrt(double(q.size(-1))) : scale;
  const DType dt = q.dtype() == DType::f64 ? DType::f64 : DType::f32;

  Tensor q4 = as_bhtd(q, dt), k4 = as_bhtd(k, dt), v4 = as_bhtd(v, dt);
  const int64_t B = q4.size(0), H = q4.size(1), T = q4.size(2), S = k4.size(2), D = q4.size(3), Dv = v4.size(3);
  Shape bhts{B, H, T, S};
  if (attn_mask.defined()) broadcast_shapes(attn_mask.shape(), n == 4 ? bhts : Shape{H, T, S}, op);
  Tensor mask = additive_mask(n == 4 || !attn_mask.defined() ? attn_mask : unsqueeze(attn_mask, 0), bhts, dt);
  Tensor o = detail::alloc({B, H, T, Dv}, dt, dev), lse = detail::alloc({B, H, T}, dt, dev);
  detail::kernels(dev).attention(o, lse, q4, k4, v4, mask, is_causal, sc);
  const double pairs = double(B * H) * double(T) * double(S) * (is_causal ? 0.5 : 1.0);
  detail::record(op, dev, 2.0 * pairs * double(D + Dv) + 5.0 * pairs,
                 double(q.nbytes() + k.nbytes() + v.nbytes()), double(o.nbytes() + lse.nbytes()));
  Shape out_shape = q.shape();
  out_shape.back() = Dv;
  Tensor out = detail::raw_cast(detail::raw_reshape(o, out_shape), q.dtype());

  if (auto node = make_node("ScaledDotProductAttentionBackward", {q, k, v})) {
    node->save(q4);
    node->save(k4);
    node->save(v4);
    node->save(o, true);
    node->save(lse, true);
    node->save(mask);
    node->backward = [is_causal, sc, qs = q.shape(), ks = k.shape(), vs = v.shape(), dts = q.dtype(), pairs, D, Dv](
                         OpNode& nd, std::vector<Tensor>& g) -> std::vector<Tensor> {
      Tensor q4 = nd.saved(0), k4 = nd.saved(1), v4 = nd.saved(2), o = nd.saved(3), lse = nd.saved(4);
      Device dev = q4.device();
      DType dt = q4.dtype();
      Tensor go = detail::raw_contiguous(detail::raw_cast(detail::raw_reshape(g[0], o.shape()), dt));
      Tensor dq = detail::alloc(q4.shape(), dt, dev), dk = detail::alloc(k4.shape(), dt, dev),
             dv = detail::alloc(v4.shape(), dt, dev);
      detail::kernels(dev).attention_backward(dq, dk, dv, go, q4, k4, v4, o, lse, nd.saved(5), is_causal, sc);
      detail::record("scaled_dot_product_attention_backward", dev, 4.0 * pairs * double(D + Dv) + 8.0 * pairs,
                     double(q4.nbytes() + k4.nbytes() + v4.nbytes() + o.nbytes() + go.nbytes()),
                     double(dq.nbytes() + dk.nbytes() + dv.nbytes()));
      auto back = [&](const Tensor& t, const Shape& s) { return detail::raw_cast(detail::raw_reshape(t, s), dts); };
      return {nd.needs_grad(0) ? back(dq, qs) : Tensor(), nd.needs_grad(1) ? back(dk, ks) : Tensor(),
              nd.needs_grad(2) ? back(dv, vs) : Tensor()};
    };
    set_outputs(node, {&out});
  }
  return out;
}

}  // namespace strata::ops
