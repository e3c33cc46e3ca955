// The flags of the trainers' shared settings (trainer_common.proto), each bound once to its field.
#pragma once

#include <string>

namespace strata::examples {

class ConfigFlags;
class DataParallelConfig;
class LrScheduleConfig;
class OptimizerConfig;
class PrecisionConfig;
class RunConfig;
class TensorCacheConfig;
class TextDataConfig;

// A trainer adds the groups its config message has fields for, passing the message inside the
// flags' config that each group writes into (e.g. flags.mutable_run()). Where a trainer means
// more by a flag than the wording here, it rewords the help: app.get_option("--lr")->description(...).

// -b,--batch-size, --max-steps, --max-seconds, --seed, --eval-every, --eval-batches, --ckpt-every,
// -o,--out-dir, --resume, --log-every, --grad-accum, --report.
void add_run_flags(ConfigFlags& f, RunConfig* run);
// --profile: the per-op profile of the steps after the first two.
void add_profile_flag(ConfigFlags& f, RunConfig* run);
// --lr, --min-lr, --warmup-steps, --lr-decay-steps.
void add_lr_schedule_flags(ConfigFlags& f, LrScheduleConfig* schedule);
// --weight-decay, --grad-clip.
void add_optimizer_flags(ConfigFlags& f, OptimizerConfig* optim);
// --beta1, --beta2: for the trainers whose only optimizer is AdamW.
void add_adamw_beta_flags(ConfigFlags& f, OptimizerConfig* optim);
// --train-data, --val-data, --text, -t,--seq-len, --shuffle.
void add_text_data_flags(ConfigFlags& f, TextDataConfig* data);
// --bf16 (or --autocast).
void add_bf16_flag(ConfigFlags& f, PrecisionConfig* precision);
// --tf32.
void add_tf32_flag(ConfigFlags& f, PrecisionConfig* precision);
// --zero-stage (--zero1), --bucket-mb and --collective-timeout: data parallel under mpirun
// (data_parallel.h).
void add_data_parallel_flags(ConfigFlags& f, DataParallelConfig* data_parallel);
// --cache-policy, --memory-budget, --spill-dir, --spill-arena, --host-pool, --cache-min,
// --save-plan. `unit` names what the budget's planning step recomputes ("block", "layer");
// `policy_note` ends --cache-policy's help (e.g. the model's scopes).
void add_tensor_cache_flags(ConfigFlags& f, TensorCacheConfig* cache, const std::string& unit = "block",
                            const std::string& policy_note = "");

// The groups every trainer's config has: add_run_flags, add_lr_schedule_flags,
// add_optimizer_flags and add_data_parallel_flags, in that order.
template <class TrainerConfig>
void add_training_flags(ConfigFlags& f, TrainerConfig* flags) {
  add_run_flags(f, flags->mutable_run());
  add_lr_schedule_flags(f, flags->mutable_schedule());
  add_optimizer_flags(f, flags->mutable_optim());
  add_data_parallel_flags(f, flags->mutable_data_parallel());
}

}  // namespace strata::examples
