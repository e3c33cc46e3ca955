#include "strata/models/layers/pooling.h"

namespace strata::nn {

Tensor MaxPool2d::forward(const Tensor& x) {
  const auto& o = options_;
  return ops::max_pool2d(x, o.kernel_, o.stride_, o.padding_, o.dilation_, o.ceil_mode_);
}

Tensor AvgPool2d::forward(const Tensor& x) {
  const auto& o = options_;
  return ops::avg_pool2d(x, o.kernel_, o.stride_, o.padding_, o.ceil_mode_, o.count_include_pad_);
}

Tensor AdaptiveAvgPool2d::forward(const Tensor& x) { return ops::adaptive_avg_pool2d(x, output_size_); }

}  // namespace strata::nn
