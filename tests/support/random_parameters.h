// random_parameters: leaf tensors that require grad and count as parameters (the planner's and the
// cache's model state), for steps built by hand in tests.
#pragma once

#include <vector>

#include "strata/ops.h"

namespace strata::testing {

// `n` tensors of `shape`, N(0, scale^2) from the current Generator.
inline std::vector<Tensor> random_parameters(int n, const Shape& shape, double scale) {
  std::vector<Tensor> w;
  for (int i = 0; i < n; ++i) {
    Tensor p = ops::mul(ops::randn(shape), scale);
    p.set_requires_grad(true);
    p.set_is_parameter(true);
    w.push_back(p);
  }
  return w;
}

}  // namespace strata::testing
