// AutocastGuard: mixed precision for the GEMM-heavy ops on this thread, as torch.autocast.
//
//   {
//     ops::AutocastGuard amp(DType::bf16);
//     Tensor loss = model.loss(x, y);   // linear / LM-head GEMMs multiply bf16 operands
//   }
//   loss.backward();                    // their backward GEMMs do too
//
// Inside the guard, on the CPU, linear and linear_cross_entropy round their f32 operands to
// bf16 and multiply them with oneDNN's bf16 GEMM (AVX512-BF16), accumulating and returning f32.
// Everything else stays f32: parameters (the master weights), gradients, optimizer state,
// activations, layer norm, softmax, attention and the loss reductions. A node records whether it
// ran under autocast, so its backward GEMMs use the same precision wherever backward runs.
// Without oneDNN, or on other devices, the guard changes nothing.
#pragma once

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

}  // namespace strata::ops
