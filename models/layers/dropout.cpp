#include "strata/models/layers/dropout.h"

#include "strata/ops/nn.h"

namespace strata::nn {

Dropout::Dropout(double p) : p_(p) {
  STRATA_CHECK(p >= 0.0 && p <= 1.0, ValueError, "Dropout: probability must be in [0, 1], got ", p);
}

Tensor Dropout::forward(const Tensor& x) { return ops::dropout(x, p_, is_training()); }

}  // namespace strata::nn
