// scaled_dot_product_attention: fused, memory linear in sequence length, with its own backward.
#pragma once

#include <limits>

#include "strata/core/tensor.h"

namespace strata::ops {

// softmax(q k^T * scale + mask) v over the last two dims, as torch's F.scaled_dot_product_attention.
// q [..., T, D], k [..., S, D], v [..., S, Dv] with the same batch dims (1 or 2 of them);
// attn_mask broadcastable to [..., T, S]: bool (true = attend) or additive float;
// is_causal: query t attends keys s <= t. scale defaults to 1/sqrt(D).
// Saves q, k, v, the output and the row log-sum-exp (never the T x S probabilities).
// Dropout inside attention is not supported (dropout_p must be 0).
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const Tensor& attn_mask = Tensor(), double dropout_p = 0.0,
                                    bool is_causal = false,
                                    double scale = std::numeric_limits<double>::quiet_NaN());

}  // namespace strata::ops
