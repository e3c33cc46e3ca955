// Dropout: inverted dropout with probability p while training, identity in eval mode.
#pragma once

#include "strata/nn/module.h"

namespace strata::nn {

class Dropout : public Module {
 public:
  // Throws ValueError unless 0 <= p <= 1.
  explicit Dropout(double p = 0.5);
  Tensor forward(const Tensor& x) override;
  double p() const { return p_; }

 private:
  double p_;
};

}  // namespace strata::nn
