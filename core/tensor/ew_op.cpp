#include "strata/core/backend.h"

namespace strata {

const char* ew_op_name(EwOp op) {
  static const char* names[] = {
      "copy", "neg", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "relu", "gelu_erf",
      "gelu_tanh", "silu", "abs", "sign", "reciprocal", "square", "sin", "cos", "add_scalar",
      "mul_scalar", "pow_scalar", "rpow_scalar", "clamp", "add", "sub", "mul", "div", "pow",
      "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge", "tanh_backward",
      "sigmoid_backward", "relu_backward", "gelu_erf_backward", "gelu_tanh_backward",
      "silu_backward", "clamp_backward", "where"};
  static_assert(sizeof(names) / sizeof(names[0]) == size_t(EwOp::kCount));
  return names[size_t(op)];
}

int ew_op_arity(EwOp op) {
  if (op == EwOp::Where) return 3;
  if (op >= EwOp::Add) return 2;
  return 1;
}

}  // namespace strata
