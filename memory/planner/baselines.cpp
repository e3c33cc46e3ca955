// The baseline policies as plans the simulator can judge beside the planner's: keep-all,
// recompute-all, Megatron-style selective recompute, Rockmate (recompute only), SSDTrain's
// adaptive offloading and swap (offload only).
#include "memory/planner/block_options.h"
#include "memory/planner/search.h"

namespace strata::memory::planner {

namespace {

// SSDTrain's adaptive offloading: blocks go to the fastest offload tier in forward order while its
// write bandwidth keeps up with the forward pass (the store of blocks 0..i done within the forward
// of blocks 0..i+1); the last block is kept.
SimPlan ssdtrain_plan(const StepTrace& t, const HardwareProfile& hw, const std::vector<BlockFigures>& f) {
  SimPlan p = SimPlan::keep_all(t);
  const bool nvme = !hw.drives.empty();
  const double bw = nvme ? hw.nvme_write_bytes_per_second() : hw.to_host_bytes_per_second();
  if (bw <= 0) return p;
  double stored = 0, forward = 0;
  std::vector<bool> off(t.blocks.size(), false);
  for (size_t i = 0; i + 1 < t.blocks.size(); ++i) {
    stored += double(f[i].saved) / bw;
    forward += f[i].forward;
    if (stored > forward + f[i + 1].forward) break;
    off[i] = true;
  }
  for (size_t k = 0; k < t.tensors.size(); ++k) {
    const TraceTensor& x = t.tensors[k];
    if (x.block >= 0 && off[size_t(x.block)]) p.tensors[k] = nvme ? CacheAction::Nvme : CacheAction::Host;
  }
  return p;
}

}  // namespace

std::vector<PolicyResult> baseline_plans(const StepTrace& t, const HardwareProfile& hw, uint64_t budget,
                                         const PlannerOptions& o) {
  std::vector<PolicyResult> out;
  const std::vector<BlockFigures> f = figures(t);
  out.push_back(evaluate("keep-all", t, SimPlan::keep_all(t), hw, budget, o));
  SimPlan all = SimPlan::keep_all(t);
  all.segments.assign(t.blocks.size(), true);
  out.push_back(evaluate("recompute-all", t, std::move(all), hw, budget, o));
  // Megatron-style: only the memory-bound outputs (GELU, layer norm), never a GEMM's.
  SimPlan sel = SimPlan::keep_all(t);
  const std::vector<char> cheap = cheapest_recomputes(t);
  for (size_t k = 0; k < t.tensors.size(); ++k)
    if (cheap[k]) sel.tensors[k] = CacheAction::Recompute;
  out.push_back(evaluate("selective", t, std::move(sel), hw, budget, o));
  PlannerOptions only_recompute = o;
  only_recompute.allow_host = only_recompute.allow_nvme = false;
  only_recompute.local_search_rounds = 1;
  out.push_back(solve("rockmate", t, hw, budget, only_recompute));
  out.push_back(evaluate("ssdtrain", t, ssdtrain_plan(t, hw, f), hw, budget, o));
  PlannerOptions only_swap = o;
  only_swap.allow_recompute = only_swap.allow_selective = false;
  only_swap.local_search_rounds = 1;
  out.push_back(solve("swap", t, hw, budget, only_swap));
  return out;
}

}  // namespace strata::memory::planner
