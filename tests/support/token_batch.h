// token_batch: a deterministic byte-level (vocabulary 256) input and target batch for the GPT
// steps that tests build by hand.
#pragma once

#include <cstdint>
#include <utility>

#include "strata/strata.h"

namespace strata::testing {

// Position i of the flattened [B, T] batch: input (i * x_mul + x_add) % 256, target
// (i * y_mul + y_add) % 256.
struct TokenPattern {
  int64_t x_mul = 31, x_add = 0, y_mul = 17, y_add = 1;
};

inline std::pair<Tensor, Tensor> token_batch(int64_t B, int64_t T, TokenPattern p = {}) {
  Tensor x = Tensor::empty({B, T}, DType::i64), y = Tensor::empty({B, T}, DType::i64);
  for (int64_t i = 0; i < B * T; ++i) {
    x.data<int64_t>()[i] = (i * p.x_mul + p.x_add) % 256;
    y.data<int64_t>()[i] = (i * p.y_mul + p.y_add) % 256;
  }
  return {x, y};
}

}  // namespace strata::testing
