// LayerNorm over the trailing normalized_shape dims, with optional affine weight and bias.
#pragma once

#include <utility>

#include "strata/nn/module.h"
#include "strata/ops/autocast.h"

namespace strata::nn {

struct LayerNormOptions {
  explicit LayerNormOptions(Shape normalized_shape) : normalized_shape_(std::move(normalized_shape)) {}
  LayerNormOptions& eps(double e) { eps_ = e; return *this; }
  LayerNormOptions& elementwise_affine(bool a) { elementwise_affine_ = a; return *this; }
  LayerNormOptions& bias(bool b) { bias_ = b; return *this; }
  LayerNormOptions& dtype(DType d) { dtype_ = d; return *this; }
  const Shape& normalized_shape() const { return normalized_shape_; }
  double eps() const { return eps_; }
  bool elementwise_affine() const { return elementwise_affine_; }
  bool bias() const { return bias_; }
  DType dtype() const { return dtype_; }

 private:
  Shape normalized_shape_;
  double eps_ = 1e-5;
  bool elementwise_affine_ = true;
  bool bias_ = true;
  DType dtype_ = DType::f32;
};

class LayerNorm : public Module {
 public:
  explicit LayerNorm(const LayerNormOptions& options);
  explicit LayerNorm(int64_t normalized_size) : LayerNorm(LayerNormOptions({normalized_size})) {}
  Tensor forward(const Tensor& x) override;
  // The same; under autocast the result is bf16 with AutocastResult::Narrow (ops/nn.h), for a
  // linear that is its only consumer.
  Tensor forward(const Tensor& x, ops::AutocastResult result);
  // weight = 1, bias = 0 (torch.nn.LayerNorm.reset_parameters).
  void reset_parameters();
  const LayerNormOptions& options() const { return options_; }

  Tensor weight;  // normalized_shape; undefined without elementwise_affine
  Tensor bias;    // normalized_shape; undefined without elementwise_affine or bias

 private:
  LayerNormOptions options_;
};

}  // namespace strata::nn
