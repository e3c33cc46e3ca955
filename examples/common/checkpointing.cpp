#include "examples/common/checkpointing.h"

#include <cstdio>
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

io::CheckpointState checkpoint_state(const std::string& config, int64_t step, const io::DataCursor& data,
                                     const nn::Module& model, const optim::Optimizer& optimizer) {
  TensorSources sources;
  io::CheckpointState st = checkpoint_state(config, step, data, model, optimizer.state_dict(sources));
  st.optimizer_sources = std::move(sources);
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

namespace {
// "model small (n_layer=4 ...)" from a describe() line: everything up to the first "), ".
std::string model_part(const std::string& config) {
  const size_t end = config.find("), ");
  return end == std::string::npos ? config : config.substr(0, end + 1);
}
}  // namespace

io::CheckpointState restore_checkpoint(const std::string& dir, nn::Module& model, const std::string& config) {
  io::CheckpointState st = io::load_checkpoint(dir);
  model.load_state_dict(st.model);  // weights that do not fit are refused here, naming the tensor
  if (!st.config.empty() && model_part(st.config) != model_part(config))
    std::fprintf(stderr,
                 "warning: resuming '%s', written by '%s', as '%s': the weights fit, but the model is "
                 "configured differently\n",
                 dir.c_str(), model_part(st.config).c_str(), model_part(config).c_str());
  current_generator().set_state(st.rng);
  return st;
}

}  // namespace strata::examples
