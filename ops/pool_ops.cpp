// max_pool2d, avg_pool2d, adaptive_avg_pool2d: shape rules, cost, dispatch, backward
// (torch.nn.functional semantics, ceil_mode included).
#include "ops/dispatch.h"
#include "ops/op_node.h"
#include "strata/ops/conv.h"

namespace strata::ops {

using detail::make_node;
using detail::OpNode;
using detail::set_outputs;

namespace {

// torch's pooling_output_shape: floor or ceil of the window count, and with ceil_mode the last
// window must start inside the input or the left padding.
int64_t pooled_size(int64_t in, int64_t k, int64_t s, int64_t pad, int64_t dil, bool ceil_mode) {
  const int64_t span = in + 2 * pad - dil * (k - 1) - 1;
  if (span < 0) return 0;  // the window does not fit
  int64_t out = (span + (ceil_mode ? s - 1 : 0)) / s + 1;
  if (ceil_mode && (out - 1) * s >= in + pad) --out;
  return out;
}

Tensor pool_impl(const char* op, const Tensor& x, Pool2dParams p, Size2 out_hw, bool ceil_mode) {
  Device dev = x.device();
  STRATA_CHECK(x.dim() == 4, ShapeError, op, ": expects x [N, C, H, W], got ", shape_str(x.shape()));
  STRATA_CHECK(is_floating(x.dtype()), TypeError, op, ": needs a floating tensor, got ", x.str());
  const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  if (p.kind != PoolKind::AdaptiveAvg) {
    for (int d = 0; d < 2; ++d) {
      if (p.stride[d] == 0) p.stride[d] = p.kernel[d];
      STRATA_CHECK(p.kernel[d] >= 1 && p.stride[d] >= 1 && p.dilation[d] >= 1 && p.padding[d] >= 0 &&
                       p.padding[d] <= p.kernel[d] / 2,
                   ValueError, op, ": needs kernel, stride, dilation >= 1 and 0 <= padding <= kernel / 2, got kernel (",
                   p.kernel[0], ", ", p.kernel[1], "), stride (", p.stride[0], ", ", p.stride[1], "), padding (",
                   p.padding[0], ", ", p.padding[1], ")");
    }
    out_hw[0] = pooled_size(H, p.kernel[0], p.stride[0], p.padding[0], p.dilation[0], ceil_mode);
    out_hw[1] = pooled_size(W, p.kernel[1], p.stride[1], p.padding[1], p.dilation[1], ceil_mode);
  }
  STRATA_CHECK(out_hw[0] >= 1 && out_hw[1] >= 1, ShapeError, op, ": x ", shape_str(x.shape()),
               " gives an empty output (", out_hw[0], "x", out_hw[1], ")");
  const DType dt = x.dtype() == DType::f64 ? DType::f64 : DType::f32;
  Tensor xc = detail::raw_contiguous(detail::raw_cast(x, dt));
  Tensor y = detail::alloc({N, C, out_hw[0], out_hw[1]}, dt, dev);
  Tensor idx = p.kind == PoolKind::Max ? detail::alloc(y.shape(), DType::i64, dev) : Tensor();
  detail::kernels(dev).pool2d(y, idx, xc, p);
  const double window = p.kind == PoolKind::AdaptiveAvg
                            ? double(H * W) / double(out_hw[0] * out_hw[1]) + 1.0
                            : double(p.kernel[0] * p.kernel[1]);
  detail::record(op, dev, window * double(y.numel()), double(x.nbytes()),
                 double(y.nbytes() + (idx.defined() ? idx.nbytes() : 0)));
  Tensor out = detail::raw_cast(y, x.dtype());
  if (auto node = make_node(p.kind == PoolKind::Max ? "MaxPool2dBackward"
                            : p.kind == PoolKind::Avg ? "AvgPool2dBackward"
                                                      : "AdaptiveAvgPool2dBackward",
                            {x})) {
    if (idx.defined()) node->save(idx, true);
    node->backward = [p, xs = x.shape(), xdt = x.dtype(), dt, dev, window, op](
                         OpNode& nd, std::vector<Tensor>& g) -> std::vector<Tensor> {
      Tensor gy = detail::raw_contiguous(detail::raw_cast(g[0], dt));
      Tensor gx = detail::alloc(xs, dt, dev);
      detail::kernels(dev).pool2d_backward(gx, gy, p.kind == PoolKind::Max ? nd.saved(0) : Tensor(), p);
      detail::record(op, dev, window * double(gy.numel()), double(gy.nbytes()), double(gx.nbytes()));
      return {detail::raw_cast(gx, xdt)};
    };
    set_outputs(node, {&out});
  }
  return out;
}

}  // namespace

Tensor max_pool2d(const Tensor& x, Size2 kernel, Size2 stride, Size2 padding, Size2 dilation, bool ceil_mode) {
  Pool2dParams p;
  p.kind = PoolKind::Max;
  for (int d = 0; d < 2; ++d)
    p.kernel[d] = kernel[size_t(d)], p.stride[d] = stride[size_t(d)], p.padding[d] = padding[size_t(d)],
    p.dilation[d] = dilation[size_t(d)];
  return pool_impl("max_pool2d", x, p, {0, 0}, ceil_mode);
}

Tensor avg_pool2d(const Tensor& x, Size2 kernel, Size2 stride, Size2 padding, bool ceil_mode,
                  bool count_include_pad) {
  Pool2dParams p;
  p.kind = PoolKind::Avg;
  p.count_include_pad = count_include_pad;
  for (int d = 0; d < 2; ++d)
    p.kernel[d] = kernel[size_t(d)], p.stride[d] = stride[size_t(d)], p.padding[d] = padding[size_t(d)];
  return pool_impl("avg_pool2d", x, p, {0, 0}, ceil_mode);
}

Tensor adaptive_avg_pool2d(const Tensor& x, Size2 output_size) {
  Pool2dParams p;
  p.kind = PoolKind::AdaptiveAvg;
  STRATA_CHECK(output_size[0] >= 1 && output_size[1] >= 1, ValueError,
               "adaptive_avg_pool2d: output_size must be positive, got (", output_size[0], ", ", output_size[1], ")");
  return pool_impl("adaptive_avg_pool2d", x, p, output_size, false);
}

}  // namespace strata::ops
