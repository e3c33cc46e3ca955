// What every trainer does before its loop: its device and ranks, and its model placed with AdamW.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "examples/common/data_parallel.h"
#include "examples/common/model_state.h"
#include "examples/common/trainer_device.h"
#include "examples/common/trainer_loop.h"
#include "examples/common/trainer_main.h"
#include "strata/nn/module.h"

namespace strata::examples {

class RunConfig;

// A trainer's device and ranks.
struct TrainerStart {
  TrainerDevice dev;
  dist::ProcessGroup* group = nullptr;  // under mpirun; null in one process
  bool lead = true;                     // rank 0 (or the one process): logs, evaluates, checkpoints
};

// The device of --device (resolve_trainer_device: under mpirun the rank's local index) and, under
// mpirun, the process group (join_ranks), which `trainer_run` keeps for the failure report.
TrainerStart start_trainer(const RunConfig& run, const DataParallelConfig& c, TrainerRun& trainer_run);

// <out-dir>/checkpoint, with <out-dir> made; a new run refuses to replace a checkpoint there
// (refuse_to_replace_checkpoint).
std::string checkpoint_dir(const RunConfig& run);

// A model on its device with AdamW. The model state placer and the ranks stay where they are made
// (the loop keeps pointers to them).
struct PlacedModel {
  std::unique_ptr<ModelStatePlacer> model_state;
  std::unique_ptr<DataParallel> ranks;
  TrainerAdamW opt;
  std::vector<Tensor> parameters;  // the model's, which --grad-clip clips
};

// `model`, made on the CPU, placed for training: its model state where --weights, --gradients and
// --optimizer-state say (paged weights go straight from the CPU to their home: the device never
// holds them all), the rest moved to the device (the same weights on every device), under mpirun
// rank 0's weights everywhere and gradients averaged during backward, and AdamW with `eps` (--zero1:
// its state sharded across the ranks).
template <class Config>
PlacedModel place_with_adamw(const Config& c, const TrainerStart& start, const TrainerRun& trainer_run,
                             const std::shared_ptr<nn::Module>& model, double eps) {
  PlacedModel p;
  p.model_state = std::make_unique<ModelStatePlacer>(c, start.dev.device, *model, start.group != nullptr);
  model->to(start.dev.device);
  p.ranks = std::make_unique<DataParallel>(trainer_run.group, model, c.data_parallel());
  p.opt = make_trainer_adamw(model->parameters(), c.schedule(), c.optim(), eps, *p.ranks);
  p.model_state->place(*p.opt.opt);
  p.parameters = model->parameters();
  return p;
}

// The loop's parts (trainer_loop.h) for a model placed by place_with_adamw; `start` and `placed`
// outlive the loop.
template <class Config>
TrainLoopParts loop_parts(const Config& c, const TrainerStart& start, const PlacedModel& placed,
                          LrSchedule& schedule, const memory::CacheSettings& cache, TrainerRun& trainer_run,
                          int64_t first_step = 0) {
  TrainLoopParts parts =
      loop_parts(c, start.dev, *placed.opt.opt, schedule, placed.parameters, cache, trainer_run, first_step);
  parts.ranks = placed.ranks.get();
  parts.model_state = placed.model_state.get();
  return parts;
}

}  // namespace strata::examples
