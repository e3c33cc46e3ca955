#include "strata/memory/trainer_cache.h"

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
  cache_->begin_step();
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
  // The optimizer's state appears in its first step, after backward's peak: later steps carry it
  // through backward, so it counts as if it had been there all along.
  const int64_t new_state = m.current_of(MemoryCategory::OptimizerState) - optimizer_state_at_begin_;
  in.step_peak = uint64_t(m.total_peak + std::max<int64_t>(new_state, 0));
  in.activation_peak = uint64_t(m.peak_of(MemoryCategory::SavedActivation));
  in.nvme = !s_.spill_dir.empty() && last_.io_engine != "";
  in.nvme_capacity = s_.spill_arena_bytes;
  in.prefetch_blocks = cache_->options().prefetch_blocks;
  planner::BudgetPlan b = planner::plan_for_budget(in, s_.memory_budget);
  if (!b.feasible) return {.made = false, .feasible = false, .explanation = b.explanation};
  if (!s_.save_plan.empty()) save_plan(b.plan, s_.save_plan);
  policy_ = make_plan_policy(b.plan);
  cache_->set_policy(policy_);
  // Stores that fall behind the plan (a drive slower than measured) make forward wait instead of
  // taking the budget: the activation bytes the plan predicts, plus its headroom under the budget.
  const Plan& p = b.plan;
  if (p.predicted_activation_peak > 0 && p.budget_bytes >= p.predicted_step_peak)
    cache_->set_activation_limit(size_t(p.predicted_activation_peak + (p.budget_bytes - p.predicted_step_peak)));
  return {.made = true, .feasible = true, .explanation = b.explanation};
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
