#include "examples/common/trainer_setup.h"

#include <filesystem>

#include "examples/common/checkpointing.h"
#include "examples/common/trainer_common.pb.h"

namespace strata::examples {

TrainerStart start_trainer(const RunConfig& run, const DataParallelConfig& c, TrainerRun& trainer_run) {
  const dist::LaunchEnv env = dist::launch_env();
  TrainerStart s{.dev = resolve_trainer_device(run, env)};
  trainer_run.group = join_ranks(c, env, s.dev.device);
  s.group = trainer_run.group.get();
  s.lead = !s.group || s.group->rank() == 0;
  return s;
}

std::string checkpoint_dir(const RunConfig& run) {
  std::filesystem::create_directories(run.out_dir());
  const std::string dir = run.out_dir() + "/checkpoint";
  refuse_to_replace_checkpoint(dir, run.resume(), run.overwrite());
  return dir;
}

}  // namespace strata::examples
