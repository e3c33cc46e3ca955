// AutocastGuard: mixed precision for the GEMM-heavy ops on this thread, as torch.autocast.
//
//   {
//     ops::AutocastGuard amp(DType::bf16);
//     Tensor loss = model.loss(x, y);   // linear / LM-head GEMMs multiply bf16 operands
//   }
//   loss.backward();                    // their backward GEMMs do too
//
// Inside the guard linear and linear_cross_entropy round their f32 operands to bf16 and multiply
// them with a bf16 GEMM that accumulates and returns f32: oneDNN's (AVX512-BF16) on the CPU and
// the sim device, cuBLASLt's (bf16 Tensor Cores, CUBLAS_COMPUTE_32F) on CUDA. On CUDA
// scaled_dot_product_attention also runs in bf16 (the fused Tensor Core kernels, f32 softmax
// statistics), as torch.autocast runs SDPA.
// Everything else stays f32: parameters (the master weights), gradients, optimizer state,
// activations (but a linear's result taken Narrow, below, and what is computed from it), layer norm, softmax,
// attention on the host and the loss reductions. A node records whether it ran under autocast, so its
// backward GEMMs use the same precision wherever backward runs. On the host without oneDNN, and on the Meta
// device, the guard changes nothing.
#pragma once

#include "strata/core/device.h"
#include "strata/core/dtype.h"

namespace strata::ops {

class AutocastGuard {
 public:
  explicit AutocastGuard(DType dtype = DType::bf16, bool enabled = true);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  bool prev_enabled_;
  DType prev_dtype_;
};

// Whether autocast is on for this thread, and its GEMM dtype (bf16).
bool autocast_enabled();
DType autocast_dtype();
// Whether autocast changes an op of promoted dtype `dt` on `dev`: it is on, dt is f32, and the
// device multiplies 16-bit operands (CUDA, or the host and sim with oneDNN; not Meta).
bool autocast_applies(Device dev, DType dt);

// What linear returns under autocast: f32 (Wide, the default), or the GEMM's own 16-bit result
// (Narrow, as torch.autocast's linear returns it, its bias rounded to bf16 too) for a consumer
// that takes 16-bit input: GELU, attention, another linear (layer_norm takes it too, for a
// linear that is its only consumer). Narrow writes half the bytes, spares
// the consumer's cast, and its gradient comes back in bf16. Outside autocast both are the same.
enum class AutocastResult { Wide, Narrow };

}  // namespace strata::ops
