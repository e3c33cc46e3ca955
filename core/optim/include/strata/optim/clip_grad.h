// clip_grad_norm_: scales gradients so their global norm is at most max_norm
// (torch.nn.utils.clip_grad_norm_).
#pragma once

#include <cstdint>
#include <vector>

#include "strata/core/tensor.h"

namespace strata {
class Backend;
}

namespace strata::optim {

// The norm of all gradients of `params` taken together (parameters without a gradient are
// skipped; norm_type 2 by default, any p > 0 or infinity). When it exceeds max_norm, every
// gradient is multiplied by max_norm / (total_norm + 1e-6), as PyTorch does. Returns the
// total norm before clipping. Sums run in double in a fixed order (same bits for any thread
// count). f32/f64 gradients, in host memory or on a device.
double clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type = 2.0);

// The same, returning the total norm as a 1-element f64 tensor, as torch.nn.utils.clip_grad_norm_
// does. On a device (CUDA) nothing waits for it: the norm and the scale stay in device memory and
// every gradient is multiplied by min(1, max_norm / (norm + 1e-6)) there, so a training loop
// synchronizes only when it prints the norm (item()). In host memory it is clip_grad_norm_'s.
Tensor clip_grad_norm_tensor_(const std::vector<Tensor>& params, double max_norm, double norm_type = 2.0);

// For gradients split across holders (ZeRO-2's ranks): clip_grad_norm_ sums |g|^p over blocks of
// kClipBlock elements of each flattened gradient, each block from 0.0 in element order, then the
// blocks in order from 0.0, then the gradients in order. clip_piece_sums gives the sums of the
// pieces of those blocks in a span that starts at element `begin` of its gradient (contiguous, in
// host memory), in order. Folding every holder's pieces as clip_grad_norm_ folds its blocks gives
// its total bit for bit when every span starts on a block boundary.
inline constexpr int64_t kClipBlock = int64_t(1) << 14;
std::vector<double> clip_piece_sums(const Tensor& span, int64_t begin, double norm_type = 2.0);
// Multiplies every gradient by `coef` as clip_grad_norm_ does when it clips (in host memory: each
// element times coef rounded to its dtype; on a device: the backend's scalar multiply).
void scale_gradients_(const std::vector<Tensor>& grads, double coef);

namespace detail {
// clip_grad_norm_tensor_'s device path on any backend (the CPU's too, which is how it is tested):
// the Backend's elementwise kernels and deterministic row reductions, all in `be`'s memory.
Tensor clip_grads_on_backend(Backend& be, const std::vector<Tensor>& grads, double max_norm,
                             double norm_type);
}  // namespace detail

}  // namespace strata::optim
