// Fused attention for 16-bit inputs on Tensor Cores (cuda_fused_attention.cu): the launchers
// CudaBackend::attention and attention_backward call for bf16/f16 q, k, v.
#pragma once

#include "strata/core/tensor.h"

namespace strata::gpu {

class CudaBackend;

// Whether the fused kernels run for this problem on `device`: bf16/f16 inputs, head dims D and Dv
// of at most 128, compute capability 8.0 or newer, and enough shared memory per block.
bool fused_attention_supported(int device, DType dtype, int64_t D, int64_t Dv);

// As Backend::attention for 16-bit q, k, v (out in their dtype, lse f32, mask f32 or undefined).
void fused_attention_forward(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k,
                             const Tensor& v, const Tensor& mask, bool causal, double scale);

// As Backend::attention_backward for 16-bit tensors (lse f32). Deterministic: dK and dV are
// accumulated per key tile and dQ per query tile, each by one warp, without atomics.
void fused_attention_backward(CudaBackend& be, const Tensor& dq, const Tensor& dk, const Tensor& dv,
                              const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v,
                              const Tensor& out, const Tensor& lse, const Tensor& mask, bool causal,
                              double scale);

}  // namespace strata::gpu
