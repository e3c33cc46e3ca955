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

}  // namespace strata::ops
