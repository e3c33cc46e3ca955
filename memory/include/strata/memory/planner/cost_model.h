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

// How the step's GEMM-like ops multiply: f32 (Strata's default), f32 on TF32 Tensor Cores
// (ops::AllowTf32Guard), or bf16 operands (ops::AutocastGuard). Activations stay f32 in all three.
enum class GemmPrecision { fp32, tf32, bf16 };

// "fp32", "tf32", "bf16"; anything else throws ValueError.
GemmPrecision parse_gemm_precision(const std::string& name);
const char* gemm_precision_name(GemmPrecision p);

// The matmul rate for `p`: matmul_flops_tf32 / _bf16 where the profile has it, else the f32 rate
// (a CPU has no TF32 units: the guard changes nothing there).
double matmul_flops(const HardwareProfile& hw, GemmPrecision p);

// max(flops / (rate x compute efficiency), bytes / (bandwidth x memory efficiency)) + launch.
// GEMM-like classes run at matmul_flops(hw, precision), the rest at the vector rate.
double op_seconds(const HardwareProfile& hw, std::string_view kind, double flops, double bytes,
                  GemmPrecision precision = GemmPrecision::fp32);

}  // namespace strata::memory::planner
