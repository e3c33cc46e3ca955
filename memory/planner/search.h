// The planner's search: a plan's block summary, a plan judged by the simulator, the chain DP with
// its repair and local search over prefetch depths (solve), and the per-tensor refinement after
// it. Private to memory/planner.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "strata/memory/planner/planner.h"

namespace strata::memory::planner {

// "keep x3, nvme x9": how many blocks each option took.
std::string summarize(const StepTrace& t, const SimPlan& p);
// The plan simulated on `hw`, and whether it holds `budget`.
PolicyResult evaluate(const std::string& name, const StepTrace& t, SimPlan plan, const HardwareProfile& hw,
                      uint64_t budget, const PlannerOptions& o);
// The best plan over the prefetch depths (only depth 1 when nothing can be offloaded).
PolicyResult solve(const std::string& name, const StepTrace& t, const HardwareProfile& hw, uint64_t budget,
                   const PlannerOptions& o);
// Per-tensor refinement of a block-level plan (see search.cpp).
PolicyResult refine_tensors(const std::string& name, const StepTrace& t, const HardwareProfile& hw, uint64_t budget,
                            const PlannerOptions& o, PolicyResult best);
// The baselines beside the plan, in the order strata_plan prints them: keep-all, recompute-all,
// selective (Megatron), rockmate, ssdtrain, swap (baselines.cpp).
std::vector<PolicyResult> baseline_plans(const StepTrace& t, const HardwareProfile& hw, uint64_t budget,
                                         const PlannerOptions& o);

}  // namespace strata::memory::planner
