// Tensor factories: empty, zeros, ones, full, arange, from_vector, rand, randn, *_like.
//
// Part of core's data model (the layers above ops -- nn, optim, dist -- need them, not ops):
// `strata::zeros(...)` here, and `strata::ops::zeros(...)` through strata/ops/factory.h.
#pragma once

#include <vector>

#include "strata/core/tensor.h"

namespace strata {

// Options for factories, libtorch style: TensorOptions().dtype(DType::f64).device(kCPU).
struct TensorOptions {
  DType dtype_ = DType::f32;
  Device device_ = kCPU;
  bool requires_grad_ = false;
  TensorOptions() = default;
  TensorOptions(DType d) : dtype_(d) {}
  TensorOptions(Device d) : device_(d) {}
  TensorOptions& dtype(DType d) { dtype_ = d; return *this; }
  TensorOptions& device(Device d) { device_ = d; return *this; }
  TensorOptions& requires_grad(bool r) { requires_grad_ = r; return *this; }
};

Tensor empty(const Shape& shape, TensorOptions opts = {});
Tensor zeros(const Shape& shape, TensorOptions opts = {});
Tensor ones(const Shape& shape, TensorOptions opts = {});
Tensor full(const Shape& shape, double value, TensorOptions opts = {});
// [start, end) with `step`; dtype defaults to i64 when not given.
Tensor arange(double start, double end, double step = 1.0, TensorOptions opts = DType::i64);
Tensor arange(int64_t end, TensorOptions opts = DType::i64);
// Copies `values` (row-major) into a new tensor of `shape` (numel must match).
Tensor from_vector(const std::vector<double>& values, const Shape& shape, TensorOptions opts = {});
Tensor from_vector(const std::vector<float>& values, const Shape& shape, TensorOptions opts = {});
Tensor from_vector(const std::vector<int64_t>& values, const Shape& shape, TensorOptions opts = DType::i64);
// A one-element 0-d tensor.
Tensor scalar_tensor(double value, TensorOptions opts = {});
// Uniform [0, 1) and standard normal, from the current Generator (Philox).
Tensor rand(const Shape& shape, TensorOptions opts = {});
Tensor randn(const Shape& shape, TensorOptions opts = {});
Tensor empty_like(const Tensor& t);
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);
Tensor full_like(const Tensor& t, double value);

// In-place initializers (no autograd; bump the version).
void uniform_(Tensor& t, double low, double high);
void normal_(Tensor& t, double mean, double std);

}  // namespace strata
