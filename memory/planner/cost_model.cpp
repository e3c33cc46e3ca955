#include "strata/memory/planner/cost_model.h"

#include <algorithm>
#include <cctype>

#include "strata/core/error.h"

namespace strata::memory::planner {

std::string op_class(std::string_view kind) {
  std::string k(kind);
  std::transform(k.begin(), k.end(), k.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  auto has = [&](const char* s) { return k.find(s) != std::string::npos; };
  if (has("attention")) return "attention";
  if (has("conv")) return "conv2d";
  if (has("matmul") || has("linear") || has("bmm") || has("addmm") || has("lm_head") || has("linear_cross_entropy"))
    return "matmul";
  if (has("layer_norm") || has("layernorm")) return "layer_norm";
  if (has("batch_norm") || has("batchnorm")) return "batch_norm";
  if (has("softmax")) return "softmax";
  if (has("cross_entropy") || has("crossentropy")) return "cross_entropy";
  return k;
}

GemmPrecision parse_gemm_precision(const std::string& name) {
  if (name == "fp32") return GemmPrecision::fp32;
  if (name == "tf32") return GemmPrecision::tf32;
  if (name == "bf16") return GemmPrecision::bf16;
  throw ValueError("GEMM precision '" + name + "': expected fp32, tf32 or bf16");
}

const char* gemm_precision_name(GemmPrecision p) {
  return p == GemmPrecision::tf32 ? "tf32" : p == GemmPrecision::bf16 ? "bf16" : "fp32";
}

double matmul_flops(const HardwareProfile& hw, GemmPrecision p) {
  if (p == GemmPrecision::tf32 && hw.matmul_flops_tf32.set()) return hw.matmul_flops_tf32.value;
  if (p == GemmPrecision::bf16 && hw.matmul_flops_bf16.set()) return hw.matmul_flops_bf16.value;
  return hw.matmul_flops_fp32.value;
}

double op_seconds(const HardwareProfile& hw, std::string_view kind, double flops, double bytes,
                  GemmPrecision precision) {
  const std::string cls = op_class(kind);
  const OpEfficiency& e = hw.efficiency(cls);
  const bool gemm = cls == "matmul" || cls == "attention" || cls == "conv2d";
  double rate = gemm ? matmul_flops(hw, precision) : hw.matmul_flops_fp32.value;
  if (!gemm && hw.vector_flops_fp32.set()) rate = hw.vector_flops_fp32.value;
  double bw = hw.device_memory_bytes_per_second.set() ? hw.device_memory_bytes_per_second.value
                                                       : hw.host_memcpy_bytes_per_second.value;
  double t = 0;
  if (flops > 0 && rate > 0) t = std::max(t, flops / (rate * e.compute));
  if (bytes > 0 && bw > 0) t = std::max(t, bytes / (bw * e.memory));
  return t + hw.kernel_launch_seconds.value;
}

}  // namespace strata::memory::planner
