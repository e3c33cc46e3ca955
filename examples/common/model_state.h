// Where a trainer's model state lives: --optimizer-state places the optimizer's moments (before a
// resume loads them), --weights and --gradients page the blocks' weights and gradients, each on the
// device, in host memory or in a spill file in --spill-dir; under --memory-budget the budget places
// the kinds no flag names.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "strata/core/device.h"
#include "strata/memory/param_pager.h"
#include "strata/memory/planner/model_state_plan.h"
#include "strata/memory/trainer_cache.h"
#include "strata/nn/module.h"
#include "strata/optim/optimizer.h"

namespace strata::examples {

class OptimizerConfig;
class TensorCacheConfig;

// Where a trainer's model state lives. A kind its flag names lives there; under --memory-budget
// a kind without a flag is the budget's to place (under mpirun the optimizer's state only, each
// rank counting its own shard's under ZeRO, every rank taking the placement that moves the most
// any of them needs): the run starts with the
// first placement of planner::placement_ladder whose model state fits the budget on its own, the
// planning step measures what the activations need beside it, and the plan may move more of it off
// the device (optimizer state first, then gradients, then weights; to host memory where the device
// is not the CPU, else to NVMe in --spill-dir).
//
//   ModelStatePlacer state(c, device, model);   // before model.to(device): paged weights go home
//   model.to(device);
//   state.place(optimizer);                      // before a resume loads the optimizer's state
//   parts.model_state = &state;                  // the loop applies the plan's placement
class ModelStatePlacer {
 public:
  // `optimizer_state_per_weight_byte`: the trainer's optimizer's state per weight byte (AdamW: 2).
  // Pages the blocks' weights and gradients where they start. ValueError naming the flag on bad
  // input (nvme without --spill-dir).
  ModelStatePlacer(const OptimizerConfig& optim, const TensorCacheConfig& cache, Device device,
                   const nn::Module& model, bool data_parallel = false,
                   double optimizer_state_per_weight_byte = 2);
  template <class Config>
  ModelStatePlacer(const Config& c, Device device, const nn::Module& model, bool data_parallel = false,
                   double optimizer_state_per_weight_byte = 2)
      : ModelStatePlacer(c.optim(), c.cache(), device, model, data_parallel,
                         optimizer_state_per_weight_byte) {}

  // Places `optimizer`'s state where it starts (nothing for the device).
  void place(optim::Optimizer& optimizer);
  // The pager of the blocks' weights and gradients (null while both are on the device).
  const std::shared_ptr<memory::ParamPager>& pager() const { return pager_; }
  // The placements the budget may choose, the current one first (empty: none to choose).
  std::vector<memory::ModelStateOption> options() const;
  // Moves model state to options()[option] (further off the device), between steps.
  void move_to(size_t option);
  // "weights device, gradients host, optimizer state host"
  std::string describe() const { return placement_.describe(); }

 private:
  void page(const memory::planner::ModelStatePlacement& to);
  // Drops the ladder's first rungs while their model state alone is above the budget's share.
  void start_within_budget();
  // The model state `p` keeps on the device through a step; on a CPU device also the host memory
  // of each NVMe store (its staging buffers and chunk slots), which is the device's memory there.
  uint64_t device_bytes(const memory::planner::ModelStatePlacement& p) const;

  const OptimizerConfig& optim_;
  const TensorCacheConfig& cache_;
  Device device_;
  const nn::Module& model_;
  bool data_parallel_ = false;
  uint64_t budget_ = 0;  // --memory-budget in bytes (0: none)
  memory::planner::ModelState state_;
  int64_t largest_param_elements_ = 0;
  std::vector<memory::planner::ModelStatePlacement> ladder_;  // from the current placement outwards
  memory::planner::ModelStatePlacement placement_;
  optim::Optimizer* optimizer_ = nullptr;
  std::shared_ptr<memory::ParamPager> pager_;
};

// "optimizer state: nvme, 12.00 MiB in <file>", or "" when the state is on the device.
// The optimizer that holds the state: `optimizer` itself, or under ZeRO its local optimizer over
// this rank's shard (itself when the shard is empty).
optim::Optimizer& state_holder(optim::Optimizer& optimizer);
const optim::Optimizer& state_holder(const optim::Optimizer& optimizer);
std::string optimizer_state_line(const optim::Optimizer& optimizer);
// "optimizer state: 12.00 MiB read, 12.00 MiB written (1.00 MiB per step)" for state on NVMe, else "".
std::string optimizer_state_traffic(const optim::Optimizer& optimizer, int64_t steps);
// "weights host, gradients nvme: 12 blocks, 96 parameters, 81.00 MiB (host memory; <file>)".
std::string pager_line(const memory::ParamPager& pager);
// "weights 81.00 MiB in, 81.00 MiB out, gradients 0 B in, 81.00 MiB out per step; waited 0.12 s".
std::string pager_traffic(const memory::ParamPager& pager, int64_t steps);

}  // namespace strata::examples
