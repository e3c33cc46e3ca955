// Optimizer base behaviour: parameter groups, validation, zero_grad, state accounting and the
// state dict used by checkpoints. (Update math is checked against PyTorch in
// optim_golden_test.cpp.)
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "strata/core/allocator.h"
#include "strata/ops.h"
#include "strata/optim/adamw.h"
#include "strata/optim/sgd.h"
#include "support/error_of.h"

using namespace strata;

namespace {

std::vector<Tensor> make_params(uint64_t seed, DType dt = DType::f64) {
  manual_seed(seed);
  std::vector<Tensor> ps = {ops::randn({7, 5}, dt), ops::randn({5}, dt), ops::randn({3, 4, 2}, dt)};
  for (Tensor& p : ps) p.set_requires_grad(true);
  return ps;
}

std::vector<Tensor> clones(const std::vector<Tensor>& ps) {
  std::vector<Tensor> out;
  for (const Tensor& p : ps) {
    out.push_back(p.detach().clone());
    out.back().set_requires_grad(true);
  }
  return out;
}

void set_grads(std::vector<Tensor>& ps, uint64_t seed) {
  manual_seed(seed);
  for (Tensor& p : ps) p.set_grad(ops::randn(p.shape(), p.dtype()));
}

using strata::testing::error_of;

TEST(Optimizer, ZeroGradDropsOrZeroFillsGradients) {
  auto ps = make_params(1);
  optim::SGD opt(ps, optim::SGDOptions(0.1));
  set_grads(ps, 2);
  opt.zero_grad(/*set_to_none=*/false);
  for (const Tensor& p : ps) {
    ASSERT_TRUE(p.grad().defined());
    for (double v : p.grad().to_double_vector()) EXPECT_EQ(v, 0.0);
  }
  opt.zero_grad();
  for (const Tensor& p : ps) EXPECT_FALSE(p.grad().defined());
}

TEST(Optimizer, ParametersWithoutGradientsAreSkipped) {
  auto ps = make_params(1);
  std::vector<double> before = ps[1].to_double_vector();
  optim::AdamW opt(ps, optim::AdamWOptions(0.1));
  set_grads(ps, 2);
  ps[1].set_grad(Tensor());
  opt.step();
  EXPECT_EQ(ps[1].to_double_vector(), before);
  EXPECT_EQ(opt.state_of(ps[1]), nullptr);
  ASSERT_NE(opt.state_of(ps[0]), nullptr);
  EXPECT_EQ(opt.state_of(ps[0])->at("step").item(), 1.0);
}

TEST(Optimizer, GroupsWithoutOptionsTakeTheDefaultsAndRecordInitialLr) {
  auto ps = make_params(1);
  optim::AdamW opt({optim::ParamGroup({ps[0], ps[1]}),
                    optim::ParamGroup({ps[2]}, optim::AdamWOptions(0.5).weight_decay(0.0))},
                   optim::AdamWOptions(0.01).weight_decay(0.2));
  ASSERT_EQ(opt.param_groups().size(), 2u);
  EXPECT_EQ(opt.param_groups()[0].lr(), 0.01);
  EXPECT_EQ(opt.param_groups()[0].options().weight_decay(), 0.2);
  EXPECT_EQ(opt.param_groups()[1].lr(), 0.5);
  EXPECT_EQ(opt.param_groups()[1].options().weight_decay(), 0.0);
  opt.param_groups()[1].set_lr(0.25);
  EXPECT_EQ(opt.param_groups()[1].initial_lr(), 0.5);
  EXPECT_EQ(opt.num_parameters(), 3u);
}

TEST(Optimizer, RejectsDuplicateParametersBadOptionsAndForeignOptionTypes) {
  auto ps = make_params(1);
  EXPECT_NE(error_of([&] { optim::SGD({optim::ParamGroup({ps[0]}), optim::ParamGroup({ps[0]})}, optim::SGDOptions(0.1)); })
                .find("more than one parameter group"),
            std::string::npos);
  EXPECT_NE(error_of([&] { optim::SGD(ps, optim::SGDOptions(-1.0)); }).find("invalid learning rate"), std::string::npos);
  EXPECT_NE(error_of([&] { optim::SGD(ps, optim::SGDOptions(0.1).nesterov(true)); }).find("Nesterov"),
            std::string::npos);
  EXPECT_NE(error_of([&] { optim::AdamW(ps, optim::AdamWOptions(0.1).betas(1.0, 0.9)); }).find("beta"),
            std::string::npos);
  EXPECT_THROW(optim::SGD({optim::ParamGroup({ps[0]}, optim::AdamWOptions())}, optim::SGDOptions(0.1)), TypeError);
  Tensor non_leaf = ps[0] * 2.0;
  EXPECT_THROW(optim::SGD({non_leaf}, optim::SGDOptions(0.1)), ValueError);
  EXPECT_THROW(optim::SGD(std::vector<Tensor>{}, optim::SGDOptions(0.1)), ValueError);
}

TEST(Optimizer, StateIsAllocatedAsOptimizerState) {
  auto ps = make_params(1, DType::f32);
  optim::AdamW opt(ps);
  set_grads(ps, 2);
  int64_t before = cpu_allocator().stats().snapshot().current_of(MemoryCategory::OptimizerState);
  opt.step();
  int64_t after = cpu_allocator().stats().snapshot().current_of(MemoryCategory::OptimizerState);
  int64_t moments = 0;
  for (const Tensor& p : ps) moments += 2 * int64_t(p.nbytes());
  // exp_avg and exp_avg_sq per parameter, plus a one-element f64 step each.
  EXPECT_GE(after - before, moments);
  EXPECT_LE(after - before, moments + int64_t(ps.size()) * 64);
  for (const Tensor& p : ps)
    EXPECT_EQ(opt.state_of(p)->at("exp_avg").storage()->category(), MemoryCategory::OptimizerState);
}

TEST(Optimizer, NonCpuParametersThrowNotImplemented) {
  Tensor p = Tensor::empty({3}, DType::f32, kMeta);
  p.set_requires_grad(true);
  p.set_grad(Tensor::empty({3}, DType::f32, kMeta));
  optim::SGD opt({p}, optim::SGDOptions(0.1));
  EXPECT_THROW(opt.step(), NotImplementedError);
}

TEST(OptimStateDict, NamesFollowPyTorchIndicesAndResumeBitForBit) {
  for (bool adam : {true, false}) {
    SCOPED_TRACE(adam ? "AdamW" : "SGD");
    auto a = make_params(1);
    auto make = [&](std::vector<Tensor> ps) -> std::unique_ptr<optim::Optimizer> {
      std::vector<optim::ParamGroup> groups = {optim::ParamGroup({ps[0], ps[2]}), optim::ParamGroup({ps[1]})};
      if (adam) return std::make_unique<optim::AdamW>(groups, optim::AdamWOptions(0.05));
      return std::make_unique<optim::SGD>(groups, optim::SGDOptions(0.05).momentum(0.9));
    };
    auto opt_a = make(a);
    for (int s = 0; s < 5; ++s) {
      set_grads(a, 100 + s);
      opt_a->step();
    }
    opt_a->param_groups()[1].set_lr(0.02);
    optim::TensorDict sd = opt_a->state_dict();
    // Index 1 is ps[2] (second of group 0), index 2 is ps[1].
    if (adam) {
      EXPECT_TRUE(sd.contains("state.0.step"));
      EXPECT_EQ(sd.at("state.1.exp_avg").shape(), (Shape{3, 4, 2}));
      EXPECT_EQ(sd.at("state.2.exp_avg_sq").shape(), (Shape{5}));
      EXPECT_EQ(sd.at("state.2.step").item(), 5.0);
    } else {
      EXPECT_EQ(sd.at("state.1.momentum_buffer").shape(), (Shape{3, 4, 2}));
    }
    EXPECT_EQ(sd.at("param_groups.1.lr").item(), 0.02);

    auto b = clones(a);
    auto opt_b = make(b);
    opt_b->load_state_dict(sd);
    EXPECT_EQ(opt_b->param_groups()[1].lr(), 0.02);
    for (int s = 5; s < 10; ++s) {
      set_grads(a, 100 + s);
      set_grads(b, 100 + s);
      opt_a->step();
      opt_b->step();
    }
    for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].to_double_vector(), b[i].to_double_vector());
  }
}

TEST(OptimStateDict, StateDictIsACopy) {
  auto ps = make_params(1);
  optim::AdamW opt(ps, optim::AdamWOptions(0.05));
  set_grads(ps, 2);
  opt.step();
  optim::TensorDict sd = opt.state_dict();
  std::vector<double> saved = sd.at("state.0.exp_avg").to_double_vector();
  set_grads(ps, 3);
  opt.step();
  EXPECT_EQ(sd.at("state.0.exp_avg").to_double_vector(), saved);
}

TEST(OptimStateDict, LoadNamesEveryBadKeyAndChangesNothing) {
  auto ps = make_params(1);
  optim::AdamW opt(ps, optim::AdamWOptions(0.05));
  set_grads(ps, 2);
  opt.step();
  optim::TensorDict good = opt.state_dict();

  optim::TensorDict bad = good;
  bad.insert_or_assign("state.0.exp_avg", ops::zeros({5, 7}, DType::f64));
  bad.insert("state.9.exp_avg", ops::zeros({5}, DType::f64));
  bad.insert("state.1.momentum_buffer", ops::zeros({5}, DType::f64));
  bad.insert("lr", ops::scalar_tensor(1.0));
  bad.erase("state.2.exp_avg_sq");
  std::string msg = error_of([&] { opt.load_state_dict(bad); });
  EXPECT_NE(msg.find("AdamW"), std::string::npos) << msg;
  EXPECT_NE(msg.find("size mismatch for \"state.0.exp_avg\""), std::string::npos) << msg;
  EXPECT_NE(msg.find("[5, 7]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("\"state.9.exp_avg\" refers to parameter 9"), std::string::npos) << msg;
  EXPECT_NE(msg.find("state.1.momentum_buffer"), std::string::npos) << msg;
  EXPECT_NE(msg.find("unexpected key \"lr\""), std::string::npos) << msg;
  EXPECT_NE(msg.find("incomplete state for parameter 2"), std::string::npos) << msg;
  // Nothing was replaced: the original state is still there.
  EXPECT_EQ(opt.state_of(ps[0])->at("exp_avg").to_double_vector(), good.at("state.0.exp_avg").to_double_vector());
}

TEST(OptimStateDict, LoadConvertsToTheParameterDtype) {
  auto p64 = make_params(1);
  optim::AdamW a(p64, optim::AdamWOptions(0.05));
  set_grads(p64, 2);
  a.step();
  auto p32 = make_params(1, DType::f32);
  optim::AdamW b(p32, optim::AdamWOptions(0.05));
  b.load_state_dict(a.state_dict());
  const Tensor& m = b.state_of(p32[0])->at("exp_avg");
  EXPECT_EQ(m.dtype(), DType::f32);
  EXPECT_EQ(m.storage()->category(), MemoryCategory::OptimizerState);
  set_grads(p32, 3);
  b.step();
  EXPECT_EQ(b.state_of(p32[0])->at("step").item(), 2.0);
}

}  // namespace
