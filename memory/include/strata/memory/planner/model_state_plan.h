// Model state in the plan of a whole step: where a model's weights, gradients and optimizer state
// live (device, host memory, NVMe), what each placement leaves on the device and moves per step, and
// the plan that holds one budget for model state and activations together.
//
//   ModelState state = model_state_of(model, 2.0);      // AdamW: two f32 moments per weight
//   WholeStepPlan p = plan_whole_step(trace, state, hw, budget);
//   p.chosen().placement.describe();   // "weights device, gradients host, optimizer state nvme"
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "strata/memory/planner/hardware.h"
#include "strata/memory/planner/planner.h"
#include "strata/memory/planner/trace.h"
#include "strata/nn/module.h"
#include "strata/optim/state_store.h"

namespace strata::memory::planner {

// A model's state as the planner counts it. Gradients are as large as the weights; the optimizer's
// state is a multiple of them (AdamW: 2, SGD with momentum: 1, plain SGD: 0).
struct ModelState {
  std::vector<uint64_t> block_weight_bytes;  // per planner block, forward order
  uint64_t outside_weight_bytes = 0;         // parameters outside every block: always on the device
  double optimizer_state_per_weight_byte = 2;

  uint64_t block_bytes() const;    // the blocks' weights, summed
  uint64_t largest_block() const;  // the largest block's weights
  uint64_t weight_bytes() const;   // every weight
  uint64_t optimizer_bytes() const;
};

// The weights of `model`'s planner blocks (a parameter counts in its innermost block) and those
// outside every block.
ModelState model_state_of(const nn::Module& model, double optimizer_state_per_weight_byte);

struct ModelStatePlacement {
  optim::StatePlacement weights = optim::StatePlacement::Device;
  optim::StatePlacement gradients = optim::StatePlacement::Device;
  optim::StatePlacement optimizer_state = optim::StatePlacement::Device;
  // "weights device, gradients host, optimizer state nvme"
  std::string describe() const;
  bool operator==(const ModelStatePlacement&) const = default;
};

// What one placement costs, first-order. Paged weights and gradients are on the device for the
// running block and the blocks loading ahead; weights load for forward and again for backward and
// go home after the update, gradients go home in backward and come back for the update (gradient
// clipping's extra pass over them is not counted). Optimizer state away from the device is updated
// on the host, reading and writing every weight, gradient and moment there; on NVMe its moments are
// read and written once a step. Transfers in forward and backward hide behind their compute; the
// update's do not (clipping makes it wait for backward's end).
struct ModelStateCost {
  uint64_t device_bytes = 0;  // on the device through the step
  uint64_t host_bytes = 0;    // held in host memory
  uint64_t nvme_bytes = 0;    // held on NVMe
  uint64_t link_bytes = 0;    // between the device and host memory per step, both ways
  uint64_t nvme_read_bytes = 0, nvme_write_bytes = 0;  // per step
  double transfer_seconds = 0;  // forward's and backward's transfers on their busiest channel
  double update_seconds = 0;    // the optimizer's update and the transfers it waits for
};

// The model state `placement` keeps on the device through a step (ModelStateCost::device_bytes).
uint64_t model_state_device_bytes(const ModelState& state, const ModelStatePlacement& placement,
                                  size_t prefetch_blocks);

ModelStateCost model_state_cost(const ModelState& state, const ModelStatePlacement& placement,
                                const HardwareProfile& hw, size_t prefetch_blocks);

struct WholeStepOptions {
  // Kinds the user placed; unset ones are the planner's to choose.
  std::optional<optim::StatePlacement> weights, gradients, optimizer_state;
  // The most model state may hold in host memory (0: the profile's host memory).
  uint64_t host_memory_bytes = 0;
  bool allow_host = true, allow_nvme = true;
  size_t prefetch_blocks = 1;  // blocks whose weights load ahead of the one running
};

// The tiers model state may move to.
struct ModelStateTiers {
  bool host = false;         // host memory, and it is not the device's own (a GPU or sim device)
  bool nvme = false;         // a drive (a spill directory)
  bool host_update = false;  // the optimizer can update on the host (its state may leave the device)
};

// The placements a plan tries, from the pinned kinds' placement with everything else on the device
// outwards (see WholeStepPlan::candidates): each later one holds less on the device (an optimizer
// without per-element state, plain SGD, has no rung of its own). Throws
// ValueError when a pinned kind is on a tier `tiers` lacks.
std::vector<ModelStatePlacement> placement_ladder(const ModelState& state, const WholeStepOptions& options,
                                                  const ModelStateTiers& tiers);

struct WholeStepCandidate {
  ModelStatePlacement placement;
  ModelStateCost state;
  PlannerResult activations;  // planned with the budget less the model state on the device
  bool fits = false;
  double step_seconds = 0;        // the activations' simulated step + exposed transfers + the update
  uint64_t lowest_step_peak = 0;  // the lowest step peak of the activation policies tried at this budget
};

struct WholeStepPlan {
  // The placements tried, from everything on the device outwards: optimizer state leaves first
  // (touched once a step), then gradients (once each way), then weights (twice in, once out), each
  // to host memory while the cap has room (not on a CPU device, where host memory is the device's),
  // else to NVMe.
  std::vector<WholeStepCandidate> candidates;
  size_t chosen_index = 0;  // the fastest that fits; none fits: the last, which holds the least
  bool fits = false;
  // The smallest budget the last candidate's plan holds, found by bisection to within 0.01%.
  uint64_t smallest_feasible_budget = 0;
  std::string explanation;  // one line

  const WholeStepCandidate& chosen() const { return candidates[chosen_index]; }
};

// The budget bounds the step peak: model state on the device, saved activations and workspace.
// Throws ValueError when a kind is placed on a tier the options or the profile lack.
WholeStepPlan plan_whole_step(const StepTrace& trace, const ModelState& state, const HardwareProfile& hw,
                              uint64_t budget, const PlannerOptions& options = {},
                              const WholeStepOptions& whole = {});

}  // namespace strata::memory::planner
