// The planner: from a StepTrace, a HardwareProfile and a memory budget, the per-block and
// per-tensor plan with the lowest simulated step time that holds the budget (the chain DP over
// per-block options, then simulator-checked repair and local search), beside the baseline
// policies run as plans on the same simulator.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "strata/memory/plan.h"
#include "strata/memory/planner/chain_solver.h"
#include "strata/memory/planner/hardware.h"
#include "strata/memory/planner/simulator.h"
#include "strata/memory/planner/trace.h"

namespace strata::memory::planner {

struct PlannerOptions {
  // What the budget bounds: saved activations only (true; on a CPU with the host pool, which is
  // the same RAM), or the whole step peak (resident state, activations, workspace, and on a CPU
  // the host pool).
  bool activations_only = true;
  bool allow_recompute = true;  // segments
  bool allow_selective = true;  // op-level recompute of cheap ops' outputs
  bool allow_host = true;
  bool allow_nvme = true;
  // Prefetch depths tried for plans that offload (the cache loads this many blocks ahead).
  // Deep ones matter on fast GPUs: PCIe needs about half of backward to bring back what it
  // carried out during forward.
  std::vector<size_t> prefetch_depths = {1, 2, 4, 8, 16, 32};
  int local_search_rounds = 2;
  // Per-tensor refinement: rounds of exchanges (a dropped output kept, a cheaper one per byte
  // dropped instead), each dropped output tried with this many candidates.
  int refine_rounds = 3;
  int refine_tries = 3;
  int repair_rounds = 6;  // re-solves with a tighter DP budget when the simulator finds a peak above it
};

struct PolicyResult {
  std::string name;
  SimPlan plan;
  SimResult predicted;
  bool fits = false;         // predicted peak within the budget
  std::string block_summary;  // e.g. "recompute x10, keep x2"
};

struct PlannerResult {
  PolicyResult plan;                    // the planner's choice ("strata")
  std::vector<PolicyResult> baselines;  // keep-all, recompute-all, selective, rockmate, ssdtrain, swap
  double solve_seconds = 0;
  std::string explanation;
};

// The chain view of a trace: one option list per block (keep, selective, recompute, host, NVMe,
// and selective+host / selective+nvme, as allowed and as the profile has tiers), with held bytes,
// backward-time peak and extra seconds for a cache that loads `prefetch_blocks` blocks ahead.
// prefix_offload: offload options form prefix groups (ChainBlock), their held bytes and load
// waits following from the blocks offloaded before and after them on the shared channels; else
// each block's offload is judged as if it had the channels to itself.
ChainProblem chain_problem(const StepTrace& trace, const HardwareProfile& hw, uint64_t budget,
                           const PlannerOptions& options, size_t prefetch_blocks = 1, bool prefix_offload = true);
// The SimPlan that executes one option per block.
SimPlan sim_plan_for(const StepTrace& trace, const ChainProblem& problem, const std::vector<int>& choice,
                     size_t prefetch_blocks = 1);
// The cache's Plan (block actions; op-level recomputes as tensor entries) for a SimPlan.
Plan cache_plan_for(const StepTrace& trace, const SimPlan& plan);

// The planner's plan and every baseline, each simulated. The budget bounds what
// options.activations_only says.
PlannerResult plan_step(const StepTrace& trace, const HardwareProfile& hw, uint64_t budget,
                        const PlannerOptions& options = {});

// The figure the budget bounds, from a simulation on `hw`.
uint64_t budgeted_peak(const SimResult& r, const PlannerOptions& options, const HardwareProfile& hw);

}  // namespace strata::memory::planner
