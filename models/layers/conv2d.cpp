#include "strata/models/layers/conv2d.h"

#include <cmath>

#include "strata/autograd/grad_mode.h"
#include "strata/core/memory_stats.h"
#include "strata/ops/factory.h"

namespace strata::nn {

Conv2d::Conv2d(const Conv2dOptions& o) : options_(o) {
  STRATA_CHECK(o.in_channels() > 0 && o.out_channels() > 0 && o.groups() > 0 &&
                   o.in_channels() % o.groups() == 0 && o.out_channels() % o.groups() == 0,
               ValueError, "Conv2d: in_channels (", o.in_channels(), ") and out_channels (", o.out_channels(),
               ") must be positive and divisible by groups (", o.groups(), ")");
  STRATA_CHECK(o.kernel_size()[0] > 0 && o.kernel_size()[1] > 0, ValueError, "Conv2d: kernel_size must be positive, got (",
               o.kernel_size()[0], ", ", o.kernel_size()[1], ")");
  STRATA_CHECK(is_floating(o.dtype()), TypeError, "Conv2d: dtype must be floating, got ", dtype_name(o.dtype()));
  MemoryCategoryGuard category(MemoryCategory::Parameter);
  weight = register_parameter("weight", Tensor::empty({o.out_channels(), o.in_channels() / o.groups(),
                                                       o.kernel_size()[0], o.kernel_size()[1]},
                                                      o.dtype()));
  if (o.bias()) bias = register_parameter("bias", Tensor::empty({o.out_channels()}, o.dtype()));
  reset_parameters();
}

void Conv2d::reset_parameters() {
  NoGradGuard no_grad;
  const int64_t fan_in = options_.in_channels() / options_.groups() * options_.kernel_size()[0] * options_.kernel_size()[1];
  const double bound = 1.0 / std::sqrt(double(fan_in));
  ops::uniform_(weight, -bound, bound);
  if (bias.defined()) ops::uniform_(bias, -bound, bound);
}

Tensor Conv2d::forward(const Tensor& x) {
  return ops::conv2d(x, weight, bias, options_.stride(), options_.padding(), options_.dilation(), options_.groups());
}

}  // namespace strata::nn
