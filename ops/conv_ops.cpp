// conv2d: shape rules, cost, dispatch, backward (torch.nn.functional.conv2d semantics).
#include "ops/dispatch.h"
#include "ops/op_node.h"
#include "strata/ops/conv.h"

namespace strata::ops {

using detail::make_node;
using detail::OpNode;
using detail::set_outputs;

namespace {

DType compute_dtype(DType t) { return t == DType::f64 ? DType::f64 : DType::f32; }

Tensor prepared(const Tensor& t, DType dt) {
  return t.defined() ? detail::raw_contiguous(detail::raw_cast(t, dt)) : Tensor();
}

}  // namespace

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, Size2 stride, Size2 padding,
              Size2 dilation, int64_t groups) {
  const char* op = "conv2d";
  Device dev = detail::common_device(op, {&x, &weight, &bias});
  STRATA_CHECK(x.dim() == 4 && weight.dim() == 4, ShapeError, op, ": expects x [N, C, H, W] and weight [K, C/groups, R, S], got ",
               shape_str(x.shape()), " and ", shape_str(weight.shape()));
  STRATA_CHECK(is_floating(x.dtype()) && is_floating(weight.dtype()), TypeError, op, ": needs floating tensors, got ",
               x.str(), " and ", weight.str());
  STRATA_CHECK(groups >= 1 && stride[0] >= 1 && stride[1] >= 1 && dilation[0] >= 1 && dilation[1] >= 1 &&
                   padding[0] >= 0 && padding[1] >= 0,
               ValueError, op, ": needs groups, stride, dilation >= 1 and padding >= 0, got groups ", groups,
               ", stride (", stride[0], ", ", stride[1], "), padding (", padding[0], ", ", padding[1],
               "), dilation (", dilation[0], ", ", dilation[1], ")");
  const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  const int64_t K = weight.size(0), R = weight.size(2), S = weight.size(3);
  STRATA_CHECK(C == weight.size(1) * groups && K % groups == 0, ShapeError, op, ": x ", shape_str(x.shape()),
               " and weight ", shape_str(weight.shape()), " do not fit groups=", groups,
               " (needs C == weight.size(1) * groups and K divisible by groups)");
  STRATA_CHECK(!bias.defined() || bias.shape() == Shape{K}, ShapeError, op, ": bias must be [", K, "], got ",
               shape_str(bias.shape()));
  const int64_t P = (H + 2 * padding[0] - dilation[0] * (R - 1) - 1) / stride[0] + 1;
  const int64_t Q = (W + 2 * padding[1] - dilation[1] * (S - 1) - 1) / stride[1] + 1;
  STRATA_CHECK(H + 2 * padding[0] >= dilation[0] * (R - 1) + 1 && W + 2 * padding[1] >= dilation[1] * (S - 1) + 1,
               ShapeError, op, ": the (dilated) kernel ", R, "x", S, " is larger than the padded input ", H, "x", W,
               " of x ", shape_str(x.shape()));
  Conv2dParams p;
  p.stride[0] = stride[0], p.stride[1] = stride[1], p.padding[0] = padding[0], p.padding[1] = padding[1];
  p.dilation[0] = dilation[0], p.dilation[1] = dilation[1], p.groups = groups;

  const DType dt = compute_dtype(x.dtype());
  Tensor xc = prepared(x, dt), wc = prepared(weight, dt), bc = prepared(bias, dt);
  Tensor y = detail::alloc({N, K, P, Q}, dt, dev);
  detail::kernels(dev).conv2d(y, xc, wc, bc, p);
  const double macs = double(N * K * P * Q) * double(C / groups * R * S);
  detail::record(op, dev, 2.0 * macs, double(x.nbytes() + weight.nbytes()), double(y.nbytes()));
  Tensor out = detail::raw_cast(y, x.dtype());

  if (auto node = make_node("Conv2dBackward", {x, weight, bias})) {
    // Save only what backward reads (flashlight's habit): x for the weight gradient, the weight
    // for the input gradient. The first convolution's image input, whose gradient nobody
    // wants, is not kept alive. In backward the gradient buffer of the same shape stands in
    // for the one not saved: the kernels read only its shape.
    const bool want_x = node->needs_grad(0), want_w = node->needs_grad(1);
    node->save(want_w || !want_x ? xc : Tensor());
    node->save(want_x || !want_w ? wc : Tensor());
    node->backward = [p, macs, dt, xs = xc.shape(), ws = wc.shape(), xdt = x.dtype(), wdt = weight.dtype(),
                      bdt = bias.defined() ? bias.dtype() : weight.dtype(), has_bias = bias.defined()](
                         OpNode& nd, std::vector<Tensor>& g) -> std::vector<Tensor> {
      Tensor xc = nd.saved(0), wc = nd.saved(1);
      Tensor gy = prepared(g[0], dt);
      Device dev = gy.device();
      Tensor gx = nd.needs_grad(0) ? detail::alloc(xs, dt, dev) : Tensor();
      Tensor gw = nd.needs_grad(1) ? detail::alloc(ws, dt, dev) : Tensor();
      Tensor gb = has_bias && nd.needs_grad(2) ? detail::alloc({ws[0]}, dt, dev) : Tensor();
      if (!xc.defined()) xc = gx;  // shape only: x is read for the weight gradient, not wanted here
      if (!wc.defined()) wc = gw;  // likewise the weight, for the input gradient
      detail::kernels(dev).conv2d_backward(gx, gw, gb, gy, xc, wc, p);
      detail::record("conv2d_backward", dev, 2.0 * macs * (double(gx.defined()) + double(gw.defined())),
                     double(gy.nbytes() + (gw.defined() ? xc.nbytes() : 0) + (gx.defined() ? wc.nbytes() : 0)),
                     double((gx.defined() ? gx.nbytes() : 0) + (gw.defined() ? gw.nbytes() : 0)));
      auto back = [](const Tensor& t, DType to) { return t.defined() ? detail::raw_cast(t, to) : Tensor(); };
      return {back(gx, xdt), back(gw, wdt), back(gb, bdt)};
    };
    set_outputs(node, {&out});
  }
  return out;
}

}  // namespace strata::ops
