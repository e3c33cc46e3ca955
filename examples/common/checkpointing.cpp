#include "examples/common/checkpointing.h"

#include <cstdio>
#include <filesystem>

#include "strata/core/error.h"
#include "strata/core/generator.h"

namespace strata::examples {

io::CheckpointState checkpoint_state(const RunRecord& run, int64_t step, const io::DataCursor& data,
                                     const nn::Module& model, nn::StateDict optimizer_state) {
  io::CheckpointState st;
  st.config = run.config;
  st.step = step;
  st.rng = current_generator().state();
  st.data = data;
  st.data_identity = run.data;
  st.model = model.state_dict();
  st.optimizer = std::move(optimizer_state);
  return st;
}

io::CheckpointState checkpoint_state(const RunRecord& run, int64_t step, const io::DataCursor& data,
                                     const nn::Module& model, const optim::Optimizer& optimizer) {
  TensorSources sources;
  io::CheckpointState st = checkpoint_state(run, step, data, model, optimizer.state_dict(sources));
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

// Refuses (or with --allow-other-data, warns about) a checkpoint trained on other data than `run`'s.
void check_data_identity(const std::string& dir, const io::DataIdentity& saved, const RunRecord& run) {
  if (!run.data.recorded()) return;
  if (!saved.recorded()) {
    std::fprintf(stderr,
                 "warning: '%s' was written before checkpoints recorded their data: that it trained on %s "
                 "cannot be checked\n",
                 dir.c_str(), run.data.description.c_str());
    return;
  }
  if (saved.digest == run.data.digest) return;
  const std::string both =
      detail::concat("'", dir, "' was trained on ", saved.description, " (", saved.digest,
                     "); this run's data is ", run.data.description, " (", run.data.digest, ")");
  STRATA_CHECK(run.allow_other_data, ValueError, "--resume: ", both,
               ": pass --allow-other-data to continue on it, or --overwrite to start over");
  std::fprintf(stderr, "warning: resuming on other data (--allow-other-data): %s\n", both.c_str());
}
}  // namespace

io::CheckpointState restore_checkpoint(const std::string& dir, nn::Module& model, const RunRecord& run) {
  io::CheckpointState st = io::load_checkpoint(dir);
  check_data_identity(dir, st.data_identity, run);
  model.load_state_dict(st.model);  // weights that do not fit are refused here, naming the tensor
  const std::string& config = run.config;
  if (!st.config.empty() && model_part(st.config) != model_part(config))
    std::fprintf(stderr,
                 "warning: resuming '%s', written by '%s', as '%s': the weights fit, but the model is "
                 "configured differently\n",
                 dir.c_str(), model_part(st.config).c_str(), model_part(config).c_str());
  current_generator().set_state(st.rng);
  return st;
}

}  // namespace strata::examples
