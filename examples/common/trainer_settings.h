// How a trainer's config message becomes its settings: defaults, the run-length rules, the shared describe()
// part.
#pragma once

#include <cstdint>
#include <string>

namespace google::protobuf {
class Message;
}  // namespace google::protobuf

namespace strata::examples {

class DataParallelConfig;
class LrScheduleConfig;
class OptimizerConfig;
class RunConfig;

// A trainer's settings are its config message with every field it reads set: its defaults
// (protobuf text, in the config file's format), then what the --config file and the flags set
// (ConfigFlags::parse). Defaults that depend on other settings (a sequence length capped by the
// model's, a learning rate by optimizer) the trainer fills in afterwards from `set`.

// `settings` = the shared defaults (run.grad_accum, data_parallel), `defaults` (protobuf text of `set`'s
// type) over them, and `set` merged over both.
void merge_over_defaults(const std::string& defaults, const google::protobuf::Message& set,
                         google::protobuf::Message* settings);

// The step count that means "no step limit": the default of max_steps.
inline constexpr int64_t kUnlimitedSteps = 1000000;

// Every trainer's run length: with neither max_steps nor max_seconds set, 300 seconds;
// max_steps alone lifts the time limit. `set` is what the file and flags set.
void resolve_run_length(const RunConfig& set, RunConfig* run);

// Every shared number in its range (a step count of -1 ran nothing and wrote a checkpoint): a
// ValueError naming the flag and the value otherwise.
void check_shared_settings(const RunConfig& run, const LrScheduleConfig& schedule,
                           const OptimizerConfig& optim);

// --bucket-mb and --collective-timeout positive: a ValueError naming the flag otherwise.
void check_data_parallel(const DataParallelConfig& c);

// The defaults every trainer shares with the trainer's own `defaults` over them: what --help shows.
template <class Config>
Config defaults_of(const std::string& defaults) {
  Config d;
  merge_over_defaults(defaults, Config(), &d);
  return d;
}

// A trainer's settings: the defaults every trainer shares, its own `defaults` over them and `set`
// merged over both, the run length resolved, the shared numbers checked.
template <class Config>
Config settings_from(const std::string& defaults, const Config& set) {
  Config settings;
  merge_over_defaults(defaults, set, &settings);
  resolve_run_length(set.run(), settings.mutable_run());
  check_shared_settings(settings.run(), settings.schedule(), settings.optim());
  check_data_parallel(settings.data_parallel());
  return settings;
}

// Where a run exports its weights, checked before it trains: --export-llmc (a file, empty: none) and
// --export-hf (a folder, empty: none) must be writable paths of their kind (strata/core/output_path.h),
// and --export-hf must not be where --init-from (a file or folder, empty: none) read the weights, which
// the export would replace.
void check_export_paths(const std::string& init_from, const std::string& export_hf,
                        const std::string& export_llmc);

// A run bounded by time only: its learning-rate schedule's length is estimated from its step time.
bool time_bounded(const RunConfig& run);

// The part of a trainer's describe() line every trainer shares: "lr 0.002 -> 0.0002 warmup 50, wd 0.1".
std::string describe_schedule(const LrScheduleConfig& schedule, const OptimizerConfig& optim);

}  // namespace strata::examples
