// Convolution, batch norm and pooling over NCHW tensors, as torch.nn.functional's.
#pragma once

#include <array>
#include <cstdint>

#include "strata/core/tensor.h"

namespace strata::ops {

using Size2 = std::array<int64_t, 2>;  // (height, width)

// x [N, C, H, W], weight [K, C / groups, R, S], bias [K] or undefined -> [N, K, P, Q] with
// P = (H + 2 padding_h - dilation_h (R - 1) - 1) / stride_h + 1 (Q likewise).
// Saves x and weight. On the CPU, f32 runs through oneDNN where built with it, f64 (and any
// problem oneDNN refuses) through Strata's im2col kernels.
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(), Size2 stride = {1, 1},
              Size2 padding = {0, 0}, Size2 dilation = {1, 1}, int64_t groups = 1);

// Batch norm over x [N, C, ...] per channel, as torch.nn.functional.batch_norm. training:
// normalizes with the batch's mean and biased variance and, when running_mean / running_var
// [C] are given, updates them in place (running = (1 - momentum) running + momentum batch, the
// unbiased variance for running_var); not while a recompute segment re-runs its forward
// (autograd::in_recompute()), so a checkpointed block updates them once. Not training:
// normalizes with running_mean / running_var (required). weight / bias [C] may be undefined.
// Saves x, weight and the per-channel mean and 1 / sqrt(var + eps).
Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight = Tensor(), const Tensor& bias = Tensor(), bool training = true,
                  double momentum = 0.1, double eps = 1e-5);

// Max over kernel windows of x [N, C, H, W] (stride defaults to the kernel: pass {0, 0});
// ceil_mode rounds the output size up, as torch. Saves the argmax indices, not x.
Tensor max_pool2d(const Tensor& x, Size2 kernel, Size2 stride = {0, 0}, Size2 padding = {0, 0},
                  Size2 dilation = {1, 1}, bool ceil_mode = false);
// Mean over kernel windows; count_include_pad: padding counts in the divisor. Saves nothing.
Tensor avg_pool2d(const Tensor& x, Size2 kernel, Size2 stride = {0, 0}, Size2 padding = {0, 0},
                  bool ceil_mode = false, bool count_include_pad = true);
// Mean over the windows that split H x W into output_size cells, as torch. Saves nothing.
Tensor adaptive_avg_pool2d(const Tensor& x, Size2 output_size);

}  // namespace strata::ops
