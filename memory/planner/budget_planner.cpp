#include "strata/memory/planner/budget_planner.h"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <vector>

namespace strata::memory::planner {

namespace {
std::string gb(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f GB", double(bytes) / 1e9);
  return buf;
}
}  // namespace

BudgetPlan plan_for_budget(const BudgetInputs& in, uint64_t budget) {
  const uint64_t other = in.step_peak > in.activation_peak ? in.step_peak - in.activation_peak : 0;
  uint64_t outside = 0;
  std::vector<const GroupProfile*> blocks;
  for (const auto& g : in.profile.groups) {
    if (g.block.empty())
      outside += g.bytes;
    else
      blocks.push_back(&g);
  }
  const size_t n = blocks.size();
  std::vector<CacheAction> act(n, CacheAction::Keep);
  // Resident saved bytes at the start of backward (where the activation peak is) plus the
  // largest transient backward then needs: one recomputed block, or the NVMe prefetch window.
  auto predict_activations = [&](const std::vector<CacheAction>& a) {
    uint64_t resident = outside, recompute_max = 0, nvme_max = 0;
    for (size_t i = 0; i < n; ++i) {
      const uint64_t k = blocks[i]->keep_bytes();
      switch (a[i]) {
        case CacheAction::Keep: resident += k; break;
        case CacheAction::Recompute:
          resident += blocks[i]->input_bytes;
          recompute_max = std::max(recompute_max, k);
          break;
        default: nvme_max = std::max(nvme_max, k); break;
      }
    }
    return resident + std::max<uint64_t>(recompute_max, uint64_t(in.prefetch_blocks + 1) * nvme_max);
  };
  // Offloading blocks 0..k-1: to NVMe while the arena has room (its stores are rounded up to
  // 4 KiB per tensor, so 1% is held back), then to recompute.
  const uint64_t room = in.nvme_capacity ? in.nvme_capacity - in.nvme_capacity / 100 : UINT64_MAX;
  auto offload_first = [&](size_t k) {
    std::vector<CacheAction> a(n, CacheAction::Keep);
    uint64_t on_nvme = 0;
    for (size_t i = 0; i < k; ++i) {
      const bool fits = in.nvme && blocks[i]->keep_bytes() <= room - on_nvme;
      if (fits) on_nvme += blocks[i]->keep_bytes();
      a[i] = fits ? CacheAction::Nvme : CacheAction::Recompute;
    }
    return a;
  };
  const uint64_t target = uint64_t(double(budget) * (1.0 - in.margin));
  // The earliest blocks are held longest, so they go first; the last block (needed first in
  // backward) goes last.
  for (size_t k = 1; k <= n && other + predict_activations(act) > target; ++k) act = offload_first(k);
  if (other + predict_activations(act) > target && in.nvme) {
    std::vector<CacheAction> rec(n, CacheAction::Recompute);
    if (predict_activations(rec) < predict_activations(act)) act = rec;
  }
  BudgetPlan out;
  std::vector<CacheAction> all_offload = offload_first(n), all_recompute(n, CacheAction::Recompute);
  out.min_step_peak = other + std::min(predict_activations(all_offload), predict_activations(all_recompute));
  const uint64_t act_peak = predict_activations(act);
  out.feasible = other + act_peak <= target;
  Plan& p = out.plan;
  for (size_t i = 0; i < n; ++i) p.blocks[blocks[i]->block] = act[i];
  p.budget_bytes = budget;
  p.predicted_activation_peak = act_peak;
  p.predicted_step_peak = other + act_peak;
  p.solver = "greedy-budget";
  std::vector<CacheAction> keep(n, CacheAction::Keep);
  for (size_t i = 0; i < n; ++i)
    if (act[i] == CacheAction::Nvme) out.nvme_bytes += blocks[i]->keep_bytes();
  size_t to_nvme = 0, to_recompute = 0;
  for (auto a : act) to_nvme += a == CacheAction::Nvme, to_recompute += a == CacheAction::Recompute;
  std::ostringstream why;
  if (out.feasible) {
    why << "budget " << gb(budget) << ": ";
    if (to_nvme > 0) why << to_nvme << " of " << n << " blocks to NVMe" << (to_recompute ? ", " : "");
    if (to_recompute > 0 || to_nvme == 0) why << to_recompute << " of " << n << " blocks to recompute";
    if (to_nvme > 0 && in.nvme_capacity > 0 && to_recompute > 0)
      why << " (the NVMe arena holds " << gb(in.nvme_capacity) << ")";
    why << ", predicted step peak " << gb(p.predicted_step_peak) << " (keep-all "
        << gb(other + predict_activations(keep)) << ")";
  } else {
    why << "budget " << gb(budget) << " cannot be met: the lowest predicted step peak is "
        << gb(out.min_step_peak) << " (parameters, gradients, optimizer state and temporaries take "
        << gb(other) << ", activations saved outside blocks " << gb(outside)
        << "); a smaller batch or sequence, or an NVMe tier (a spill directory), would help";
  }
  out.explanation = why.str();
  p.note = out.explanation;
  return out;
}

}  // namespace strata::memory::planner
