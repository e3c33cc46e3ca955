// block_chain: a hand-built step of named blocks (matmul, then tanh or GELU, then dropout) that
// the cache, tracer and planner tests run forward and backward.
#pragma once

#include <string>
#include <vector>

#include "strata/strata.h"

namespace strata::testing {

// One block per weight, named b0, b1, ...: even blocks apply tanh, odd ones GELU (tanh form),
// squared where `square_odd_blocks` (a product saves GELU's output, a tensor GELU can make again
// from its own saved input); then dropout 0.1. Returns sum(h * h).
inline Tensor block_chain(const Tensor& x, const std::vector<Tensor>& w, bool square_odd_blocks = false) {
  Tensor h = x;
  for (size_t i = 0; i < w.size(); ++i) {
    autograd::ScopeGuard block(std::string("b").append(std::to_string(i)), /*is_block=*/true);
    h = ops::matmul(h, w[i]);
    h = i % 2 ? ops::gelu(h, "tanh") : ops::tanh(h);
    if (square_odd_blocks && i % 2) h = ops::mul(h, h);
    h = ops::dropout(h, 0.1);
  }
  return ops::sum(ops::mul(h, h));
}

}  // namespace strata::testing
