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

// Self-attention on a packed projection, as GPT's c_attn produces it: qkv [B, T, 3C] holds
// q | k | v along the last dim, each [B, T, n_head, C / n_head]. Returns [B, T, C] with the heads
// merged. Equal to splitting qkv, viewing each part as [B, n_head, T, hs], running
// scaled_dot_product_attention and merging the heads back, but on the CPU without a copy either
// way: the kernel reads the heads where they are, writes the output in [B, T, C], and backward
// writes dq, dk, dv straight into one [B, T, 3C] gradient. Saves qkv, the output and the lse.
Tensor packed_self_attention(const Tensor& qkv, int64_t n_head, bool is_causal = true,
                             double scale = std::numeric_limits<double>::quiet_NaN());
// The same with attn_mask broadcastable to [B, n_head, T, T], bool (true = attend) or additive
// float, as scaled_dot_product_attention takes it: e.g. BERT's key-padding mask [B, 1, 1, T],
// read in place, never expanded. The mask gets no gradient. Also saves the mask.
Tensor packed_self_attention(const Tensor& qkv, int64_t n_head, const Tensor& attn_mask, bool is_causal = false,
                             double scale = std::numeric_limits<double>::quiet_NaN());

}  // namespace strata::ops
