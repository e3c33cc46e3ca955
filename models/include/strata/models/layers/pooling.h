// MaxPool2d, AvgPool2d and AdaptiveAvgPool2d over NCHW tensors, as torch.nn's (no parameters).
#pragma once

#include "strata/nn/module.h"
#include "strata/ops/conv.h"

namespace strata::nn {

struct MaxPool2dOptions {
  explicit MaxPool2dOptions(ops::Size2 kernel_size) : kernel_(kernel_size) {}
  explicit MaxPool2dOptions(int64_t kernel_size) : kernel_{kernel_size, kernel_size} {}
  MaxPool2dOptions& stride(ops::Size2 s) { stride_ = s; return *this; }  // default: the kernel
  MaxPool2dOptions& stride(int64_t s) { return stride({s, s}); }
  MaxPool2dOptions& padding(ops::Size2 p) { padding_ = p; return *this; }
  MaxPool2dOptions& padding(int64_t p) { return padding({p, p}); }
  MaxPool2dOptions& dilation(ops::Size2 d) { dilation_ = d; return *this; }
  MaxPool2dOptions& ceil_mode(bool c) { ceil_mode_ = c; return *this; }
  ops::Size2 kernel_, stride_{0, 0}, padding_{0, 0}, dilation_{1, 1};
  bool ceil_mode_ = false;
};

class MaxPool2d : public Module {
 public:
  explicit MaxPool2d(const MaxPool2dOptions& options) : options_(options) {}
  Tensor forward(const Tensor& x) override;
  const MaxPool2dOptions& options() const { return options_; }

 private:
  MaxPool2dOptions options_;
};

struct AvgPool2dOptions {
  explicit AvgPool2dOptions(ops::Size2 kernel_size) : kernel_(kernel_size) {}
  explicit AvgPool2dOptions(int64_t kernel_size) : kernel_{kernel_size, kernel_size} {}
  AvgPool2dOptions& stride(ops::Size2 s) { stride_ = s; return *this; }  // default: the kernel
  AvgPool2dOptions& stride(int64_t s) { return stride({s, s}); }
  AvgPool2dOptions& padding(ops::Size2 p) { padding_ = p; return *this; }
  AvgPool2dOptions& padding(int64_t p) { return padding({p, p}); }
  AvgPool2dOptions& ceil_mode(bool c) { ceil_mode_ = c; return *this; }
  AvgPool2dOptions& count_include_pad(bool c) { count_include_pad_ = c; return *this; }
  ops::Size2 kernel_, stride_{0, 0}, padding_{0, 0};
  bool ceil_mode_ = false, count_include_pad_ = true;
};

class AvgPool2d : public Module {
 public:
  explicit AvgPool2d(const AvgPool2dOptions& options) : options_(options) {}
  Tensor forward(const Tensor& x) override;
  const AvgPool2dOptions& options() const { return options_; }

 private:
  AvgPool2dOptions options_;
};

class AdaptiveAvgPool2d : public Module {
 public:
  explicit AdaptiveAvgPool2d(ops::Size2 output_size) : output_size_(output_size) {}
  explicit AdaptiveAvgPool2d(int64_t output_size) : output_size_{output_size, output_size} {}
  Tensor forward(const Tensor& x) override;
  ops::Size2 output_size() const { return output_size_; }

 private:
  ops::Size2 output_size_;
};

}  // namespace strata::nn
