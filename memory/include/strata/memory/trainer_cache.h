// TrainerCache: a training loop's tensor cache, built from one CacheSettings (a policy, a memory
// budget, a spill directory): a TensorCache with its policy, and, under a budget, a planning step
// (every block recomputed, which keeps that step small) whose profile the greedy solver turns
// into a plan.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "strata/core/byte_size.h"
#include "strata/core/memory_stats.h"
#include "strata/memory/plan.h"
#include "strata/memory/tensor_cache.h"

namespace strata::memory {

// A placement of model state (weights, gradients, optimizer state) the budget may choose: its
// description and the bytes it keeps on the device through a step.
struct ModelStateOption {
  std::string placement;  // "weights device, gradients host, optimizer state host"
  uint64_t device_bytes = 0;
};

struct CacheSettings {
  std::string policy = "keep";   // a parse_cache_policy spec, or "plan:<file>"
  uint64_t memory_budget = 0;    // step-peak bytes to stay under (0: no budget)
  std::string spill_dir;         // the NVMe tier's directory ("": none)
  uint64_t spill_arena_bytes = uint64_t(8) << 30;
  // The spill arena's size was asked for: a budget's plan that needs more is refused. Otherwise the
  // arena grows to what the plan sends to NVMe (as far as the drive's free space allows).
  bool spill_arena_fixed = false;
  uint64_t host_pool_bytes = 0;  // the host tier (0: none)
  uint64_t min_bytes = uint64_t(1) << 20;
  size_t keep_last_blocks = 1;
  std::string save_plan;         // write the budget plan here
  Device device = kCPU;          // where the model trains: the cache moves that device's activations
  // Under a budget: the model-state placements it may choose, [0] the one the planning step runs
  // with, each later one keeping less on the device (empty: model state stays where it is).
  std::vector<ModelStateOption> model_state;
};

// The trainers' flags parse sizes with core's parser.
using strata::parse_byte_size;

// The budget's plan, made at the end of its planning step.
struct BudgetOutcome {
  bool made = false;        // a plan was made at the end of this step
  bool feasible = true;     // false: the budget cannot be met, and the step's policy stays
  std::string explanation;  // one line: the plan, or why the budget cannot be met
  size_t model_state = 0;   // the CacheSettings::model_state option the plan chose
};

class TrainerCache {
 public:
  // Throws ValueError on a bad policy spec or plan file.
  explicit TrainerCache(CacheSettings settings);
  const std::shared_ptr<TensorCache>& cache() const { return cache_; }
  // Why the policy "nvme" has no NVMe tier to write to (no spill directory, or the tier's warning),
  // or "" when it has one or the policy is another.
  std::string missing_nvme_tier() const;
  // Whether there is anything to say about the cache: a policy other than keep, or a budget.
  bool reports() const { return s_.policy != "keep" || s_.memory_budget > 0; }
  // True while the step about to run is the budget's planning step.
  bool planning() const { return planning_; }
  // Begins a step; the caller resets the device allocator's peaks before it.
  void begin_step();
  // Called before the optimizer's update (optional): the peak of forward and backward, which the
  // optimizer's first update joins with the state it makes (otherwise its state is assumed to add to
  // the step's whole peak).
  void before_update();
  // Ends the step, reading its peaks from the device's allocator as begin_step read its state.
  // After the planning step, makes the plan (or says why the budget cannot be met).
  BudgetOutcome end_step();
  const CacheStats& last_stats() const { return last_; }
  // "cache nvme: 12 MB out / 12 MB in, 0 forwarded, 0 fallbacks, stall 0.00 s"
  std::string stats_line() const;
  std::string describe() const;
  // Whether a step peak went above the budget (after planning).
  bool budget_exceeded() const { return exceeded_; }
  uint64_t memory_budget() const { return s_.memory_budget; }

 private:
  // What the spill arena may grow to: its size and most of the drive's free space (0: unknown).
  uint64_t growable_arena_bytes() const;

  CacheSettings s_;
  std::shared_ptr<TensorCache> cache_;
  std::shared_ptr<CachePolicy> policy_;
  bool planning_ = false;
  bool exceeded_ = false;
  int64_t optimizer_state_at_begin_ = 0;
  int64_t peak_before_update_ = -1;  // -1: before_update() was not called this step
  CacheStats last_;
};

}  // namespace strata::memory
