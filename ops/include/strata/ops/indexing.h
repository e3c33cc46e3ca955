// Differentiable indexing ops: index_select, gather, scatter_add, index_add.
#pragma once

#include "strata/core/tensor.h"

namespace strata::ops {

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);  // index: 1-D i64
// out[..., j, ...] = x[..., index[..., j, ...], ...] along dim; index has x's shape except at dim.
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);
// x with src added at index along dim (out-of-place).
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
// x with src's slices added at index along dim (out-of-place); index: 1-D i64.
Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);

}  // namespace strata::ops
