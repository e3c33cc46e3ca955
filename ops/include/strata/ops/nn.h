// Differentiable neural-network ops: softmax, cross_entropy, layer_norm, embedding, dropout.
#pragma once

#include <string>

#include "strata/core/tensor.h"
#include "strata/ops/autocast.h"

namespace strata::ops {

Tensor softmax(const Tensor& x, int64_t dim = -1);
Tensor log_softmax(const Tensor& x, int64_t dim = -1);

enum class Reduction { None, Mean, Sum };
// Fused, stable softmax cross-entropy: logits [N, C] (or [..., C]), target i64 [N] (or [...]).
// Mean is over targets that are not ignore_index (as PyTorch).
Tensor cross_entropy(const Tensor& logits, const Tensor& target, int64_t ignore_index = -100,
                     Reduction reduction = Reduction::Mean);
// The LM head and cross-entropy fused: loss of (x @ weight^T) against target without ever
// holding the [N, V] logits: rows are processed in chunks of about `chunk_bytes` of logits. When
// gradients are wanted, forward also forms dx and dweight chunk by chunk and saves those (for a
// unit output gradient; backward scales them), so nothing is recomputed. chunk_bytes 0 is the
// device's default: 128 MiB on the host (~650 rows of a 50304-word vocabulary: few
// read-modify-write passes over dweight, GEMMs with enough rows); on CUDA a 64th of the
// device's memory, clamped to [128 MiB, 1 GiB] (~5,300 rows on an 80 GB card: fewer, fuller
// GEMMs and fewer launches). x: [..., C], weight: [V, C], target: i64 [...].
// Reduction Mean or Sum only.
Tensor linear_cross_entropy(const Tensor& x, const Tensor& weight, const Tensor& target,
                            int64_t ignore_index = -100, Reduction reduction = Reduction::Mean,
                            int64_t chunk_bytes = 0);
// The same with a bias [V] added to every row's logits (BERT's MLM decoder); bias gets a gradient.
Tensor linear_cross_entropy(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& target,
                            int64_t ignore_index = -100, Reduction reduction = Reduction::Mean,
                            int64_t chunk_bytes = 0);
// Normalizes over the trailing dims of `normalized_shape`; weight and bias may be undefined.
// Under autocast an f32 result taken AutocastResult::Narrow is bf16 (the f32 result rounded once;
// CUDA writes it so directly), for a linear that is its only consumer: the linear's cast and its
// f32 copy go, and the gradient comes back in bf16 (as torch.autocast's cast returns it).
Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = Tensor(),
                  const Tensor& bias = Tensor(), double eps = 1e-5,
                  AutocastResult result = AutocastResult::Wide);
// Rows of weight [V, C] picked by i64 indices of any shape: result [..., C].
Tensor embedding(const Tensor& weight, const Tensor& indices);
// Inverted dropout from the current Generator; the mask is not saved: backward regenerates it
// from the recorded (seed, offset), bit for bit.
Tensor dropout(const Tensor& x, double p, bool training = true);

}  // namespace strata::ops
