// Parameter-free activation modules: GELU, ReLU, Tanh.
#pragma once

#include <string>

#include "strata/nn/module.h"

namespace strata::nn {

class GELU : public Module {
 public:
  // approximate: "none" (erf) or "tanh", as torch.nn.GELU.
  explicit GELU(std::string approximate = "none");
  Tensor forward(const Tensor& x) override;
  const std::string& approximate() const { return approximate_; }

 private:
  std::string approximate_;
};

class ReLU : public Module {
 public:
  Tensor forward(const Tensor& x) override;
};

class Tanh : public Module {
 public:
  Tensor forward(const Tensor& x) override;
};

}  // namespace strata::nn
