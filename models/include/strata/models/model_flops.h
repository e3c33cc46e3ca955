// Model FLOPs of a training step per token, as MFU counts them (not the FLOPs the kernels run).
#pragma once

#include <cstdint>

namespace strata::models {

// A transformer's forward and backward FLOPs per token, as llm.c estimates them after PaLM's
// appendix B: 6 per parameter (2 forward, 4 backward) plus 6 * layers * width * seq_len for
// attention's scores and weighted sum (PaLM's 12 * L * C * T counts a causal mask's unused half
// too). BERT is counted the same way, so the two trainers' figures compare.
inline double transformer_training_flops_per_token(int64_t parameters, int64_t layers, int64_t width,
                                                   int64_t seq_len) {
  return 6.0 * double(parameters) + 6.0 * double(layers) * double(width) * double(seq_len);
}

}  // namespace strata::models
