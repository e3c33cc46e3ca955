// Differentiable collectives (torch.distributed.nn.functional): collectives inside a model's
// forward whose backward runs the matching collective on the gradients.
#pragma once

#include <memory>

#include "strata/core/tensor.h"
#include "strata/dist/process_group.h"

namespace strata::dist {

// The sum over ranks of `t`, as a new tensor (`t` is left as it is). Its backward sums the
// incoming gradients over ranks: when each rank's loss uses the sum, the gradient of the sum of
// the ranks' losses reaches every rank's `t`. Every rank must call it, forward and backward, in
// the same order as its other collectives; it waits for the result on the calling thread.
Tensor all_reduce_sum(const Tensor& t, const std::shared_ptr<ProcessGroup>& group);

}  // namespace strata::dist
