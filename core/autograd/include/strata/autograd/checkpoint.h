// Recompute segments: non-reentrant activation checkpointing (torch.utils.checkpoint's
// non-reentrant mode) built on the SavedTensor seam.
//
// checkpoint(fn, inputs) runs fn(inputs) once, normally, except that every tensor saved inside
// it is replaced by a placeholder: only the inputs (through the outer SavePolicy, so they can
// themselves be offloaded) and the generator state are kept. The first unpack of any
// placeholder in backward re-runs fn once, with the RNG state, scope path and grad mode it had,
// under a policy that fills every placeholder; each filled tensor is freed after its consumer's
// backward. Dropout masks come out identical because the generator is replayed.
#pragma once

#include <functional>
#include <vector>

#include "strata/core/tensor.h"

namespace strata::autograd {

using SegmentFn = std::function<std::vector<Tensor>(const std::vector<Tensor>& inputs)>;

// Runs `fn(inputs)` as a recompute segment (plain fn(inputs) when grad mode is off). `fn` must
// stay callable until backward is done and compute the same thing each call. `block`, when
// given, is the segment's block path: its inputs are saved under it (so a policy counts them
// with the block they feed).
std::vector<Tensor> checkpoint(SegmentFn fn, const std::vector<Tensor>& inputs,
                               const std::string& block = "");

// True while a segment re-runs its forward: layers with side effects in forward (BatchNorm's
// running statistics) skip them then, so they are not applied twice.
bool in_recompute();

}  // namespace strata::autograd
