// Engine: runs backward over the graph in dependency order and accumulates gradients.
#pragma once

#include <vector>

#include "strata/core/tensor.h"

namespace strata::autograd {

// Backward from `roots` with seed gradients `grads` (undefined = ones for one-element roots).
// Without retain_graph the saved tensors of every node run are released.
void backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grads = {},
              bool retain_graph = false);

// Gradients of `outputs` with respect to `inputs` (returned, not accumulated into .grad()).
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs = {}, bool retain_graph = false,
                         bool allow_unused = false);

}  // namespace strata::autograd
