// The trainers' checkpoints: what they save and how --resume puts it back.
#pragma once

#include <string>

#include "strata/io/checkpoint/checkpoint.h"
#include "strata/nn/module.h"
#include "strata/optim/optimizer.h"

namespace strata::examples {

// The state to save at `step`: the run's description (`config`), the global RNG's state, `data`
// (the loader's cursor), the model's weights and `optimizer_state`.
io::CheckpointState checkpoint_state(const std::string& config, int64_t step, const io::DataCursor& data,
                                     const nn::Module& model, nn::StateDict optimizer_state);
// The same with `optimizer`'s state; state it keeps in a spill file is streamed into the
// checkpoint, never gathered in memory.
io::CheckpointState checkpoint_state(const std::string& config, int64_t step, const io::DataCursor& data,
                                     const nn::Module& model, const optim::Optimizer& optimizer);

// Refuses to start a new run (neither `resume` nor `overwrite`) where `dir` holds a checkpoint,
// which the run's first save would replace: a ValueError naming it and its step.
void refuse_to_replace_checkpoint(const std::string& dir, bool resume, bool overwrite);

// Loads the checkpoint in `dir` into `model` and the global RNG, and returns it for the rest
// (optimizer state, step, data cursor, metadata). `config` is this run's description (the
// trainers' describe(), "model <preset> (<model config>), ..."): when the checkpoint's names
// another model configuration (a different --n-head has the same shapes, so the weights load),
// a warning says both.
io::CheckpointState restore_checkpoint(const std::string& dir, nn::Module& model, const std::string& config);

}  // namespace strata::examples
