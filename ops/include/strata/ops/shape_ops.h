// Differentiable view and layout ops: reshape, permute, narrow, expand, cat, split, ...
#pragma once

#include <vector>

#include "strata/core/tensor.h"

namespace strata::ops {

Tensor view(const Tensor& x, const Shape& shape);  // one dim may be -1
Tensor reshape(const Tensor& x, const Shape& shape);
Tensor permute(const Tensor& x, const Shape& dims);
Tensor transpose(const Tensor& x, int64_t d0, int64_t d1);
Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length);
Tensor select(const Tensor& x, int64_t dim, int64_t index);
Tensor slice(const Tensor& x, int64_t dim, int64_t start, int64_t end, int64_t step = 1);
Tensor expand(const Tensor& x, const Shape& shape);  // -1 keeps a dim
Tensor unsqueeze(const Tensor& x, int64_t dim);
Tensor squeeze(const Tensor& x, int64_t dim);
Tensor flatten(const Tensor& x, int64_t start_dim = 0, int64_t end_dim = -1);
Tensor contiguous(const Tensor& x);
Tensor clone(const Tensor& x);
Tensor to(const Tensor& x, DType dtype);
Tensor to(const Tensor& x, Device device);
Tensor cat(const std::vector<Tensor>& xs, int64_t dim = 0);
Tensor stack(const std::vector<Tensor>& xs, int64_t dim = 0);
std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim = 0);
std::vector<Tensor> split_with_sizes(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim = 0);
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim = 0);
// Sums `x` down to `shape` (the inverse of broadcasting); differentiable.
Tensor sum_to(const Tensor& x, const Shape& shape);

}  // namespace strata::ops
