// cuDNN's fused attention (the frontend's SDPA graphs) for bf16/f16 heads without a mask: the first
// path CudaBackend::attention and attention_backward try for 16-bit inputs.
#pragma once

#include "strata/core/tensor.h"

namespace strata::gpu {

class CudaBackend;

// Whether this build carries cuDNN's frontend (tools/setup.sh fetches its headers).
bool cudnn_attention_built();

// As Backend::attention for 16-bit [B, H, T, D] q, k, v with unit stride along D, no mask, causal
// (s <= t) or full: out in their dtype, lse f32 contiguous [B, H, T]. Returns false, having written
// nothing, where cuDNN has no engine for the problem (an unaligned view, a head dim it does not take,
// an older GPU or cuDNN) or the build has no frontend; the caller then runs another path.
bool cudnn_attention_forward(CudaBackend& be, const Tensor& out, const Tensor& lse, const Tensor& q,
                             const Tensor& k, const Tensor& v, bool causal, double scale);

// As Backend::attention_backward for the same problems, with cuDNN's deterministic algorithm (the
// same bits every run); an undefined gradient is computed into a scratch tensor and dropped.
bool cudnn_attention_backward(CudaBackend& be, const Tensor& dq, const Tensor& dk, const Tensor& dv,
                              const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v,
                              const Tensor& out, const Tensor& lse, bool causal, double scale);

}  // namespace strata::gpu
