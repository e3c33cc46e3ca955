// Differentiable matrix products: matmul (NumPy/PyTorch broadcasting), bmm, linear.
#pragma once

#include "strata/core/tensor.h"

namespace strata::ops {

// torch.matmul semantics: 1-D operands are promoted, batch dims broadcast.
Tensor matmul(const Tensor& a, const Tensor& b);
Tensor bmm(const Tensor& a, const Tensor& b);  // [B, M, K] @ [B, K, N]
// x @ weight^T + bias, weight in PyTorch's Linear layout [out, in]; bias may be undefined.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());

}  // namespace strata::ops
