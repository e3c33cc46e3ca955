// batch_norm: shape rules, running-statistics update, cost, dispatch, backward
// (torch.nn.functional.batch_norm semantics).
#include "ops/dispatch.h"
#include "ops/op_node.h"
#include "strata/autograd/checkpoint.h"
#include "strata/ops/conv.h"

namespace strata::ops {

using detail::make_node;
using detail::OpNode;
using detail::set_outputs;

namespace {

Tensor prepared(const Tensor& t, DType dt) {
  return t.defined() ? detail::raw_contiguous(detail::raw_cast(t, dt)) : Tensor();
}

}  // namespace

Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                  const Tensor& bias, bool training, double momentum, double eps) {
  const char* op = "batch_norm";
  Device dev = detail::common_device(op, {&x, &running_mean, &running_var, &weight, &bias});
  STRATA_CHECK(x.dim() >= 2, ShapeError, op, ": expects x [N, C, ...], got ", shape_str(x.shape()));
  STRATA_CHECK(is_floating(x.dtype()), TypeError, op, ": needs a floating tensor, got ", x.str());
  const int64_t C = x.size(1);
  for (const Tensor* t : {&running_mean, &running_var, &weight, &bias})
    STRATA_CHECK(!t->defined() || t->shape() == Shape{C}, ShapeError, op, ": per-channel tensors must be [", C,
                 "] for x ", shape_str(x.shape()), ", got ", shape_str(t->shape()));
  STRATA_CHECK(training || (running_mean.defined() && running_var.defined()), ValueError, op,
               ": evaluation mode needs running_mean and running_var");
  STRATA_CHECK(running_mean.defined() == running_var.defined(), ValueError, op,
               ": pass both running_mean and running_var or neither");
  STRATA_CHECK(!training || dev.is_meta() || x.numel() / std::max<int64_t>(C, 1) > 1, ValueError, op,
               ": training needs more than one value per channel, got x ", shape_str(x.shape()));
  const DType dt = x.dtype() == DType::f64 ? DType::f64 : DType::f32;
  Tensor xc = prepared(x, dt), wc = prepared(weight, dt), bc = prepared(bias, dt);
  // The running statistics are updated in place: the kernel writes a compute-dtype contiguous
  // copy when they are not one already, copied back below. A recompute segment re-running its
  // forward must not update them a second time.
  const bool update = running_mean.defined() && training && !autograd::in_recompute();
  Tensor rm = running_mean.defined() ? prepared(running_mean, dt) : Tensor();
  Tensor rv = running_var.defined() ? prepared(running_var, dt) : Tensor();
  if (training && !update) rm = rv = Tensor();
  Tensor y = detail::alloc(xc.shape(), dt, dev);
  Tensor mean = detail::alloc({C}, dt, dev), invstd = detail::alloc({C}, dt, dev);
  detail::kernels(dev).batch_norm(y, mean, invstd, xc, wc, bc, rm, rv, training, momentum, eps);
  if (update) {
    if (rm.storage() != running_mean.storage()) detail::kernels(dev).copy(running_mean, rm);
    if (rv.storage() != running_var.storage()) detail::kernels(dev).copy(running_var, rv);
  }
  detail::record(op, dev, (training ? 7.0 : 2.0) * double(x.numel()), double(x.nbytes()), double(y.nbytes()));
  Tensor out = detail::raw_cast(y, x.dtype());

  if (auto node = make_node("BatchNormBackward", {x, weight, bias})) {
    node->save(xc);
    node->save(wc);
    node->save(mean, true);
    node->save(invstd, true);
    node->backward = [training, xdt = x.dtype(), wdt = weight.defined() ? weight.dtype() : x.dtype(),
                      bdt = bias.defined() ? bias.dtype() : x.dtype()](OpNode& nd, std::vector<Tensor>& g)
        -> std::vector<Tensor> {
      Tensor xc = nd.saved(0), wc = nd.saved(1), mean = nd.saved(2), invstd = nd.saved(3);
      Device dev = xc.device();
      DType dt = xc.dtype();
      const int64_t C = xc.size(1);
      Tensor gy = prepared(g[0], dt);
      Tensor gx = nd.needs_grad(0) ? detail::alloc(xc.shape(), dt, dev) : Tensor();
      Tensor gw = nd.needs_grad(1) ? detail::alloc({C}, dt, dev) : Tensor();
      Tensor gb = nd.needs_grad(2) ? detail::alloc({C}, dt, dev) : Tensor();
      detail::kernels(dev).batch_norm_backward(gx, gw, gb, gy, xc, wc, mean, invstd, training);
      detail::record("batch_norm_backward", dev, 8.0 * double(xc.numel()), double(xc.nbytes() + gy.nbytes()),
                     double(gx.defined() ? gx.nbytes() : 0));
      auto back = [](const Tensor& t, DType to) { return t.defined() ? detail::raw_cast(t, to) : Tensor(); };
      return {back(gx, xdt), back(gw, wdt), back(gb, bdt)};
    };
    set_outputs(node, {&out});
  }
  return out;
}

}  // namespace strata::ops
