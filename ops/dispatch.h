// Internal helpers every op uses: backend lookup (registering the built-in backends once),
// cost reporting, argument checks, and raw (non-differentiable) views.
#pragma once

#include <initializer_list>

#include "strata/core/backend.h"
#include "strata/core/op_observer.h"
#include "strata/core/tensor.h"

namespace strata::ops::detail {

// The backend for `d`; registers CPU, Sim, Meta and (when compiled) CUDA on first use.
Backend& kernels(Device d);
void register_builtin_backends();

// Reports an op to the current OpObserver, if any.
void record(const char* op, Device device, double flops, double bytes_read, double bytes_written);

// All defined tensors must be on one device; returns it.
Device common_device(const char* op, std::initializer_list<const Tensor*> ts);
void check_defined(const char* op, const Tensor& t, const char* what);

// Allocates an output on `device` (category from MemoryCategoryGuard).
inline Tensor alloc(const Shape& shape, DType dtype, Device device) {
  kernels(device);
  return Tensor::empty(shape, dtype, device);
}

// Views without autograd (the differentiable versions live in shape_ops).
Tensor raw_view(const Tensor& x, Shape shape, Shape strides, int64_t offset);
Tensor raw_expand(const Tensor& x, const Shape& shape);
Tensor raw_contiguous(const Tensor& x);
Tensor raw_cast(const Tensor& x, DType dtype);  // contiguous copy in dtype (or x itself)
// Reshape without autograd: a view when strides allow, else a contiguous copy.
Tensor raw_reshape(const Tensor& x, const Shape& shape);
// Strides for viewing `x` as `shape`, if possible without a copy.
bool view_strides(const Tensor& x, const Shape& shape, Shape* strides);
// Resolves a -1 in `shape` against numel; throws ShapeError naming `op`.
Shape infer_shape(const Shape& shape, int64_t numel, const char* op);

}  // namespace strata::ops::detail
