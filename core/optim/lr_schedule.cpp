#include "strata/optim/lr_schedule.h"

#include <cmath>
#include <numbers>

#include "strata/core/error.h"
#include "strata/optim/optimizer.h"

namespace strata::optim {

double LRSchedule::factor_at(int64_t step) const { return peak_lr_ == 0.0 ? 1.0 : lr_at(step) / peak_lr_; }

void LRSchedule::apply(Optimizer& optimizer, int64_t step) const {
  const double factor = factor_at(step);
  for (ParamGroup& g : optimizer.param_groups()) g.set_lr(g.initial_lr() * factor);
}

WarmupDecaySchedule::WarmupDecaySchedule(double peak_lr, int64_t warmup_steps, int64_t total_steps,
                                         double min_lr, const char* name)
    : LRSchedule(peak_lr), warmup_steps_(warmup_steps), total_steps_(total_steps), min_lr_(min_lr) {
  STRATA_CHECK(warmup_steps >= 0 && warmup_steps <= total_steps, ValueError, name,
               ": need 0 <= warmup_steps <= total_steps, got warmup_steps=", warmup_steps,
               " total_steps=", total_steps);
  STRATA_CHECK(peak_lr >= 0.0 && min_lr >= 0.0 && min_lr <= peak_lr, ValueError, name,
               ": need 0 <= min_lr <= peak_lr, got min_lr=", min_lr, " peak_lr=", peak_lr);
}

double WarmupDecaySchedule::lr_at(int64_t step) const {
  STRATA_CHECK(step >= 0, ValueError, "lr_at: step must be non-negative, got ", step);
  if (step < warmup_steps_) return peak_lr_ * double(step + 1) / double(warmup_steps_);
  if (step >= total_steps_) return min_lr_;
  const double r = double(step - warmup_steps_) / double(total_steps_ - warmup_steps_);
  return min_lr_ + (peak_lr_ - min_lr_) * decay(r);
}

double WarmupCosineSchedule::decay(double r) const { return 0.5 * (1.0 + std::cos(std::numbers::pi * r)); }

}  // namespace strata::optim
