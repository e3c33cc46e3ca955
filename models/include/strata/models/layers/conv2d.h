// Conv2d: 2-D convolution over NCHW with PyTorch's layout (weight [out, in / groups, kH, kW]),
// options and default init.
#pragma once

#include <cstdint>

#include "strata/nn/module.h"
#include "strata/ops/conv.h"

namespace strata::nn {

struct Conv2dOptions {
  Conv2dOptions(int64_t in_channels, int64_t out_channels, ops::Size2 kernel_size)
      : in_(in_channels), out_(out_channels), kernel_(kernel_size) {}
  Conv2dOptions(int64_t in_channels, int64_t out_channels, int64_t kernel_size)
      : Conv2dOptions(in_channels, out_channels, ops::Size2{kernel_size, kernel_size}) {}
  Conv2dOptions& stride(ops::Size2 s) { stride_ = s; return *this; }
  Conv2dOptions& stride(int64_t s) { return stride({s, s}); }
  Conv2dOptions& padding(ops::Size2 p) { padding_ = p; return *this; }
  Conv2dOptions& padding(int64_t p) { return padding({p, p}); }
  Conv2dOptions& dilation(ops::Size2 d) { dilation_ = d; return *this; }
  Conv2dOptions& dilation(int64_t d) { return dilation({d, d}); }
  Conv2dOptions& groups(int64_t g) { groups_ = g; return *this; }
  Conv2dOptions& bias(bool b) { bias_ = b; return *this; }
  Conv2dOptions& dtype(DType d) { dtype_ = d; return *this; }
  int64_t in_channels() const { return in_; }
  int64_t out_channels() const { return out_; }
  ops::Size2 kernel_size() const { return kernel_; }
  ops::Size2 stride() const { return stride_; }
  ops::Size2 padding() const { return padding_; }
  ops::Size2 dilation() const { return dilation_; }
  int64_t groups() const { return groups_; }
  bool bias() const { return bias_; }
  DType dtype() const { return dtype_; }

 private:
  int64_t in_, out_;
  ops::Size2 kernel_;
  ops::Size2 stride_{1, 1}, padding_{0, 0}, dilation_{1, 1};
  int64_t groups_ = 1;
  bool bias_ = true;
  DType dtype_ = DType::f32;
};

class Conv2d : public Module {
 public:
  explicit Conv2d(const Conv2dOptions& options);
  // x [N, in, H, W] -> [N, out, P, Q].
  Tensor forward(const Tensor& x) override;
  // torch.nn.Conv2d.reset_parameters: kaiming_uniform_(a=sqrt(5)) on the weight, i.e.
  // U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with fan_in = in / groups * kH * kW, and the bias from
  // the same range; from the current Generator.
  void reset_parameters();
  const Conv2dOptions& options() const { return options_; }

  Tensor weight;  // [out, in / groups, kH, kW]
  Tensor bias;    // [out], undefined with bias(false)

 private:
  Conv2dOptions options_;
};

}  // namespace strata::nn
