// LrSchedule: the trainers' warmup + cosine learning-rate schedule, and its options from their settings.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "strata/optim/lr_schedule.h"

namespace strata::examples {

class LrScheduleConfig;
class RunConfig;

// The schedule's length is lr_decay_steps, else max_steps; a time-bounded run (no --max-steps)
// times its first steps and then sets the length to the step count its time allows (the
// schedule is rebuilt once).
struct LrScheduleOptions {
  double lr = 0, min_lr = 0;
  int64_t warmup_cap = 0;   // warmup is total / 10, at least 1 and at most this
  int64_t lr_decay_steps = 0, max_steps = 0, warmup_steps = 0;  // warmup_steps: the provisional length is 10x it
  bool time_bounded = false;
  int64_t timed_steps = 6;  // steps timed before the estimate (after the first, which is left out)
};

// The options of a trainer's `schedule` and `run` settings, warmup capped at warmup_steps.
LrScheduleOptions lr_schedule_options(const LrScheduleConfig& schedule, const RunConfig& run);

class LrSchedule {
 public:
  explicit LrSchedule(const LrScheduleOptions& o);
  void apply(optim::Optimizer& opt, int64_t step) const { sched_->apply(opt, step); }
  double lr_at(int64_t step) const { return sched_->lr_at(step); }
  // After each step (`steps_run` of this run so far, this one `seconds` long): when the length is
  // to be estimated and the timed steps are done, the mean seconds per step; then the caller
  // decides the length and calls set_length.
  std::optional<double> time_step(int64_t steps_run, double seconds);
  void set_length(int64_t total);

 private:
  LrScheduleOptions o_;
  bool estimate_;
  double timed_seconds_ = 0;
  std::unique_ptr<optim::WarmupCosineSchedule> sched_;
};

}  // namespace strata::examples
