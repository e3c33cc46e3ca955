#include "strata/models/layers/linear.h"

#include <cmath>

#include "strata/autograd/grad_mode.h"
#include "strata/core/memory_stats.h"
#include "strata/ops/factory.h"
#include "strata/ops/linalg.h"

namespace strata::nn {

Linear::Linear(const LinearOptions& options) : options_(options) {
  STRATA_CHECK(options.in_features() >= 0 && options.out_features() >= 0, ValueError,
               "Linear: in_features and out_features must be non-negative, got ", options.in_features(),
               " and ", options.out_features());
  STRATA_CHECK(is_floating(options.dtype()), TypeError, "Linear: dtype must be floating, got ",
               dtype_name(options.dtype()));
  MemoryCategoryGuard category(MemoryCategory::Parameter);
  weight = register_parameter(
      "weight", Tensor::empty({options.out_features(), options.in_features()}, options.dtype()));
  if (options.bias()) bias = register_parameter("bias", Tensor::empty({options.out_features()}, options.dtype()));
  reset_parameters();
}

void Linear::reset_parameters() {
  NoGradGuard no_grad;
  const int64_t fan_in = options_.in_features();
  // kaiming_uniform_(a=sqrt(5)): gain = sqrt(2 / (1 + 5)), bound = gain * sqrt(3 / fan_in) = 1 / sqrt(fan_in).
  const double bound = fan_in > 0 ? 1.0 / std::sqrt(double(fan_in)) : 0.0;
  ops::uniform_(weight, -bound, bound);
  if (bias.defined()) ops::uniform_(bias, -bound, bound);
}

Tensor Linear::forward(const Tensor& x) { return ops::linear(x, weight, bias); }
Tensor Linear::forward(const Tensor& x, ops::AutocastResult result) {
  ModuleScope scope(*this);  // as operator() opens it for forward(x)
  return ops::linear(x, weight, bias, result);
}

}  // namespace strata::nn
