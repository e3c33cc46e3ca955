#include "examples/common/lr_schedule.h"

#include <algorithm>

#include "examples/common/trainer_common.pb.h"
#include "examples/common/trainer_settings.h"
#include "strata/core/error.h"

namespace strata::examples {

LrScheduleOptions lr_schedule_options(const LrScheduleConfig& schedule, const RunConfig& run) {
  // The flags' names here: the schedule's own check would name its class and fields.
  STRATA_CHECK(schedule.lr() > 0, ValueError, "--lr ", schedule.lr(), " must be positive");
  STRATA_CHECK(schedule.min_lr() <= schedule.lr(), ValueError, "--min-lr ", schedule.min_lr(),
               " is above --lr ", schedule.lr(), ": the rate decays from --lr down to --min-lr");
  return {.lr = schedule.lr(),
          .min_lr = schedule.min_lr(),
          .warmup_cap = schedule.warmup_steps(),
          .lr_decay_steps = schedule.lr_decay_steps(),
          .max_steps = run.max_steps(),
          .warmup_steps = schedule.warmup_steps(),
          .time_bounded = time_bounded(run)};
}

LrSchedule::LrSchedule(const LrScheduleOptions& o) : o_(o), estimate_(o.lr_decay_steps <= 0 && o.time_bounded) {
  set_length(o.lr_decay_steps > 0 ? o.lr_decay_steps : (estimate_ ? 10 * o.warmup_steps : o.max_steps));
}

void LrSchedule::set_length(int64_t total) {
  total = std::max<int64_t>(total, 2);
  sched_ = std::make_unique<optim::WarmupCosineSchedule>(o_.lr, std::clamp<int64_t>(total / 10, 1, o_.warmup_cap),
                                                         total, o_.min_lr);
}

std::optional<double> LrSchedule::time_step(int64_t steps_run, double seconds) {
  if (!estimate_ || steps_run <= 1 || steps_run > o_.timed_steps + 1) return std::nullopt;
  timed_seconds_ += seconds;
  if (steps_run < o_.timed_steps + 1) return std::nullopt;
  return timed_seconds_ / double(o_.timed_steps);
}

}  // namespace strata::examples
