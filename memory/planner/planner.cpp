// plan_step: the planner's plan for a budget beside the baselines, each simulated, and the
// cache plan a chosen SimPlan becomes. The search is in search.cpp, the block options the chain
// DP chooses from in block_options.cpp, the baselines in baselines.cpp.
#include "strata/memory/planner/planner.h"

#include <chrono>
#include <cstdio>

#include "memory/planner/search.h"
#include "strata/core/error.h"

namespace strata::memory::planner {

uint64_t budgeted_peak(const SimResult& r, const PlannerOptions& options, const HardwareProfile& hw) {
  if (!options.activations_only) return r.step_peak;
  return hw.gpu ? r.activation_peak : r.activation_and_pool_peak;
}

Plan cache_plan_for(const StepTrace& t, const SimPlan& sp) {
  Plan plan;
  plan.prefetch_blocks = sp.prefetch_blocks;
  for (size_t b = 0; b < t.blocks.size(); ++b) {
    CacheAction a = sp.segments[b] ? CacheAction::Recompute : CacheAction::Keep;
    if (!sp.segments[b]) {
      for (size_t k = 0; k < t.tensors.size(); ++k)
        if (t.tensors[k].block == int32_t(b) && (sp.tensors[k] == CacheAction::Host || sp.tensors[k] == CacheAction::Nvme))
          a = sp.tensors[k];
    }
    plan.blocks[t.blocks[b].path] = a;
  }
  for (size_t k = 0; k < t.tensors.size(); ++k) {
    const TraceTensor& x = t.tensors[k];
    const bool seg = x.block >= 0 && sp.segments[size_t(x.block)];
    if (seg) continue;
    CacheAction block_action = x.block >= 0 ? plan.blocks[t.blocks[size_t(x.block)].path] : CacheAction::Keep;
    if (sp.tensors[k] != block_action) plan.tensors[x.key] = sp.tensors[k];
  }
  return plan;
}

PlannerResult plan_step(const StepTrace& t, const HardwareProfile& hw, uint64_t budget, const PlannerOptions& o) {
  t.validate();
  auto t0 = std::chrono::steady_clock::now();
  PlannerResult res;
  res.plan = refine_tensors("strata", t, hw, budget, o, solve("strata", t, hw, budget, o));

  res.baselines = baseline_plans(t, hw, budget, o);

  // The plan space holds the baselines, but the local search may not reach them: a baseline that
  // holds the budget and beats the solver's plan is taken as it is.
  for (const PolicyResult& b : res.baselines) {
    if (!b.fits) continue;
    if (!res.plan.fits || b.predicted.step_seconds < res.plan.predicted.step_seconds - 1e-12) {
      res.plan = b;
      res.plan.name = "strata";
    }
  }
  res.solve_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  // The chosen plans again, with their activation curves and block summaries.
  for (PolicyResult* p : [&] {
         std::vector<PolicyResult*> v{&res.plan};
         for (auto& b : res.baselines) v.push_back(&b);
         return v;
       }()) {
    p->predicted = simulate(t, p->plan, hw, /*curve=*/true);
    p->block_summary = summarize(t, p->plan);
  }
  const double keep_time = res.baselines[0].predicted.step_seconds;
  char buf[512];
  if (res.plan.fits) {
    std::snprintf(buf, sizeof buf, "budget %.1f MB held: %s, predicted step %.4g s (%+.1f%% over keep-all), peak %.1f MB",
                  double(budget) / 1e6, res.plan.block_summary.c_str(), res.plan.predicted.step_seconds,
                  100.0 * (res.plan.predicted.step_seconds / keep_time - 1.0),
                  double(budgeted_peak(res.plan.predicted, o, hw)) / 1e6);
  } else {
    uint64_t lowest = budgeted_peak(res.plan.predicted, o, hw);
    std::string who = "strata";
    for (const auto& b : res.baselines)
      if (budgeted_peak(b.predicted, o, hw) < lowest) {
        lowest = budgeted_peak(b.predicted, o, hw);
        who = b.name;
      }
    std::snprintf(buf, sizeof buf, "budget %.1f MB cannot be met: the lowest predicted peak is %.1f MB (%s)",
                  double(budget) / 1e6, double(lowest) / 1e6, who.c_str());
  }
  res.explanation = buf;
  return res;
}

}  // namespace strata::memory::planner
