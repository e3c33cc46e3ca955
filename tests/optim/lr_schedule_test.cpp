// LR schedules: the documented formulas and how apply() scales each group.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "strata/ops.h"
#include "strata/optim/lr_schedule.h"
#include "strata/optim/sgd.h"

using namespace strata;

namespace {

TEST(OptimLRSchedule, ConstantIsConstant) {
  optim::ConstantSchedule s(0.3);
  EXPECT_EQ(s.lr_at(0), 0.3);
  EXPECT_EQ(s.lr_at(123456), 0.3);
}

TEST(OptimLRSchedule, WarmupLinearRampsThenDecaysToMinLr) {
  optim::WarmupLinearSchedule s(1.0, 4, 14, 0.1);
  EXPECT_DOUBLE_EQ(s.lr_at(0), 0.25);
  EXPECT_DOUBLE_EQ(s.lr_at(3), 1.0);
  EXPECT_DOUBLE_EQ(s.lr_at(4), 1.0);
  EXPECT_DOUBLE_EQ(s.lr_at(9), 0.1 + 0.9 * 0.5);
  EXPECT_DOUBLE_EQ(s.lr_at(14), 0.1);
  EXPECT_DOUBLE_EQ(s.lr_at(1000), 0.1);
}

TEST(OptimLRSchedule, WarmupCosineFollowsHalfCosineToMinLr) {
  optim::WarmupCosineSchedule s(2.0, 10, 110, 0.2);
  EXPECT_DOUBLE_EQ(s.lr_at(4), 2.0 * 5 / 10);
  EXPECT_DOUBLE_EQ(s.lr_at(10), 2.0);
  EXPECT_DOUBLE_EQ(s.lr_at(60), 0.2 + 1.8 * 0.5);
  EXPECT_DOUBLE_EQ(s.lr_at(35), 0.2 + 1.8 * 0.5 * (1 + std::cos(std::numbers::pi * 0.25)));
  EXPECT_DOUBLE_EQ(s.lr_at(110), 0.2);
  // No warmup: starts at the peak.
  EXPECT_DOUBLE_EQ(optim::WarmupCosineSchedule(1.0, 0, 10).lr_at(0), 1.0);
}

TEST(OptimLRSchedule, ApplyScalesEveryGroupsInitialLr) {
  Tensor a = ops::zeros({2}), b = ops::zeros({3});
  a.set_requires_grad(true);
  b.set_requires_grad(true);
  optim::SGD opt({optim::ParamGroup({a}, optim::SGDOptions(0.1)), optim::ParamGroup({b}, optim::SGDOptions(0.01))},
                 optim::SGDOptions(0.1));
  optim::WarmupLinearSchedule s(0.1, 2, 10);
  s.apply(opt, 0);
  EXPECT_DOUBLE_EQ(opt.param_groups()[0].lr(), 0.05);
  EXPECT_DOUBLE_EQ(opt.param_groups()[1].lr(), 0.005);
  s.apply(opt, 6);
  EXPECT_DOUBLE_EQ(opt.param_groups()[0].lr(), 0.05);
  EXPECT_DOUBLE_EQ(opt.param_groups()[1].lr(), 0.005);
  EXPECT_DOUBLE_EQ(opt.param_groups()[0].initial_lr(), 0.1);
}

TEST(OptimLRSchedule, RejectsInconsistentSettings) {
  EXPECT_THROW(optim::WarmupCosineSchedule(1.0, 20, 10), ValueError);
  EXPECT_THROW(optim::WarmupLinearSchedule(1.0, 0, 10, 2.0), ValueError);
  EXPECT_THROW(optim::WarmupLinearSchedule(1.0, 0, 10).lr_at(-1), ValueError);
}

}  // namespace
