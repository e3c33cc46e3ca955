// Linear: y = x W^T + b with PyTorch's layout (weight [out, in]) and default init.
#pragma once

#include <cstdint>

#include "strata/nn/module.h"
#include "strata/ops/autocast.h"

namespace strata::nn {

struct LinearOptions {
  LinearOptions(int64_t in_features, int64_t out_features)
      : in_features_(in_features), out_features_(out_features) {}
  LinearOptions& bias(bool b) { bias_ = b; return *this; }
  LinearOptions& dtype(DType d) { dtype_ = d; return *this; }
  int64_t in_features() const { return in_features_; }
  int64_t out_features() const { return out_features_; }
  bool bias() const { return bias_; }
  DType dtype() const { return dtype_; }

 private:
  int64_t in_features_;
  int64_t out_features_;
  bool bias_ = true;
  DType dtype_ = DType::f32;
};

class Linear : public Module {
 public:
  explicit Linear(const LinearOptions& options);
  Linear(int64_t in_features, int64_t out_features) : Linear(LinearOptions(in_features, out_features)) {}
  // x [..., in] -> [..., out].
  Tensor forward(const Tensor& x) override;
  // The same; under autocast the result is bf16 with AutocastResult::Narrow (ops/autocast.h), for
  // a consumer that takes 16-bit input (attention, GELU).
  Tensor forward(const Tensor& x, ops::AutocastResult result);
  // torch.nn.Linear.reset_parameters: kaiming_uniform_(a=sqrt(5)) on the weight, which is
  // U(-1/sqrt(in), 1/sqrt(in)), then the bias from the same range; from the current Generator.
  void reset_parameters();
  const LinearOptions& options() const { return options_; }

  Tensor weight;  // [out, in]
  Tensor bias;    // [out], undefined with bias(false)

 private:
  LinearOptions options_;
};

}  // namespace strata::nn
