// Differentiable elementwise ops with NumPy broadcasting and dtype promotion.
#pragma once

#include <string>

#include "strata/core/tensor.h"

namespace strata::ops {

Tensor add(const Tensor& a, const Tensor& b, double alpha = 1.0);  // a + alpha * b
Tensor sub(const Tensor& a, const Tensor& b, double alpha = 1.0);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, const Tensor& b);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
Tensor add(const Tensor& a, double b);
Tensor mul(const Tensor& a, double b);
Tensor pow(const Tensor& a, double exponent);
Tensor pow(double base, const Tensor& exponent);

Tensor neg(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor relu(const Tensor& x);
// approximate: "none" (exact, erf) or "tanh", as torch.nn.functional.gelu.
Tensor gelu(const Tensor& x, const std::string& approximate = "none");
Tensor silu(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor sign(const Tensor& x);
Tensor square(const Tensor& x);
Tensor reciprocal(const Tensor& x);
Tensor sin(const Tensor& x);
Tensor cos(const Tensor& x);
Tensor clamp(const Tensor& x, double min, double max);

// Comparisons return bool tensors and are not differentiable.
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, double b);
Tensor gt(const Tensor& a, double b);
Tensor lt(const Tensor& a, double b);

// cond ? a : b (cond is bool; all three broadcast).
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
// x with `value` where mask is true.
Tensor masked_fill(const Tensor& x, const Tensor& mask, double value);

// In-place (not differentiable; bump the version): x += alpha * y, x *= s.
void add_(Tensor& x, const Tensor& y, double alpha = 1.0);
void mul_(Tensor& x, double s);

}  // namespace strata::ops
