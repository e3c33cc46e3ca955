// scaled_dot_product_attention and packed_self_attention: shape rules, mask conversion, cost,
// dispatch, backward.
#include <cmath>

#include "ops/common/dtype_dispatch.h"
#include "ops/dispatch.h"
#include "ops/op_node.h"
#include "strata/autograd/grad_mode.h"
#include "strata/ops/attention.h"
#include "strata/ops/autocast.h"
#include "strata/ops/elementwise.h"
#include "strata/ops/factory.h"
#include "strata/ops/shape_ops.h"

namespace strata::ops {

using detail::make_node;
using detail::OpNode;
using detail::set_outputs;

namespace {

// [..., T, D] with 1 or 2 batch dims as a 4-D [B, H, T, D] tensor of dtype dt: contiguous, or
// (the CPU kernel takes any view with unit stride along D) the view itself.
Tensor as_bhtd(const Tensor& t, DType dt, bool strided_ok) {
  Tensor c = detail::raw_cast(t, dt);
  if (!(strided_ok && (c.stride(-1) == 1 || c.size(-1) <= 1))) c = detail::raw_contiguous(c);
  if (t.dim() == 4) return c;
  return detail::raw_view(c, {1, c.size(0), c.size(1), c.size(2)}, {0, c.stride(0), c.stride(1), c.stride(2)},
                          c.storage_offset());
}

// A [B, H, T, D] tensor laid out in memory as [B, T, H, D] (heads merged by a plain view).
Tensor alloc_bthd(int64_t B, int64_t H, int64_t T, int64_t D, DType dt, Device dev) {
  Tensor m = detail::alloc({B, T, H, D}, dt, dev);
  return detail::raw_view(m, {B, H, T, D}, {T * H * D, D, H * D, 1}, 0);
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

// The dtype attention computes in: f64 stays f64. On CUDA, bf16/f16 inputs, and f32 inputs under
// autocast (as torch.autocast runs SDPA in bf16), run the fused 16-bit Tensor Core kernels, whose
// lse and additive mask are f32. Everything else runs in f32.
DType attention_dtype(const Tensor& q, Device dev) {
  if (q.dtype() == DType::f64) return DType::f64;
  if (dev.is_cuda()) {
    if (q.dtype() == DType::bf16 || q.dtype() == DType::f16) return q.dtype();
    if (autocast_enabled()) return autocast_dtype();
  }
  return DType::f32;
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
  const DType dt = attention_dtype(q, dev), stats_dt = common::is_half(dt) ? DType::f32 : dt;

  const bool strided_ok = dev.is_host_memory();
  Tensor q4 = as_bhtd(q, dt, strided_ok), k4 = as_bhtd(k, dt, strided_ok), v4 = as_bhtd(v, dt, strided_ok);
  const int64_t B = q4.size(0), H = q4.size(1), T = q4.size(2), S = k4.size(2), D = q4.size(3), Dv = v4.size(3);
  Shape bhts{B, H, T, S};
  if (attn_mask.defined()) broadcast_shapes(attn_mask.shape(), n == 4 ? bhts : Shape{H, T, S}, op);
  Tensor mask =
      additive_mask(n == 4 || !attn_mask.defined() ? attn_mask : unsqueeze(attn_mask, 0), bhts, stats_dt);
  // Heads in place on every backend: the caller's merge back to [B, T, H * Dv] is then a view, so
  // the projection after it saves the storage this op saves (the cache keeps it once).
  Tensor o = alloc_bthd(B, H, T, Dv, dt, dev);
  Tensor lse = detail::alloc({B, H, T}, stats_dt, dev);
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
      DType dt = q4.dtype();  // the compute dtype forward chose (bf16 under autocast on CUDA)
      const bool strided_ok = dev.is_host_memory();
      Tensor go = detail::raw_cast(detail::raw_reshape(g[0], o.shape()), dt);
      if (go.stride(-1) != 1) go = detail::raw_contiguous(go);  // kernels take dO with unit stride along Dv
      auto grad_like = [&](const Tensor& t) {
        return strided_ok ? alloc_bthd(t.size(0), t.size(1), t.size(2), t.size(3), dt, dev)
                          : detail::alloc(t.shape(), dt, dev);
      };
      Tensor dq = grad_like(q4), dk = grad_like(k4), dv = grad_like(v4);
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

Tensor packed_self_attention(const Tensor& qkv, int64_t n_head, bool is_causal, double scale) {
  return packed_self_attention(qkv, n_head, Tensor(), is_causal, scale);
}

Tensor packed_self_attention(const Tensor& qkv, int64_t n_head, const Tensor& attn_mask, bool is_causal,
                             double scale) {
  const char* op = "packed_self_attention";
  Device dev = detail::common_device(op, {&qkv, &attn_mask});
  STRATA_CHECK(qkv.dim() == 3 && n_head > 0 && qkv.size(2) % (3 * n_head) == 0, ShapeError, op,
               ": expects qkv [B, T, 3C] with C divisible by n_head, got ", shape_str(qkv.shape()), " and n_head ",
               n_head);
  STRATA_CHECK(is_floating(qkv.dtype()), TypeError, op, ": needs a floating input, got ", qkv.str());
  STRATA_CHECK(!(is_causal && attn_mask.defined()), ValueError, op, ": pass either attn_mask or is_causal, not both");
  const int64_t B = qkv.size(0), T = qkv.size(1), C = qkv.size(2) / 3, H = n_head, D = C / H;
  const Shape bhts{B, H, T, T};
  if (attn_mask.defined())
    STRATA_CHECK(attn_mask.dim() <= 4 && broadcast_shapes(attn_mask.shape(), bhts, op) == bhts, ShapeError, op,
                 ": attn_mask ", shape_str(attn_mask.shape()), " does not broadcast to [B, n_head, T, T] = ",
                 shape_str(bhts), " (qkv ", shape_str(qkv.shape()), ")");
  const DType dt = attention_dtype(qkv, dev), stats_dt = common::is_half(dt) ? DType::f32 : dt;
  // The host backends, and CUDA's 16-bit kernels, read the heads in place; CUDA's f32 path (and Meta)
  // take contiguous heads: the composite.
  if (!dev.is_host_memory() && !(dev.is_cuda() && common::is_half(dt))) {
    std::vector<Tensor> parts = split(qkv, C, 2);
    auto heads = [&](const Tensor& t) { return transpose(view(t, {B, T, H, D}), 1, 2); };
    Tensor y = scaled_dot_product_attention(heads(parts[0]), heads(parts[1]), heads(parts[2]), attn_mask, 0.0,
                                            is_causal, scale);
    return reshape(transpose(y, 1, 2), {B, T, C});
  }
  const double sc = std::isnan(scale) ? 1.0 / std::sqrt(double(D)) : scale;
  Tensor p = detail::raw_cast(qkv, dt);
  if (!p.is_contiguous()) p = detail::raw_contiguous(p);
  // The mask as an additive [B, H, T, T] view (stride 0 where it broadcasts: a key-padding
  // mask stays [B, 1, 1, T] in memory).
  Tensor mask = additive_mask(attn_mask, bhts, stats_dt);
  // The three [B, H, T, D] head views of a contiguous [B, T, 3C] tensor.
  auto part = [B, H, T, D, C](const Tensor& t, int64_t i) {
    return detail::raw_view(t, {B, H, T, D}, {T * 3 * C, D, 3 * C, 1}, t.storage_offset() + i * C);
  };
  Tensor o = alloc_bthd(B, H, T, D, dt, dev), lse = detail::alloc({B, H, T}, stats_dt, dev);
  detail::kernels(dev).attention(o, lse, part(p, 0), part(p, 1), part(p, 2), mask, is_causal, sc);
  const double pairs = double(B * H) * double(T) * double(T) * (is_causal ? 0.5 : 1.0);
  detail::record(op, dev, 4.0 * pairs * double(D) + 5.0 * pairs, double(p.nbytes()),
                 double(o.nbytes() + lse.nbytes()));
  Tensor out = detail::raw_cast(detail::raw_view(o, {B, T, C}, {T * C, C, 1}, 0), qkv.dtype());
  if (auto node = make_node("PackedSelfAttentionBackward", {qkv})) {
    node->save(p);
    node->save(o, true);
    node->save(lse, true);
    const bool masked = mask.defined();
    if (masked) node->save(mask);
    node->backward = [=, qdt = qkv.dtype()](OpNode& nd, std::vector<Tensor>& g) -> std::vector<Tensor> {
      Tensor p = nd.saved(0), o = nd.saved(1), lse = nd.saved(2);
      Tensor go = detail::raw_contiguous(detail::raw_cast(g[0], dt));
      Tensor go4 = detail::raw_view(go, {B, H, T, D}, {T * C, D, C, 1}, go.storage_offset());
      Tensor dp = detail::alloc({B, T, 3 * C}, dt, dev);
      detail::kernels(dev).attention_backward(part(dp, 0), part(dp, 1), part(dp, 2), go4, part(p, 0), part(p, 1),
                                              part(p, 2), o, lse, masked ? nd.saved(3) : Tensor(), is_causal, sc);
      detail::record("packed_self_attention_backward", dev, 8.0 * pairs * double(D) + 8.0 * pairs,
                     double(p.nbytes() + o.nbytes() + go.nbytes()), double(dp.nbytes()));
      return {detail::raw_cast(dp, qdt)};
    };
    set_outputs(node, {&out});
  }
  return out;
}

}  // namespace strata::ops
