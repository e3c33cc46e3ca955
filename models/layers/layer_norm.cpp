#include "strata/models/layers/layer_norm.h"

#include "strata/autograd/grad_mode.h"
#include "strata/core/memory_stats.h"
#include "strata/ops/nn.h"

namespace strata::nn {

LayerNorm::LayerNorm(const LayerNormOptions& options) : options_(options) {
  STRATA_CHECK(!options.normalized_shape().empty(), ShapeError, "LayerNorm: normalized_shape must not be empty");
  STRATA_CHECK(is_floating(options.dtype()), TypeError, "LayerNorm: dtype must be floating, got ",
               dtype_name(options.dtype()));
  if (options.elementwise_affine()) {
    MemoryCategoryGuard category(MemoryCategory::Parameter);
    weight = register_parameter("weight", Tensor::empty(options.normalized_shape(), options.dtype()));
    if (options.bias()) bias = register_parameter("bias", Tensor::empty(options.normalized_shape(), options.dtype()));
  }
  reset_parameters();
}

void LayerNorm::reset_parameters() {
  NoGradGuard no_grad;
  if (weight.defined()) weight.fill_(1.0);
  if (bias.defined()) bias.zero_();
}

Tensor LayerNorm::forward(const Tensor& x) {
  return ops::layer_norm(x, options_.normalized_shape(), weight, bias, options_.eps());
}
Tensor LayerNorm::forward(const Tensor& x, ops::AutocastResult result) {
  ModuleScope scope(*this);  // as operator() opens it for forward(x)
  return ops::layer_norm(x, options_.normalized_shape(), weight, bias, options_.eps(), result);
}

}  // namespace strata::nn
