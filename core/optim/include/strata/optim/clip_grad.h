// clip_grad_norm_: scales gradients so their global norm is at most max_norm
// (torch.nn.utils.clip_grad_norm_).
#pragma once

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

namespace detail {
// clip_grad_norm_tensor_'s device path on any backend (the CPU's too, which is how it is tested):
// the Backend's elementwise kernels and deterministic row reductions, all in `be`'s memory.
Tensor clip_grads_on_backend(Backend& be, const std::vector<Tensor>& grads, double max_norm,
                             double norm_type);
}  // namespace detail

}  // namespace strata::optim
