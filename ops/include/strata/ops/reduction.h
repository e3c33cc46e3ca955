// Differentiable reductions over any dims with keepdim; deterministic summation order.
#pragma once

#include <vector>

#include "strata/core/tensor.h"

namespace strata::ops {

Tensor sum(const Tensor& x);
Tensor sum(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim = false);
Tensor mean(const Tensor& x);
Tensor mean(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim = false);
// Variance with Bessel's correction by default (torch.var).
Tensor var(const Tensor& x, const std::vector<int64_t>& dims, int64_t correction = 1,
           bool keepdim = false);
Tensor max(const Tensor& x);  // over all elements
Tensor min(const Tensor& x);
struct ValuesIndices {
  Tensor values;
  Tensor indices;  // i64
};
ValuesIndices max(const Tensor& x, int64_t dim, bool keepdim = false);
ValuesIndices min(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor argmax(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor argmin(const Tensor& x, int64_t dim, bool keepdim = false);

// The vector p-norm over `dims` (all of x's when empty), as torch.linalg.vector_norm: the sum of
// |x|^p to the power 1/p, and for p = infinity the largest |x|. p = 2 over a matrix's two dims is its
// Frobenius norm (torch.linalg.matrix_norm(x, "fro"); frobenius_norm below). Differentiable; where
// the norm is zero its gradient is zero, as PyTorch's. ValueError for p <= 0 or NaN, or an integer x.
Tensor norm(const Tensor& x, double p = 2, const std::vector<int64_t>& dims = {}, bool keepdim = false);
// The Frobenius norm of each matrix in x's last two dims.
Tensor frobenius_norm(const Tensor& x, bool keepdim = false);

}  // namespace strata::ops
