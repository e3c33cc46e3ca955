#include "ops/graph/row_kernels.h"

#include "ops/dispatch.h"
#include "strata/ops/factory.h"

namespace strata::ops::detail {

// Made where it is used (the backend's arange): no host copy of an [n] index on a device.
Tensor iota(int64_t n, Device device) { return strata::arange(n, TensorOptions(DType::i64).device(device)); }

Tensor row_sum(const Tensor& offsets, const Tensor& indices, const Tensor& weights,
               const Tensor& weight_index, const Tensor& x, int64_t rows) {
  Tensor out = alloc({rows, x.size(1)}, x.dtype(), x.device());
  kernels(x.device()).spmm(out, offsets, indices, weights, weight_index, x);
  return out;
}

Tensor row_extreme(const Tensor& offsets, const Tensor& indices, const Tensor& weight_index, const Tensor& x,
                   int64_t rows, bool minimum, Tensor* arg) {
  Tensor out = alloc({rows, x.size(1)}, x.dtype(), x.device());
  *arg = alloc({rows, x.size(1)}, DType::i64, x.device());
  kernels(x.device()).spmm_extreme(out, *arg, offsets, indices, weight_index, x, minimum);
  return out;
}

Tensor row_extreme_backward(const Tensor& offsets, const Tensor& positions, const Tensor& rows,
                            const Tensor& arg, const Tensor& grad_out, int64_t n) {
  Tensor gx = alloc({n, grad_out.size(1)}, grad_out.dtype(), grad_out.device());
  kernels(grad_out.device()).spmm_extreme_backward(gx, offsets, positions, rows, arg, grad_out);
  return gx;
}

Tensor as_rows(const Tensor& x) {
  int64_t width = 1;
  for (int64_t d = 1; d < x.dim(); ++d) width *= x.size(d);
  return raw_reshape(raw_contiguous(x), {x.size(0), width});
}

}  // namespace strata::ops::detail
