// Differentiable matrix products: matmul (NumPy/PyTorch broadcasting), bmm, linear.
#pragma once

#include "strata/core/tensor.h"
#include "strata/ops/autocast.h"

namespace strata::ops {

// torch.matmul semantics: 1-D operands are promoted, batch dims broadcast.
Tensor matmul(const Tensor& a, const Tensor& b);
Tensor bmm(const Tensor& a, const Tensor& b);  // [B, M, K] @ [B, K, N]
// x @ weight^T + bias, weight in PyTorch's Linear layout [out, in]; bias may be undefined. Under
// autocast the result is f32, or bf16 with AutocastResult::Narrow (see autocast.h).
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(),
              AutocastResult result = AutocastResult::Wide);

}  // namespace strata::ops
