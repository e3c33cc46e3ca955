// Launchers of cuda_norm_pool.cu used by cuda_cudnn.cpp: the batch-norm pieces cuDNN does not
// cover (statistics written in inference, the eval-mode backward).
#pragma once

#include <initializer_list>

#include "strata/core/tensor.h"

namespace strata::gpu {

// Every defined tensor contiguous with dtype `dt`, and `dt` f32 or f64; TypeError naming `op`.
void check_nchw_kernel_inputs(const char* op, std::initializer_list<const Tensor*> ts, DType dt);

// mean = running_mean, invstd = 1 / sqrt(running_var + eps)   ([C], f32 or f64)
void launch_bn_eval_stats(const Tensor& mean, const Tensor& invstd, const Tensor& running_mean,
                          const Tensor& running_var, double eps);
// With fixed statistics: grad_x = grad_out * weight * invstd, grad_weight = sum(grad_out * xhat),
// grad_bias = sum(grad_out) per channel (each may be undefined; weight undefined = 1).
void launch_bn_eval_backward(const Tensor& grad_x, const Tensor& grad_weight, const Tensor& grad_bias,
                             const Tensor& grad_out, const Tensor& x, const Tensor& weight, const Tensor& mean,
                             const Tensor& invstd);

}  // namespace strata::gpu
