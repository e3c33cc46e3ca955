// The trainers' checkpoints: what they save and how --resume puts it back.
#pragma once

#include <string>

#include "strata/io/checkpoint/checkpoint.h"
#include "strata/nn/module.h"
#include "strata/optim/optimizer.h"

namespace strata::examples {

// What a trainer's checkpoints say about the run beside its state, and what --resume checks: the
// run's description (the trainers' describe(), "model <preset> (<model config>), ...") and the
// data it trains on.
struct RunRecord {
  std::string config;
  io::DataIdentity data;          // not recorded: nothing to check (e.g. weights loaded to sample)
  bool allow_other_data = false;  // --allow-other-data
};

// The state to save at `step`: the run's record, the global RNG's state, `data` (the loader's
// cursor), the model's weights and `optimizer_state`.
io::CheckpointState checkpoint_state(const RunRecord& run, int64_t step, const io::DataCursor& data,
                                     const nn::Module& model, nn::StateDict optimizer_state);
// The same with `optimizer`'s state; state it keeps in a spill file is streamed into the
// checkpoint, never gathered in memory.
io::CheckpointState checkpoint_state(const RunRecord& run, int64_t step, const io::DataCursor& data,
                                     const nn::Module& model, const optim::Optimizer& optimizer);

// Refuses to start a new run (neither `resume` nor `overwrite`) where `dir` holds a checkpoint,
// which the run's first save would replace: a ValueError naming it and its step.
void refuse_to_replace_checkpoint(const std::string& dir, bool resume, bool overwrite);

// Loads the checkpoint in `dir` into `model` and the global RNG, and returns it for the rest
// (optimizer state, step, data cursor, metadata). When the checkpoint's description names
// another model configuration than `run`'s (a different --n-head has the same shapes, so the
// weights load), a warning says both. When it was trained on data of another digest than
// `run.data`, a ValueError names both (a warning with `run.allow_other_data`); a checkpoint from
// before data identities were recorded resumes with a warning that says it cannot be checked.
io::CheckpointState restore_checkpoint(const std::string& dir, nn::Module& model, const RunRecord& run);

}  // namespace strata::examples
