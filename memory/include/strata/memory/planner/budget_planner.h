// plan_for_budget: the trainers' greedy plan for a step-peak budget, from one profiled step
// (no trace or hardware profile needed; strata_plan's planner is planner.h).
#pragma once

#include <cstdint>
#include <string>

#include "strata/memory/cache_policy.h"
#include "strata/memory/plan.h"

namespace strata::memory::planner {

// What the greedy solver needs: a profiled step (run with every block as a recompute segment, so
// that the profile holds what each block saves while the step itself stays small), its peaks,
// and which tiers exist.
struct BudgetInputs {
  StepProfile profile;
  uint64_t step_peak = 0;        // all memory categories, bytes
  uint64_t activation_peak = 0;  // SavedActivation, bytes
  bool nvme = false;             // an NVMe tier is open
  uint64_t nvme_capacity = 0;    // bytes its arena holds (0: no limit): a step's NVMe blocks fit in it
  size_t prefetch_blocks = 1;
  double margin = 0.05;          // fraction of the budget held back for estimation error
};

struct BudgetPlan {
  Plan plan;
  bool feasible = false;
  uint64_t min_step_peak = 0;  // the lowest step peak the solver can predict
  uint64_t nvme_bytes = 0;     // what the plan's NVMe blocks save in one step
  std::string explanation;     // one line: what was chosen, or why the budget cannot be met
};

// Greedy: starting from keep-all, blocks in forward order (the earliest are held longest) go to
// NVMe (when there is a tier, and while the arena has room for them: every NVMe block's bytes stay
// in the arena from its forward to its backward) or recompute until the predicted step peak fits
// the budget.
BudgetPlan plan_for_budget(const BudgetInputs& in, uint64_t budget_bytes);

}  // namespace strata::memory::planner
