// softmax, log_softmax, cross_entropy, layer_norm, embedding, dropout.
#include <limits>

#include "ops/dispatch.h"
#include "strata/autograd/grad_mode.h"
#include "ops/op_node.h"
#include "strata/ops/elementwise.h"
#include "strata/ops/factory.h"
#include "strata/ops/indexing.h"
#include "strata/ops/nn.h"
#include "strata/ops/reduction.h"
#include "strata/ops/shape_ops.h"

namespace strata::ops {

using detail::make_node;
using detail::OpNode;
using detail::set_outputs;

namespace {

// Row kernels run in f32 or f64 on contiguous rows.
DType row_dtype(DType t) { return t == DType::f64 ? DType::f64 : DType::f32; }

Tensor softmax_impl(const Tensor& x, int64_t dim, bool log) {
  const char* name = log ? "log_softmax" : "softmax";
  STRATA_CHECK(is_floating(x.dtype()), TypeError, name, ": needs a floating tensor, got ", x.str());
  dim = wrap_dim(dim, x.dim(), name);
  const int64_t last = std::max<int64_t>(x.dim() - 1, 0);
  Tensor xt = dim == last ? x : detail::raw_view(x, x.shape(), x.strides(), x.storage_offset());
  if (dim != last) {
    Shape s = x.shape(), st = x.strides();
    std::swap(s[size_t(dim)], s[size_t(last)]);
    std::swap(st[size_t(dim)], st[size_t(last)]);
    xt = detail::raw_view(x, s, st, x.storage_offset());
  }
  DType dt = row_dtype(x.dtype());
  Tensor in = detail::raw_contiguous(detail::raw_cast(xt, dt));
  Tensor y = detail::alloc(in.shape(), dt, x.device());
  detail::kernels(x.device()).softmax(y, in, log);
  detail::record(name, x.device(), 5.0 * double(x.numel()), double(x.nbytes()), double(y.nbytes()));
  // back to x's layout and dtype (no autograd: this node covers the whole op)
  if (dim != last) {
    Shape s = y.shape(), st = y.strides();
    std::swap(s[size_t(dim)], s[size_t(last)]);
    std::swap(st[size_t(dim)], st[size_t(last)]);
    y = detail::raw_contiguous(detail::raw_view(y, s, st, 0));
  }
  Tensor out = detail::raw_cast(y, x.dtype());
  if (auto node = make_node(log ? "LogSoftmaxBackward" : "SoftmaxBackward", {x})) {
    node->save(out, true);
    node->backward = [dim, last, log](OpNode& n, std::vector<Tensor>& g) -> std::vector<Tensor> {
      Tensor y = n.saved(0);
      auto to_rows = [&](const Tensor& t) {
        Tensor v = t;
        if (dim != last) v = transpose(t, dim, last);
        return detail::raw_contiguous(detail::raw_cast(v, row_dtype(t.dtype())));
      };
      Tensor yr = to_rows(y), gr = to_rows(g[0]);
      Tensor dx = detail::alloc(yr.shape(), yr.dtype(), yr.device());
      detail::kernels(yr.device()).softmax_backward(dx, gr, yr, log);
      Tensor r = dim != last ? transpose(dx, dim, last) : dx;
      return {detail::raw_cast(detail::raw_contiguous(r), y.dtype())};
    };
    set_outputs(node, {&out});
  }
  return out;
}

}  // namespace

Tensor softmax(const Tensor& x, int64_t dim) { return softmax_impl(x, dim, false); }
Tensor log_softmax(const Tensor& x, int64_t dim) { return softmax_impl(x, dim, true); }

Tensor cross_entropy(const Tensor& logits, const Tensor& target, int64_t ignore_index, Reduction reduction) {
  detail::common_device("cross_entropy", {&logits, &target});
  STRATA_CHECK(logits.dim() >= 1 && target.dtype() == DType::i64, TypeError,
               "cross_entropy: expects float logits [..., C] and i64 targets, got ", logits.str(), " and ",
               target.str());
  const int64_t C = logits.size(-1);
  Shape tshape(logits.shape().begin(), logits.shape().end() - 1);
  STRATA_CHECK(target.shape() == tshape, ShapeError, "cross_entropy: logits ", shape_str(logits.shape()),
               " need targets of shape ", shape_str(tshape), ", got ", shape_str(target.shape()));
  DType dt = row_dtype(logits.dtype());
  const int64_t R = logits.numel() / std::max<int64_t>(C, 1);
  Tensor x = detail::raw_contiguous(detail::raw_cast(detail::raw_reshape(logits, {R, C}), dt));
  Tensor t = detail::raw_contiguous(detail::raw_reshape(target, {R}));
  Tensor loss_rows = detail::alloc({R}, dt, logits.device());
  Tensor lse = detail::alloc({R}, dt, logits.device());
  detail::kernels(logits.device()).cross_entropy(loss_rows, lse, x, t, ignore_index);
  detail::record("cross_entropy", logits.device(), 4.0 * double(logits.numel()), double(logits.nbytes()),
                 double(loss_rows.nbytes()));

  double scale = 1.0;
  Tensor out;
  {
    autograd::NoGradGuard ng;
    if (reduction == Reduction::None) {
      out = detail::raw_cast(detail::raw_reshape(loss_rows, tshape), logits.dtype());
    } else {
      Tensor total = sum(loss_rows);
      if (reduction == Reduction::Mean) {
        int64_t count = 0;
        if (!logits.device().is_meta()) {
          count = int64_t(sum(ne(t, scalar_tensor(double(ignore_index), TensorOptions(DType::i64).device(t.device())))).item());
        } else {
          count = R;
        }
        scale = count > 0 ? 1.0 / double(count) : std::numeric_limits<double>::quiet_NaN();
        total = mul(total, scale);
      }
      out = detail::raw_cast(total, logits.dtype());
    }
  }
  if (auto node = make_node("CrossEntropyBackward", {logits})) {
    node->save(logits);
    node->save(t);
    node->save(lse);
    node->backward = [ignore_index, reduction, scale, C, R, ls = logits.shape()](
                         OpNode& n, std::vector<Tensor>& g) -> std::vector<Tensor> {
      Tensor lg = n.saved(0);
      DType dt = row_dtype(lg.dtype());
      Tensor x = detail::raw_contiguous(detail::raw_cast(detail::raw_reshape(lg, {R, C}), dt));
      Tensor gl = reduction == Reduction::None
                      ? detail::raw_contiguous(detail::raw_cast(detail::raw_reshape(g[0], {R}), dt))
                      : detail::raw_contiguous(detail::raw_expand(
                            detail::raw_reshape(detail::raw_cast(mul(g[0], scale), dt), {1}), {R}));
      Tensor dx = detail::alloc({R, C}, dt, lg.device());
      detail::kernels(lg.device()).cross_entropy_backward(dx, gl, x, n.saved(2), n.saved(1), ignore_index);
      return {detail::raw_cast(detail::raw_reshape(dx, ls), lg.dtype())};
    };
    set_outputs(node, {&out});
  }
  return out;
}

namespace {
// layer_norm's kernel over [R, C] rows in dtype dt; out in `odt` (dt, or autocast's 16-bit dtype):
// written by the kernel where it takes a 16-bit output beside f32 rows (CUDA), else the f32 rows
// rounded once by a cast, the same bits.
Tensor layer_norm_rows(const Tensor& xr, const Tensor& wr, const Tensor& br, const Tensor& mu,
                       const Tensor& rs, double eps, DType dt, DType odt) {
  const Device dev = xr.device();
  const bool direct = odt == dt || dev.is_cuda();
  Tensor y = detail::alloc(xr.shape(), direct ? odt : dt, dev);
  detail::kernels(dev).layer_norm(y, mu, rs, xr, wr, br, eps);
  return detail::raw_cast(y, odt);
}
}  // namespace

Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight, const Tensor& bias,
                  double eps, AutocastResult result) {
  Device dev = detail::common_device("layer_norm", {&x, &weight, &bias});
  const int64_t k = int64_t(normalized_shape.size());
  STRATA_CHECK(k >= 1 && x.dim() >= k &&
                   Shape(x.shape().end() - k, x.shape().end()) == normalized_shape,
               ShapeError, "layer_norm: input ", shape_str(x.shape()), " does not end in normalized_shape ",
               shape_str(normalized_shape));
  for (const Tensor* p : {&weight, &bias})
    STRATA_CHECK(!p->defined() || p->shape() == normalized_shape, ShapeError, "layer_norm: weight/bias ",
                 shape_str(p->shape()), " must be ", shape_str(normalized_shape));
  const int64_t C = shape_numel(normalized_shape), R = x.numel() / std::max<int64_t>(C, 1);
  DType dt = row_dtype(x.dtype());
  // The result's dtype: x's, or autocast's 16-bit one when the caller takes it narrow.
  const DType odt = result == AutocastResult::Narrow && x.dtype() == dt && autocast_applies(dev, dt)
                        ? autocast_dtype()
                        : x.dtype();
  auto rows = [&](const Tensor& t, Shape s) {
    return t.defined() ? detail::raw_contiguous(detail::raw_cast(detail::raw_reshape(t, s), dt)) : Tensor();
  };
  Tensor xr = rows(x, {R, C}), wr = rows(weight, {C}), br = rows(bias, {C});
  Tensor mu = detail::alloc({R}, dt, dev), rs = detail::alloc({R}, dt, dev);
  Tensor y = layer_norm_rows(xr, wr, br, mu, rs, eps, dt, odt);
  detail::record("layer_norm", dev, 8.0 * double(x.numel()), double(x.nbytes()), double(y.nbytes()));
  Tensor out = detail::raw_cast(detail::raw_reshape(y, x.shape()), odt);
  if (auto node = make_node("LayerNormBackward", {x, weight, bias})) {
    node->save(x);
    node->save(weight);
    node->save(mu);
    node->save(rs);
    node->save(bias);  // a parameter (never moved): only for forward_again
    // The output again from the saved input (a memory-bound row pass, the same kernel and bits),
    // so the cache can drop it: op-level recompute, like GELU's.
    node->forward_again = [R, C, eps, dt, odt, shape = x.shape()](OpNode& n) {
      Tensor xv = n.saved(0), wv = n.saved(1), bv = n.saved(4);
      auto rows = [&](const Tensor& t, Shape s) {
        return t.defined() ? detail::raw_contiguous(detail::raw_cast(detail::raw_reshape(t, s), dt)) : Tensor();
      };
      Device dev = xv.device();
      Tensor mu2 = detail::alloc({R}, dt, dev), rs2 = detail::alloc({R}, dt, dev);
      Tensor y2 = layer_norm_rows(rows(xv, {R, C}), rows(wv, {C}), rows(bv, {C}), mu2, rs2, eps, dt, odt);
      detail::record("layer_norm", dev, 8.0 * double(R * C), double(xv.nbytes()), double(y2.nbytes()));
      return detail::raw_reshape(y2, shape);
    };
    node->backward = [R, C, ns = normalized_shape](OpNode& n, std::vector<Tensor>& g) -> std::vector<Tensor> {
      Tensor xv = n.saved(0), wv = n.saved(1);
      DType dt = row_dtype(xv.dtype());
      auto rows = [&](const Tensor& t, Shape s) {
        return t.defined() ? detail::raw_contiguous(detail::raw_cast(detail::raw_reshape(t, s), dt)) : Tensor();
      };
      Device dev = xv.device();
      // A narrow result's bf16 gradient: CUDA's kernel reads it as it is (the same values a cast
      // to f32 would give); elsewhere it is cast.
      const bool narrow_g =
          dev.is_cuda() && dt == DType::f32 && (g[0].dtype() == DType::bf16 || g[0].dtype() == DType::f16);
      Tensor gy = narrow_g ? detail::raw_contiguous(detail::raw_reshape(g[0], {R, C})) : rows(g[0], {R, C});
      Tensor gx = n.needs_grad(0) ? detail::alloc({R, C}, dt, dev) : Tensor();
      Tensor gw = n.needs_grad(1) ? detail::alloc({C}, dt, dev) : Tensor();
      Tensor gb = n.needs_grad(2) ? detail::alloc({C}, dt, dev) : Tensor();
      detail::kernels(dev).layer_norm_backward(gx, gw, gb, gy, rows(xv, {R, C}), n.saved(2), n.saved(3),
                                               rows(wv, {C}));
      // Reads dy and x, writes dx (the parameter gradients are C-sized): a memory-bound row pass
      // as long as the forward's, which the planner's cost model must see.
      const double rc = double(R * C) * double(element_size(dt));
      detail::record("layer_norm_backward", dev, 10.0 * double(R * C), double(gy.nbytes()) + rc,
                     gx.defined() ? rc : 0.0);
      auto back = [&](const Tensor& t, const Tensor& like) {
        return t.defined() ? detail::raw_cast(detail::raw_reshape(t, like.shape()), like.dtype()) : Tensor();
      };
      return {back(gx, xv), back(gw, wv), gb.defined() ? detail::raw_cast(detail::raw_reshape(gb, ns), xv.dtype()) : Tensor()};
    };
    set_outputs(node, {&out});
  }
  return out;
}

Tensor embedding(const Tensor& weight, const Tensor& indices) {
  STRATA_CHECK(weight.dim() == 2 && indices.dtype() == DType::i64, TypeError,
               "embedding: expects weight [V, C] and i64 indices, got ", weight.str(), " and ", indices.str());
  Tensor flat = reshape(indices, {-1});
  Tensor rows = index_select(weight, 0, flat);
  Shape s = indices.shape();
  s.push_back(weight.size(1));
  return reshape(rows, s);
}

Tensor dropout(const Tensor& x, double p, bool training) {
  STRATA_CHECK(p >= 0.0 && p <= 1.0, ValueError, "dropout: p must be in [0, 1], got ", p);
  if (!training || p == 0.0) return x;
  if (p == 1.0) return mul(x, 0.0);
  const double scale = 1.0 / (1.0 - p);
  Device dev = x.device();
  // mask[i] = (u[i] >= p) * scale, regenerated in backward from the same Philox state. u and p
  // are compared in f32 whatever x's dtype (rounding u to bf16 would shift the keep rate and
  // make the mask depend on the dtype), and the mask stays in f32 for 16-bit x, so x * scale is
  // rounded once (a bf16 scale would bias the kept values by up to 2^-9).
  auto make_mask = [dev, p, scale](const Shape& shape, DType dt, RngState s) {
    Tensor u = detail::alloc(shape, DType::f32, dev);
    detail::kernels(dev).random_uniform(u, s, 0.0, 1.0);
    Tensor keep = detail::alloc(shape, DType::boolean, dev);
    Tensor thr = full({}, p, TensorOptions(DType::f32).device(dev));
    Tensor a[2] = {u, detail::raw_expand(thr, shape)};
    detail::kernels(dev).elementwise(EwOp::Ge, keep, a);
    Tensor m = detail::raw_cast(keep, dt);
    Tensor a2[1] = {m};
    detail::kernels(dev).elementwise(EwOp::MulScalar, m, a2, {scale, 0});
    return m;
  };
  DType dt = is_floating(x.dtype()) ? x.dtype() : DType::f32;
  DType mask_dt = dt == DType::f64 ? DType::f64 : DType::f32;
  RngState state = current_generator().reserve(uint64_t(x.numel()));
  Tensor mask;
  Tensor out;
  {
    autograd::NoGradGuard ng;
    mask = make_mask(x.shape(), mask_dt, state);
    out = detail::raw_cast(mul(x, mask), dt);
  }
  if (auto node = make_node("DropoutBackward", {x})) {
    node->backward = [make_mask, state, shape = x.shape(), mask_dt](OpNode&, std::vector<Tensor>& g) -> std::vector<Tensor> {
      return {detail::raw_cast(mul(g[0], make_mask(shape, mask_dt, state)), g[0].dtype())};
    };
    set_outputs(node, {&out});
  }
  return out;
}

}  // namespace strata::ops
