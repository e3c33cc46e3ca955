#include "examples/common/checkpointing.h"

#include <filesystem>

#include "strata/core/error.h"
#include "strata/core/generator.h"

namespace strata::examples {

io::CheckpointState checkpoint_state(const std::string& config, int64_t step, const io::DataCursor& data,
                                     const nn::Module& model, nn::StateDict optimizer_state) {
  io::CheckpointState st;
  st.config = config;
  st.step = step;
  st.rng = current_generator().state();
  st.data = data;
  st.model = model.state_dict();
  st.optimizer = std::move(optimizer_state);
  return st;
}

void refuse_to_replace_checkpoint(const std::string& dir, bool resume, bool overwrite) {
  if (resume || overwrite || !std::filesystem::exists(std::filesystem::path(dir) / io::kCheckpointIndexFile))
    return;
  std::string step = "an unreadable step";
  try {
    step = "step " + std::to_string(io::read_checkpoint_index(dir).step);
  } catch (const Error&) {
  }
  throw ValueError(
      detail::concat("'", dir, "' holds a checkpoint (", step,
                     "): pass --resume to continue it, or --overwrite to start over and replace it"));
}

io::CheckpointState restore_checkpoint(const std::string& dir, nn::Module& model) {
  io::CheckpointState st = io::load_checkpoint(dir);
  model.load_state_dict(st.model);
  current_generator().set_state(st.rng);
  return st;
}

}  // namespace strata::examples
