#include "strata/memory/trainer_cache.h"

#include <sys/statvfs.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

#include "strata/core/backend.h"
#include "strata/core/error.h"
#include "strata/memory/planner/budget_planner.h"

namespace strata::memory {

TrainerCache::TrainerCache(CacheSettings s) : s_(std::move(s)) {
  if (s_.policy.rfind("plan:", 0) == 0)
    policy_ = make_plan_policy(load_plan(s_.policy.substr(5)));
  else
    policy_ = parse_cache_policy(s_.policy, s_.keep_last_blocks);
  TensorCacheOptions o;
  o.device = s_.device;
  o.min_bytes = s_.min_bytes;
  o.host_pool_bytes = s_.host_pool_bytes;
  o.spill_dir = s_.spill_dir;
  o.spill_arena_bytes = s_.spill_dir.empty() ? 0 : s_.spill_arena_bytes;
  planning_ = s_.memory_budget > 0;
  cache_ = TensorCache::create(o, planning_ ? parse_cache_policy("recompute") : policy_);
}

void TrainerCache::begin_step() {
  optimizer_state_at_begin_ =
      allocator_for(s_.device).stats().snapshot().current_of(MemoryCategory::OptimizerState);
  peak_before_update_ = -1;
  cache_->begin_step();
}

void TrainerCache::before_update() {
  peak_before_update_ = allocator_for(s_.device).stats().snapshot().total_peak;
}

std::string TrainerCache::missing_nvme_tier() const {
  if (s_.policy != "nvme") return "";
  const CacheStats st = cache_->stats();
  if (!st.io_engine.empty()) return "";
  if (s_.spill_dir.empty()) return "no spill directory given";
  return st.warnings.empty() ? "spill directory '" + s_.spill_dir + "' unusable" : st.warnings.front();
}

BudgetOutcome TrainerCache::end_step() {
  const MemorySnapshot m = allocator_for(s_.device).stats().snapshot();
  last_ = cache_->end_step();
  if (!planning_) {
    if (s_.memory_budget > 0 && uint64_t(m.total_peak) > s_.memory_budget) exceeded_ = true;
    return {};
  }
  planning_ = false;
  planner::BudgetInputs in;
  in.profile = cache_->last_profile();
  // The optimizer's state appears in its first step, after backward: later steps carry it through
  // forward and backward, so it counts as if it had been there all along. Its update's own peak
  // (the state made beside the weights and gradients) is in the measured peak already.
  const int64_t new_state =
      std::max<int64_t>(m.current_of(MemoryCategory::OptimizerState) - optimizer_state_at_begin_, 0);
  in.step_peak = peak_before_update_ >= 0 ? uint64_t(std::max(m.total_peak, peak_before_update_ + new_state))
                                          : uint64_t(m.total_peak + new_state);
  in.activation_peak = uint64_t(m.peak_of(MemoryCategory::SavedActivation));
  in.nvme = !s_.spill_dir.empty() && last_.io_engine != "";
  // A fixed arena is checked against the plan below; one that may grow is bounded by the drive.
  in.nvme_capacity = s_.spill_arena_fixed ? 0 : growable_arena_bytes();
  in.prefetch_blocks = cache_->options().prefetch_blocks;
  // The model state the planning step ran with, exchanged for each placement the budget may
  // choose, from the one that keeps the most on the device: the first whose plan holds the budget.
  const std::vector<ModelStateOption> options =
      s_.model_state.empty() ? std::vector<ModelStateOption>{ModelStateOption{}} : s_.model_state;
  const uint64_t measured_peak = in.step_peak, ran_with = options.front().device_bytes;
  planner::BudgetPlan b;
  size_t chosen = 0;
  for (; chosen < options.size(); ++chosen) {
    in.step_peak = measured_peak - std::min(measured_peak, ran_with) + options[chosen].device_bytes;
    b = planner::plan_for_budget(in, s_.memory_budget);
    if (b.feasible) break;
  }
  if (chosen == options.size()) {
    // The smallest budget the last placement's plan would hold, less the margin it keeps.
    const uint64_t smallest = uint64_t(double(b.min_step_peak) / (1.0 - in.margin)) + 1;
    std::string why =
        b.explanation + "; the smallest feasible budget is " + std::to_string(smallest / 1000000 + 1) + " MB";
    if (!s_.model_state.empty()) why += ", with " + options.back().placement;
    return {.made = false, .feasible = false, .explanation = why};
  }
  if (!s_.model_state.empty()) {
    b.explanation += "; model state: " + options[chosen].placement + " (" +
                     std::to_string(options[chosen].device_bytes / 1000000) + " MB on the device)";
    b.plan.note = b.explanation;
  }
  // The arena holds every NVMe block's bytes from its forward to its backward, each tensor rounded
  // up to 4 KiB: an eighth and 1 MiB more are allowed for that (a tiny GPT's small tensors took 6.5%).
  const uint64_t arena_need = b.nvme_bytes + b.nvme_bytes / 8 + (uint64_t(1) << 20);
  if (b.nvme_bytes > 0 && arena_need > cache_->spill_arena_capacity()) {
    if (s_.spill_arena_fixed)
      return {.made = false,
              .feasible = false,
              .explanation =
                  "the plan for budget " + format_bytes(double(s_.memory_budget)) + " sends " +
                  format_bytes(double(arena_need)) + " to NVMe, more than the fixed " +
                  format_bytes(double(s_.spill_arena_bytes)) +
                  " spill arena holds; give a larger arena, or none (it then grows to the plan's need)"};
    cache_->grow_spill_arena(arena_need);
  }
  if (!s_.save_plan.empty()) save_plan(b.plan, s_.save_plan);
  policy_ = make_plan_policy(b.plan);
  cache_->set_policy(policy_);
  // Stores that fall behind the plan (a drive slower than measured) make forward wait instead of
  // taking the budget: the activation bytes the plan predicts, plus its headroom under the budget.
  const Plan& p = b.plan;
  if (p.predicted_activation_peak > 0 && p.budget_bytes >= p.predicted_step_peak)
    cache_->set_activation_limit(size_t(p.predicted_activation_peak + (p.budget_bytes - p.predicted_step_peak)));
  return {.made = true, .feasible = true, .explanation = b.explanation, .model_state = chosen};
}

uint64_t TrainerCache::growable_arena_bytes() const {
  struct statvfs fs {};
  if (s_.spill_dir.empty() || ::statvfs(s_.spill_dir.c_str(), &fs) != 0) return 0;  // 0: no limit known
  // The drive's free space less a tenth, kept for everything else on it.
  const uint64_t free_bytes = uint64_t(fs.f_bavail) * uint64_t(fs.f_frsize);
  return cache_->spill_arena_capacity() + free_bytes - free_bytes / 10;
}

std::string TrainerCache::stats_line() const {
  char buf[256];
  const CacheStats& s = last_;
  std::snprintf(buf, sizeof buf,
                "cache: nvme %.0f/%.0f MB out/in, host %.0f/%.0f MB, %lu segments, %lu ops recomputed, "
                "%lu forwarded, %lu fallbacks, stall %.2f s, store waits %.2f s, recompute %.2f s",
                double(s.nvme.bytes_written) / 1e6, double(s.nvme.bytes_read) / 1e6, double(s.host.bytes_written) / 1e6,
                double(s.host.bytes_read) / 1e6, (unsigned long)s.segments, (unsigned long)s.op_recomputes,
                (unsigned long)s.forwarded, (unsigned long)s.fallbacks, s.stall_seconds, s.store_wait_seconds,
                s.recompute_seconds);
  return buf;
}

std::string TrainerCache::describe() const {
  std::string d = "cache policy " + policy_->name();
  if (s_.memory_budget > 0) d += ", memory budget " + std::to_string(s_.memory_budget / 1000000) + " MB (planned after step 1)";
  if (!s_.spill_dir.empty()) d += ", spill dir " + s_.spill_dir;
  if (s_.host_pool_bytes > 0) d += ", host pool " + std::to_string(s_.host_pool_bytes / 1000000) + " MB";
  return d;
}

}  // namespace strata::memory
