#include "examples/common/trainer_settings.h"

#include <google/protobuf/text_format.h>

#include <cmath>
#include <filesystem>
#include <sstream>
#include <tuple>

#include "examples/common/trainer_common.pb.h"
#include "strata/core/error.h"
#include "strata/core/output_path.h"

namespace strata::examples {

void merge_over_defaults(const std::string& defaults, const google::protobuf::Message& set,
                         google::protobuf::Message* settings) {
  // What every trainer's defaults share; a trainer's own text may set these again.
  constexpr const char* kShared = R"pb(
    run { grad_accum: 1 }
    data_parallel { bucket_mb: 25 collective_timeout: 300 }
  )pb";
  STRATA_CHECK(google::protobuf::TextFormat::ParseFromString(kShared, settings) &&
                   google::protobuf::TextFormat::MergeFromString(defaults, settings),
               ValueError, "the defaults are not a ", "valid ", settings->GetDescriptor()->name(),
               " in protobuf text format");
  settings->MergeFrom(set);
}

void resolve_run_length(const RunConfig& set, RunConfig* run) {
  run->set_max_steps(set.has_max_steps() ? set.max_steps() : kUnlimitedSteps);
  run->set_max_seconds(set.has_max_seconds() ? set.max_seconds() : set.has_max_steps() ? 0.0 : 300.0);
}

// Only the fields set are checked: a default that depends on other settings (train_resnet's
// learning rate by optimizer) is filled in by the trainer afterwards.
void check_shared_settings(const RunConfig& run, const LrScheduleConfig& schedule,
                           const OptimizerConfig& optim) {
  check_output_folder(run.out_dir(), "--out-dir");
  auto at_least = [](bool set, const char* flag, double value, double low) {
    STRATA_CHECK(!set || value >= low, ValueError, flag, " ", value, " must be at least ", low);
  };
  at_least(run.has_max_steps(), "--max-steps", double(run.max_steps()), 1);
  at_least(run.has_max_seconds(), "--max-seconds", run.max_seconds(), 0);
  at_least(run.has_batch_size(), "--batch-size", double(run.batch_size()), 1);
  at_least(run.has_eval_every(), "--eval-every", double(run.eval_every()), 0);
  at_least(run.has_eval_batches(), "--eval-batches", double(run.eval_batches()), 0);
  at_least(run.has_ckpt_every(), "--ckpt-every", double(run.ckpt_every()), 0);
  at_least(run.has_log_every(), "--log-every", double(run.log_every()), 1);
  at_least(run.has_grad_accum(), "--grad-accum", double(run.grad_accum()), 1);
  STRATA_CHECK(!schedule.has_lr() || (schedule.lr() > 0 && std::isfinite(schedule.lr())), ValueError, "--lr ",
               schedule.lr(), " must be positive");
  at_least(schedule.has_min_lr(), "--min-lr", schedule.min_lr(), 0);
  at_least(schedule.has_warmup_steps(), "--warmup-steps", double(schedule.warmup_steps()), 0);
  at_least(schedule.has_lr_decay_steps(), "--lr-decay-steps", double(schedule.lr_decay_steps()), 0);
  at_least(optim.has_weight_decay(), "--weight-decay", optim.weight_decay(), 0);
  at_least(optim.has_grad_clip(), "--grad-clip", optim.grad_clip(), 0);
  for (const auto& [set, flag, beta] :
       {std::tuple<bool, const char*, double>{optim.has_beta1(), "--beta1", optim.beta1()},
        {optim.has_beta2(), "--beta2", optim.beta2()}})
    STRATA_CHECK(!set || (beta >= 0 && beta < 1), ValueError, flag, " ", beta, " must be in [0, 1)");
}

void check_data_parallel(const DataParallelConfig& c) {
  for (const auto& [flag, value] : {std::pair<const char*, double>{"--bucket-mb", c.bucket_mb()},
                                    {"--collective-timeout", c.collective_timeout()}})
    STRATA_CHECK(value > 0 && std::isfinite(value), ValueError, flag, " ", value, " must be positive");
}

void check_export_paths(const std::string& init_from, const std::string& export_hf,
                        const std::string& export_llmc) {
  if (!export_llmc.empty()) check_output_file(export_llmc, "--export-llmc");
  if (export_hf.empty()) return;
  check_output_folder(export_hf, "--export-hf");
  if (init_from.empty()) return;
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path source =
      fs::is_directory(init_from, ec) ? fs::path(init_from) : fs::path(init_from).parent_path();
  const bool same = fs::exists(export_hf, ec) && fs::equivalent(source.empty() ? "." : source, export_hf, ec);
  STRATA_CHECK(!same, ValueError, "--export-hf '", export_hf, "' is the folder --init-from '", init_from,
               "' loaded its weights from: the export would replace them; export to another folder");
}

bool time_bounded(const RunConfig& run) {
  return run.max_seconds() > 0 && run.max_steps() >= kUnlimitedSteps;
}

std::string describe_schedule(const LrScheduleConfig& schedule, const OptimizerConfig& optim) {
  std::ostringstream os;
  os << "lr " << schedule.lr() << " -> " << schedule.min_lr() << " warmup " << schedule.warmup_steps()
     << ", wd " << optim.weight_decay();
  return os.str();
}

}  // namespace strata::examples
