// The op-cost model: an op's time on a HardwareProfile from its FLOPs and bytes (a roofline with
// the op kind's efficiencies plus a launch overhead), for traces of steps that never ran there.
#pragma once

#include <string>
#include <string_view>

#include "strata/memory/planner/hardware.h"

namespace strata::memory::planner {

// The efficiency class of an op or backward-node name: "matmul" (GEMMs, linear layers, the fused
// LM head), "attention", "conv2d", "layer_norm", "batch_norm", "softmax", "cross_entropy", or the
// lower-cased name itself ("gelu", "add", ...).
std::string op_class(std::string_view kind);

// max(flops / (rate x compute efficiency), bytes / (bandwidth x memory efficiency)) + launch.
// GEMM-like classes run at the matmul rate (bf16 when `bf16`), the rest at the vector rate.
double op_seconds(const HardwareProfile& hw, std::string_view kind, double flops, double bytes, bool bf16 = false);

}  // namespace strata::memory::planner
