// clip_grad_norm_: scales gradients so their global norm is at most max_norm
// (torch.nn.utils.clip_grad_norm_).
#pragma once

#include <vector>

#include "strata/core/tensor.h"

namespace strata::optim {

// The norm of all gradients of `params` taken together (parameters without a gradient are
// skipped; norm_type 2 by default, any p > 0 or infinity). When it exceeds max_norm, every
// gradient is multiplied by max_norm / (total_norm + 1e-6), as PyTorch does. Returns the
// total norm before clipping. Sums run in double in a fixed order (same bits for any thread
// count). CPU f32/f64 gradients only.
double clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type = 2.0);

}  // namespace strata::optim
