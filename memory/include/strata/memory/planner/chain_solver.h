// The chain solver: a dynamic program over the blocks of a step (Rotor/Rockmate's chain view,
// restricted to the schedules the tensor cache executes: each block keeps, recomputes once as a
// segment, recomputes its cheap ops, or offloads) that picks one option per block minimising the
// extra step time while the predicted peak stays under a budget.
//
// Offload options come in prefix groups: the stores of every offloading block share one copy
// channel, first in first out, so what an offloaded block still holds when forward ends depends
// on the blocks stored before it. The planner computes that for the case where the offloading
// blocks are the first ones (they are produced first, so the channel is never idle, and read
// last in backward, so their loads have the most time): an option of group g > 0 may be chosen
// for block j only when every block before j chose an option of the same group.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace strata::memory::planner {

struct BlockOption {
  std::string name;           // "keep", "recompute", "selective", "host", "nvme"
  uint64_t held_bytes = 0;    // device memory it holds from its forward until its backward
  uint64_t peak_bytes = 0;    // its own footprint while its backward runs (materialized + workspace)
  double extra_seconds = 0;   // step time over keeping it (recompute, expected stalls)
  int prefix_group = 0;       // > 0: only after blocks that all chose this group (see above)
};

struct ChainBlock {
  std::string path;
  std::vector<BlockOption> options;
};

// Backward of block j runs while blocks 0..j-1 still hold their memory, so the step peak is
// base + max_j (held_0 + ... + held_{j-1} + peak_j); it must stay within the budget.
struct ChainProblem {
  std::vector<ChainBlock> blocks;  // forward order
  uint64_t base_bytes = 0;         // held all step (parameters, gradients, optimizer, outside blocks)
  uint64_t budget_bytes = 0;
  uint64_t unit_bytes = 0;  // memory discretisation (0: the budget / 4096, at least 4 KiB)
};

struct ChainSolution {
  bool feasible = false;
  std::vector<int> choice;  // option index per block
  double extra_seconds = 0;
  uint64_t predicted_peak = 0;  // with held bytes rounded up to units (what the DP guarantees)
  uint64_t unit_bytes = 0;
};

// O(blocks x budget/unit x options x (groups + 1)). Held bytes are rounded up to units, so the plan's peak is
// guaranteed but may overestimate by one unit per block. Ties go to the lower option index.
ChainSolution solve_chain(const ChainProblem& problem);
// Every combination (options^blocks): the reference for tests, with the same rounding.
ChainSolution brute_force_chain(const ChainProblem& problem);

}  // namespace strata::memory::planner
