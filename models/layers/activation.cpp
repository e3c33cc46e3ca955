#include "strata/models/layers/activation.h"

#include "strata/ops/elementwise.h"

namespace strata::nn {

GELU::GELU(std::string approximate) : approximate_(std::move(approximate)) {
  STRATA_CHECK(approximate_ == "none" || approximate_ == "tanh", ValueError,
               "GELU: approximate must be 'none' or 'tanh', got '", approximate_, "'");
}

Tensor GELU::forward(const Tensor& x) { return ops::gelu(x, approximate_); }

Tensor ReLU::forward(const Tensor& x) { return ops::relu(x); }

Tensor Tanh::forward(const Tensor& x) { return ops::tanh(x); }

}  // namespace strata::nn
