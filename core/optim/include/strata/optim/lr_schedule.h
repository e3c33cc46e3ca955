// Learning-rate schedules: constant, warmup + linear decay, warmup + cosine decay.
//
// A schedule maps the 0-based index of the optimizer step about to run to a learning rate
// for its `peak_lr`. apply() sets each parameter group's lr to the group's initial_lr scaled
// by lr_at(step) / peak_lr, so groups with different base lrs keep their ratio (as
// torch.optim.lr_scheduler.LambdaLR does with a factor). Per step:
//   schedule.apply(optimizer, step); optimizer.step();
#pragma once

#include <cstdint>

namespace strata::optim {

class Optimizer;

class LRSchedule {
 public:
  virtual ~LRSchedule() = default;
  virtual double lr_at(int64_t step) const = 0;
  double peak_lr() const { return peak_lr_; }
  // lr_at(step) / peak_lr (1 where peak_lr is 0).
  double factor_at(int64_t step) const;
  void apply(Optimizer& optimizer, int64_t step) const;

 protected:
  explicit LRSchedule(double peak_lr) : peak_lr_(peak_lr) {}
  double peak_lr_;
};

class ConstantSchedule final : public LRSchedule {
 public:
  explicit ConstantSchedule(double lr) : LRSchedule(lr) {}
  double lr_at(int64_t) const override { return peak_lr_; }
};

// Shared shape of the two decaying schedules (llm.c's get_learning_rate):
//   step < warmup:          peak * (step + 1) / warmup
//   warmup <= step < total: min_lr + (peak - min_lr) * decay(r), r = (step - warmup) / (total - warmup)
//   step >= total:          min_lr
class WarmupDecaySchedule : public LRSchedule {
 public:
  int64_t warmup_steps() const { return warmup_steps_; }
  int64_t total_steps() const { return total_steps_; }
  double min_lr() const { return min_lr_; }
  double lr_at(int64_t step) const override;

 protected:
  // Throws ValueError unless 0 <= warmup_steps <= total_steps and 0 <= min_lr <= peak_lr.
  WarmupDecaySchedule(double peak_lr, int64_t warmup_steps, int64_t total_steps, double min_lr,
                      const char* name);
  // 1 at r = 0 falling to 0 at r = 1.
  virtual double decay(double r) const = 0;
  int64_t warmup_steps_;
  int64_t total_steps_;
  double min_lr_;
};

// decay(r) = 1 - r.
class WarmupLinearSchedule final : public WarmupDecaySchedule {
 public:
  WarmupLinearSchedule(double peak_lr, int64_t warmup_steps, int64_t total_steps, double min_lr = 0.0)
      : WarmupDecaySchedule(peak_lr, warmup_steps, total_steps, min_lr, "WarmupLinearSchedule") {}

 protected:
  double decay(double r) const override { return 1.0 - r; }
};

// decay(r) = (1 + cos(pi r)) / 2.
class WarmupCosineSchedule final : public WarmupDecaySchedule {
 public:
  WarmupCosineSchedule(double peak_lr, int64_t warmup_steps, int64_t total_steps, double min_lr = 0.0)
      : WarmupDecaySchedule(peak_lr, warmup_steps, total_steps, min_lr, "WarmupCosineSchedule") {}

 protected:
  double decay(double r) const override;
};

}  // namespace strata::optim
